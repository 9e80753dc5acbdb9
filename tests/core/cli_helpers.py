"""Run the ``fllm`` entry point in-process, the way a user runs it (error funnel included)."""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass

import pytest

from fllm_cli.cli.app import main


@dataclass
class Result:
    """Exit code and captured output of one command."""

    code: int
    out: str
    err: str


def run_cli(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    stdin: str | None = None,
) -> Result:
    """Call ``main(args)``; return the exit code, stdout and stderr."""
    capsys.readouterr()
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    with pytest.raises(SystemExit) as exc:
        main(args)
    captured = capsys.readouterr()
    code = exc.value.code
    result = Result(code if isinstance(code, int) else (0 if code is None else 1), *captured)
    assert "Traceback" not in result.out + result.err
    return result
