"""Reading user-named files with one-line errors instead of tracebacks."""

from __future__ import annotations

from pathlib import Path

from fllm_cli.errors import UsageError


def read_text(path: str | Path, what: str = "file") -> str:
    """Return the UTF-8 text of ``path``; a missing, unreadable or binary file is a UsageError."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"no such {what}: '{path}'") from None
    except IsADirectoryError:
        raise UsageError(f"'{path}' is a folder, not a {what}") from None
    except UnicodeDecodeError:
        raise UsageError(f"'{path}' is not UTF-8 text") from None
    except OSError as exc:
        raise UsageError(f"cannot read '{path}': {exc.strerror}") from None
