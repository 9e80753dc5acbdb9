"""Shared CLI pieces: consoles, the error funnel, atomic output files."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from rich.console import Console

from fllm_cli.errors import FllmError, UsageError
from fllm_cli.textio import read_text


def stdout_console() -> Console:
    """Return the console for results (plain when piped, width from the terminal)."""
    return Console(highlight=False, soft_wrap=False)


def stderr_console() -> Console:
    """Return the console for progress and errors."""
    return Console(stderr=True, highlight=False)


def report_error(error: FllmError, console: Console | None = None) -> int:
    """Print ``error: ...`` on one line to stderr and return the exit code."""
    console = console or stderr_console()
    console.print(
        f"[bold red]error:[/] {error.one_line()}", markup=True, highlight=False, soft_wrap=True
    )
    return error.exit_code


def write_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename (never half a file)."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.exists():
        raise UsageError(f"cannot write '{path}': folder '{directory}' does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise UsageError(f"cannot write '{path}': {exc.strerror}") from exc


def read_text_arg(path: str) -> str:
    """Read a file argument, ``-`` meaning standard input."""
    if path == "-":
        return sys.stdin.read()
    return read_text(path)
