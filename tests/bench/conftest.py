"""Fixtures for the bench tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_helpers import TASKS, write_jsonl


@pytest.fixture
def tasks_file(tmp_path: Path) -> str:
    """Three OpenAGI tasks, two with references."""
    return write_jsonl(tmp_path / "tasks.jsonl", TASKS)
