"""Source locations and diagnostics, printed the way compilers print them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True, order=True)
class Location:
    """A 1-based position in a file."""

    path: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.line <= 0:
            return self.path
        return f"{self.path}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Diagnostic:
    """One problem found in a spec, with where it is."""

    severity: Severity
    message: str
    location: Location | None = None

    def header(self) -> str:
        """Return ``path:line:col: severity: message``."""
        where = f"{self.location}: " if self.location else ""
        return f"{where}{self.severity}: {self.message}"

    def excerpt(self, source: str | None = None) -> str:
        """Return the offending source line with a caret under the column, or ''."""
        loc = self.location
        if loc is None or loc.line <= 0:
            return ""
        if source is None:
            source = source_of(loc.path)
            if source is None:
                return ""
        lines = source.splitlines()
        if loc.line > len(lines):
            return ""
        text = lines[loc.line - 1].rstrip("\n")
        gutter = f"{loc.line:>4} | "
        column = max(loc.col - 1, 0)
        if len(text) > EXCERPT_WIDTH:  # a window around the column, never a 5 MB line
            start = max(0, min(column - EXCERPT_WIDTH // 2, len(text) - EXCERPT_WIDTH))
            shown = text[start : start + EXCERPT_WIDTH]
            head = "…" if start > 0 else ""
            tail = "…" if start + EXCERPT_WIDTH < len(text) else ""
            text, column = head + shown + tail, column - start + len(head)
        caret = " " * (len(gutter) + column) + "^"
        return f"{gutter}{text}\n{caret}"


EXCERPT_WIDTH = 120  # characters of a source line an excerpt shows


def source_of(path: str) -> str | None:
    """Return the text of the file a location names (undecodable bytes replaced), or None."""
    if not path:
        return None
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except (OSError, ValueError):
        return None


def article(word: str) -> str:
    """Return 'an' before a vowel sound (roughly), else 'a'."""
    return "an" if word[:1].lower() in "aeiou" else "a"


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """Return ' (did you mean 'x'?)' for the closest candidate, or ''."""
    import difflib

    best = difflib.get_close_matches(word, sorted(candidates), n=1, cutoff=0.6)
    return f" (did you mean '{best[0]}'?)" if best else ""


def sort_key(d: Diagnostic) -> tuple[str, int, int, int]:
    """Order diagnostics by file position, errors first on ties."""
    loc = d.location or Location("")
    return (loc.path, loc.line, loc.col, 0 if d.severity == "error" else 1)
