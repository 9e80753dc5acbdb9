"""A cursor over the text of a language, shared by the readers of GBNF and regular expressions."""

from __future__ import annotations

import re
from collections.abc import Callable

from fllm_cli.content.rules import MAX_REPEAT, Alt, LanguageError, Node


class Reader:
    """A tiny cursor over one line-oriented text with column-bearing errors."""

    def __init__(self, text: str, what: str) -> None:
        self.text = text
        self.pos = 0
        self.what = what

    def fail(self, message: str) -> LanguageError:
        line = self.text.count("\n", 0, self.pos) + 1
        col = self.pos - (self.text.rfind("\n", 0, self.pos) + 1) + 1
        return LanguageError(f"{self.what}, line {line} column {col}: {message}")

    def peek(self, k: int = 0) -> str:
        i = self.pos + k
        return self.text[i] if i < len(self.text) else ""

    def done(self) -> bool:
        return self.pos >= len(self.text)


def alternates(r: Reader, sequence: Callable[[Reader], Node]) -> Node:
    """Read ``sequence ("|" sequence)*``: one node, or the alternatives of several."""
    options = [sequence(r)]
    while r.peek() == "|":
        r.pos += 1
        options.append(sequence(r))
    return options[0] if len(options) == 1 else Alt(tuple(options))


def braces(r: Reader) -> tuple[int, int | None]:
    """Read ``{m}``, ``{m,}`` or ``{m,n}`` at the cursor; return (m, n or None)."""
    match = re.compile(r"\{\s*(\d+)\s*(,\s*(\d*)\s*)?\}").match(r.text, r.pos)
    if not match:
        raise r.fail("expected {m}, {m,} or {m,n}")
    r.pos = match.end()
    low = int(match.group(1))
    high: int | None = low if match.group(2) is None else None
    if match.group(3):
        high = int(match.group(3))
    if (high is not None and high < low) or low > MAX_REPEAT or (high or 0) > MAX_REPEAT:
        raise r.fail(f"bad repetition {match.group(0)} (at most {MAX_REPEAT})")
    return low, high
