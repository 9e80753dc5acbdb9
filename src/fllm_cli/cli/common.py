"""Shared CLI pieces: consoles, the error funnel, atomic output files."""

from __future__ import annotations

import errno
import io
import os
import secrets
import stat
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from fllm_cli.cli.safe import SafeConsole, safe
from fllm_cli.errors import FllmError, UsageError
from fllm_cli.resources import exists
from fllm_cli.textio import read_text, shown

# Off a terminal nothing is squeezed to 80 columns: tables and trees keep their natural width.
PIPE_WIDTH = 100_000


def stdout_console() -> Console:
    """Return the console for results: the terminal's width, or natural width when piped.

    Colour follows rich's rules: off when piped, ``NO_COLOR`` turns it off, ``FORCE_COLOR`` on.
    Control characters in printed text are shown as escapes (see ``cli/safe.py``).
    """
    console = SafeConsole(highlight=False, soft_wrap=False)
    if not console.is_terminal:
        console = SafeConsole(highlight=False, soft_wrap=False, width=PIPE_WIDTH)
    return console


def plain_text(renderable: Any) -> str:
    """Return a rich renderable as plain text at its natural width (for files)."""
    console = Console(
        file=io.StringIO(), width=PIPE_WIDTH, no_color=True, highlight=False, record=True
    )
    console.print(renderable)
    return "\n".join(line.rstrip() for line in console.export_text().splitlines()) + "\n"


def stderr_console() -> Console:
    """Return the console for progress and errors (control characters shown as escapes)."""
    return SafeConsole(stderr=True, highlight=False)


def report_error(error: FllmError, console: Console | None = None) -> int:
    """Print ``error: ...`` on one line to stderr and return the exit code."""
    console = console or stderr_console()
    console.print(
        f"[bold red]error:[/] {escape(safe(error.one_line()))}",
        markup=True,
        highlight=False,
        soft_wrap=True,
    )
    return error.exit_code


def report_usage(line: str, console: Console | None = None) -> None:
    """Print a command-line misuse as ``error: ...`` on one line to stderr."""
    console = console or stderr_console()
    console.print(
        f"[bold red]error:[/] {escape(safe(line))}", markup=True, highlight=False, soft_wrap=True
    )


def write_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename (never half a file).

    The file gets the permissions a plain ``open(path, "w")`` would give it: a new file is
    created with 0666 less the umask (0644 under the usual 022), and a file that is replaced
    keeps its permission bits. (``tempfile.mkstemp`` would make every output 0600: right for a
    scratch file in a shared /tmp, wrong for a report meant to be read or served.)
    """
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    if not exists(directory):
        raise UsageError(
            f"cannot write '{shown(path)}': folder '{shown(directory)}' does not exist"
        )
    tmp: Path | None = None
    try:
        fd, tmp = _create_beside(directory, target.name)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        try:
            kept = target.stat().st_mode
        except FileNotFoundError:
            pass
        else:
            if stat.S_ISREG(kept):
                os.chmod(tmp, stat.S_IMODE(kept) & 0o777)
        os.replace(tmp, target)
    except BaseException as exc:
        if tmp is not None:
            tmp.unlink(missing_ok=True)  # whatever went wrong, no stray temporary is left
        if isinstance(exc, OSError):
            raise UsageError(f"cannot write '{shown(path)}': {exc.strerror or exc}") from exc
        raise


def _create_beside(directory: Path, name: str) -> tuple[int, Path]:
    """Create a new, empty temporary file in ``directory`` for ``name``: (descriptor, path).

    Opened with mode 0666 so that the kernel applies the umask, exactly as for any new file.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = directory / f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(directory))


def read_json_arg(path: str) -> Any:
    """Read a JSON file named on the command line (``-`` is stdin); errors are one line."""
    from fllm_cli.textio import load_json

    return load_json(read_text_arg(path), "<stdin>" if path == "-" else path)


def read_text_arg(path: str) -> str:
    """Read a file argument, ``-`` meaning standard input."""
    if path == "-":
        return sys.stdin.read()
    return read_text(path)


def time_parts(seconds: float, backend: dict[str, Any]) -> str:
    """Return ", T s" split into model loading, inference and the rest when the back end
    reports them (both happen inside the timed run, so the parts add up to the total)."""
    text = f", {seconds:.2f} s"
    if backend.get("loaded") and "load_seconds" in backend:
        load, infer = backend["load_seconds"], backend.get("infer_seconds", 0.0)
        rest = max(0.0, seconds - load - infer)
        text += f" = model load {load:.2f} s + inference {infer:.2f} s + the rest {rest:.2f} s"
    return text
