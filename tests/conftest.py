"""Shared fixtures: paths, a CLI runner with fixed width and no colour."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"

# A fresh cache home per run: no test may depend on replies cached by an earlier run.
os.environ["FLLM_HOME"] = tempfile.mkdtemp(prefix="fllm-test-home-")
os.environ["COLUMNS"] = "200"
os.environ["NO_COLOR"] = "1"
os.environ.pop("FLLM_MODEL", None)


@pytest.fixture
def openagi() -> str:
    """Path of the shipped OpenAGI domain."""
    return str(ROOT / "domains" / "openagi.yaml")


def load_tasks() -> list[dict]:
    """The 185 OpenAGI benchmark tasks with their interfaces."""
    lines = (DATA / "openagi_tasks.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]
