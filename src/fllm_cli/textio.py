"""Reading user-named files with one-line errors instead of tracebacks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fllm_cli.errors import UsageError

MAX_SHOWN = 120  # characters of a file name shown in a message


def shown(path: str | Path) -> str:
    """Return ``path`` for a one-line message: a name longer than MAX_SHOWN is cut in the middle."""
    text = str(path)
    if len(text) <= MAX_SHOWN:
        return text
    half = MAX_SHOWN // 2
    return f"{text[:half]}…{text[-half:]} ({len(text):,} characters)"


# Spec files (domains, agents, problems) are written by people: a bigger one is a mistake or
# an attack, and would take minutes to check. Data files (--data, corpora) may be larger.
MAX_SPEC_BYTES = 8 * 1024 * 1024
MAX_DATA_BYTES = 512 * 1024 * 1024


def too_big(path: str | Path, limit: int) -> str | None:
    """Return why ``path`` is over ``limit`` bytes (a one-line reason), else None."""
    try:
        size = Path(path).stat().st_size
    except OSError:
        return None  # reading it says what is wrong
    return None if size <= limit else size_reason(size, limit)


def size_reason(size: int, limit: int) -> str:
    """Say that a file of ``size`` bytes is over ``limit``."""
    mb = 1048576
    return f"the file is {size / mb:,.1f} MB; fllm reads such files up to {limit // mb} MB"


def read_text(path: str | Path, what: str = "file", limit: int = MAX_DATA_BYTES) -> str:
    """Return the UTF-8 text of ``path``; a missing, unreadable, binary or too big file is a
    UsageError."""
    if "\0" in str(path):  # a file name read from a file may hold one; the OS cannot open it
        raise UsageError(f"no such {what}: {shown(path)!r} (the name holds a NUL character)")
    reason = too_big(path, limit)
    if reason is not None:
        raise UsageError(f"'{shown(path)}': {reason}")
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"no such {what}: '{shown(path)}'") from None
    except IsADirectoryError:
        raise UsageError(f"'{shown(path)}' is a folder, not a {what}") from None
    except UnicodeDecodeError:
        raise UsageError(f"'{shown(path)}' is not UTF-8 text") from None
    except OSError as exc:
        raise UsageError(f"cannot read '{shown(path)}': {exc.strerror}") from None


MAX_JSON_DEPTH = 64


def json_depth(text: str) -> int:
    """Return the deepest nesting of brackets in JSON text, ignoring strings."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def load_json(text: str, where: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse untrusted JSON: nesting and number sizes bounded, errors as one located line."""
    if json_depth(text) > max_depth:
        raise UsageError(f"{where}: JSON nested deeper than {max_depth} levels")
    try:
        return json.loads(text.lstrip("\ufeff"))
    except json.JSONDecodeError as exc:
        raise UsageError(f"{where}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})") from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer too long to convert
        raise UsageError(f"{where}: unreadable JSON ({str(exc)[:100]})") from None
