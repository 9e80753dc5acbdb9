"""Reading user-named files: every failure is one UsageError line, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from fllm_cli.errors import UsageError
from fllm_cli.textio import read_text


def test_names_the_os_cannot_open_are_usage_errors(tmp_path: Path) -> None:
    (tmp_path / "ok.txt").write_text("fine", encoding="utf-8")
    assert read_text(tmp_path / "ok.txt") == "fine"
    with pytest.raises(UsageError, match="NUL character"):
        read_text(f"{tmp_path}/ok\0.txt", "helpers file")
    with pytest.raises(UsageError, match="no such helpers file"):
        read_text(tmp_path / "missing.py", "helpers file")
    (tmp_path / "bin").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(UsageError, match="not UTF-8"):
        read_text(tmp_path / "bin")
