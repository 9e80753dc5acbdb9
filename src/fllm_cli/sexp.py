"""The one s-expression reader: agent specs and PDDL files, with source locations.

It reads with an explicit stack, so no nesting depth can exhaust Python's recursion, and it
refuses nesting deeper than ``MAX_DEPTH`` with a located error (no spec fllm reads needs more;
the printers and checkers that walk the result may then recurse safely). Unbalanced closing
parentheses at the top level are reported as warnings and skipped instead of aborting, because
two of the paper's printed figures carry a stray ``)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fllm_cli.diagnostics import Diagnostic, Location


@dataclass(frozen=True)
class Atom:
    """A symbol, keyword (``:text``) or string literal."""

    value: str
    loc: Location
    quoted: bool = False

    @property
    def is_keyword(self) -> bool:
        """Return True for ``:name`` symbols."""
        return not self.quoted and self.value.startswith(":")


@dataclass(frozen=True)
class SList:
    """A parenthesised list."""

    items: tuple[SExp, ...]
    loc: Location
    end: Location = field(default=Location(""), compare=False)

    @property
    def head(self) -> str | None:
        """Return the first item's text when it is an unquoted symbol."""
        if self.items and isinstance(self.items[0], Atom) and not self.items[0].quoted:
            return self.items[0].value
        return None


SExp = Atom | SList


MAX_DEPTH = 100


def _escape(ch: str) -> str:
    return {"n": "\n", "t": "\t"}.get(ch, ch)


class _Reader:
    """Tokenise and parse in one pass, recording diagnostics."""

    def __init__(
        self, text: str, path: str, line: int = 1, col: int = 1, max_depth: int = 0
    ) -> None:
        self.max_depth = max_depth or MAX_DEPTH
        self.text = text
        self.path = path
        self.pos = 0
        self.line = line
        self.col = col
        self.diagnostics: list[Diagnostic] = []

    def loc(self) -> Location:
        return Location(self.path, self.line, self.col)

    def advance(self) -> str:
        ch = self.text[self.pos]
        self.pos += 1
        if ch == "\n":
            self.line += 1
            self.col = 1
        else:
            self.col += 1
        return ch

    def skip_space(self) -> None:
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch == ";":
                while self.pos < len(self.text) and self.text[self.pos] != "\n":
                    self.advance()
            elif ch.isspace():
                self.advance()
            else:
                return

    def read_string(self) -> Atom:
        start = self.loc()
        self.advance()
        out: list[str] = []
        while self.pos < len(self.text):
            ch = self.advance()
            if ch == '"':
                return Atom("".join(out), start, quoted=True)
            if ch == "\\" and self.pos < len(self.text):
                out.append(_escape(self.advance()))
            else:
                out.append(ch)
        self.diagnostics.append(Diagnostic("error", "unterminated string", start))
        return Atom("".join(out), start, quoted=True)

    def read_symbol(self) -> Atom:
        start = self.loc()
        begin = self.pos
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch.isspace() or ch in '()";':
                break
            self.advance()
        return Atom(self.text[begin : self.pos], start)

    def read_atom(self) -> Atom:
        return self.read_string() if self.text[self.pos] == '"' else self.read_symbol()

    def read_list(self) -> SList:
        """Read one parenthesised form and everything nested in it, without recursion."""
        stack: list[tuple[Location, list[SExp]]] = [(self.loc(), [])]
        self.advance()
        while True:
            self.skip_space()
            start, items = stack[-1]
            if self.pos >= len(self.text):
                return self._unclosed(stack)
            ch = self.text[self.pos]
            if ch == ")":
                end = self.loc()
                self.advance()
                stack.pop()
                done = SList(tuple(items), start, end)
                if not stack:
                    return done
                stack[-1][1].append(done)
            elif ch == "(":
                if len(stack) >= self.max_depth:
                    self.diagnostics.append(
                        Diagnostic(
                            "error",
                            f"nested deeper than {self.max_depth} levels (the limit of fllm's "
                            "s-expression reader)",
                            self.loc(),
                        )
                    )
                    self.pos = len(self.text)  # nothing after this point can be trusted
                    return self._unclosed(stack, report=False)
                stack.append((self.loc(), []))
                self.advance()
            else:
                items.append(self.read_atom())

    def _unclosed(self, stack: list[tuple[Location, list[SExp]]], report: bool = True) -> SList:
        """Close every open list at the end of the text (once reported)."""
        if report:
            self.diagnostics.append(
                Diagnostic("error", "'(' is never closed (missing ')')", stack[0][0])
            )
        done: SList | None = None
        while stack:
            start, items = stack.pop()
            if done is not None:
                items.append(done)
            done = SList(tuple(items), start, self.loc())
        assert done is not None  # the stack held at least the outer list
        return done

    def read_form(self) -> SExp:
        return self.read_list() if self.text[self.pos] == "(" else self.read_atom()

    def read_all(self) -> list[SExp]:
        forms: list[SExp] = []
        while True:
            self.skip_space()
            if self.pos >= len(self.text):
                return forms
            if self.text[self.pos] == ")":
                self.diagnostics.append(
                    Diagnostic("warning", "extra ')' with no matching '(' ignored", self.loc())
                )
                self.advance()
                continue
            forms.append(self.read_form())


def read(
    text: str, path: str, line: int = 1, col: int = 1, max_depth: int = 0
) -> tuple[list[SExp], list[Diagnostic]]:
    """Parse every top-level form of ``text``; positions start at ``line``:``col``."""
    reader = _Reader(text, path, line, col, max_depth)
    forms = reader.read_all()
    return forms, reader.diagnostics


def show(expr: SExp) -> str:
    """Return ``expr`` printed back on one line."""
    if isinstance(expr, Atom):
        return f'"{expr.value}"' if expr.quoted else expr.value
    return "(" + " ".join(show(item) for item in expr.items) + ")"


def to_lists(expr: SExp, lower: bool = False) -> Any:
    """Return ``expr`` as nested Python lists of strings (for PDDL-style processing)."""
    if isinstance(expr, Atom):
        return expr.value.lower() if lower else expr.value
    return [to_lists(item, lower) for item in expr.items]
