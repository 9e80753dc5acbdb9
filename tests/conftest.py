"""Shared fixtures: paths, a CLI runner with fixed width and no colour."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"

# A fresh cache home per run: no test may depend on replies cached by an earlier run.
os.environ["FLLM_HOME"] = tempfile.mkdtemp(prefix="fllm-test-home-")
os.environ["COLUMNS"] = "200"
os.environ["NO_COLOR"] = "1"
os.environ.pop("FLLM_MODEL", None)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="Rewrite golden files from the current output instead of comparing with them.",
    )


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Callable[[Path, str], None]:
    """Compare text with a golden file exactly; a missing file fails unless --update-golden."""
    update = bool(request.config.getoption("--update-golden"))

    def check(path: Path, text: str) -> None:
        if update:
            path.write_text(text, encoding="utf-8")
            return
        assert path.exists(), f"missing golden file {path} (create it with --update-golden)"
        assert text == path.read_text(encoding="utf-8"), f"output differs from {path}"

    return check


@pytest.fixture
def openagi() -> str:
    """Path of the shipped OpenAGI domain."""
    return str(ROOT / "domains" / "openagi.yaml")


def run_fllm(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None, timeout: float = 180
) -> tuple[int, str, str]:
    """Run the real console entry point in a subprocess; return (code, stdout, stderr)."""
    proc = subprocess.run(
        [sys.executable, "-m", "fllm_cli", *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    return proc.returncode, proc.stdout, proc.stderr


def load_tasks() -> list[dict]:
    """The 185 OpenAGI benchmark tasks with their interfaces."""
    lines = (DATA / "openagi_tasks.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]
