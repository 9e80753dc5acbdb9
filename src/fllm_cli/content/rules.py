"""The grammar rules every content language compiles to, and the checks every rule set passes.

A rule set maps names to nodes (literal, character class, rule reference, sequence,
alternatives, repetition); ``root`` is the start. The recogniser (``recognise``), the GBNF
writer (``gbnf``) and the text builder (``build``) all read these same rules.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_REPEAT = 1000  # the largest count a repetition {m,n} may give


class LanguageError(ValueError):
    """A language that cannot be read; the message says where (column or rule)."""


@dataclass(frozen=True)
class Lit:
    """A literal string."""

    text: str


@dataclass(frozen=True)
class Cls:
    """One character from inclusive ranges (or, negated, any character outside them)."""

    ranges: tuple[tuple[int, int], ...]
    negated: bool = False

    def matches(self, ch: str) -> bool:
        """Return True when ``ch`` belongs to the class."""
        code = ord(ch)
        inside = any(lo <= code <= hi for lo, hi in self.ranges)
        return inside != self.negated


@dataclass(frozen=True)
class Ref:
    """A reference to a rule."""

    name: str


@dataclass(frozen=True)
class Seq:
    """Items one after another (the empty sequence matches the empty text)."""

    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    """One of the options."""

    options: tuple[Node, ...]


@dataclass(frozen=True)
class Rep:
    """``item`` repeated between ``low`` and ``high`` times (``high`` None: no limit)."""

    item: Node
    low: int
    high: int | None


Node = Lit | Cls | Ref | Seq | Alt | Rep
ANY = Cls(((10, 10),), negated=True)  # '.': any character but a newline


def _refs(node: Node) -> list[str]:
    if isinstance(node, Ref):
        return [node.name]
    if isinstance(node, Seq):
        return [n for item in node.items for n in _refs(item)]
    if isinstance(node, Alt):
        return [n for item in node.options for n in _refs(item)]
    if isinstance(node, Rep):
        return _refs(node.item)
    return []


def check_rules(rules: dict[str, Node], what: str = "grammar") -> None:
    """Refuse a missing ``root``, undefined rules and left recursion."""
    if "root" not in rules:
        raise LanguageError(f"{what}: no 'root' rule")
    for name, node in rules.items():
        for ref in _refs(node):
            if ref not in rules:
                raise LanguageError(f"{what}: rule '{name}' uses undefined rule '{ref}'")
    nullable = _nullable(rules)
    graph = {name: _first_refs(node, nullable) for name, node in rules.items()}
    for start in rules:
        seen: set[str] = set()
        stack = list(graph[start])
        while stack:
            name = stack.pop()
            if name == start:
                raise LanguageError(f"{what}: rule '{start}' is left-recursive")
            if name not in seen:
                seen.add(name)
                stack.extend(graph[name])


def _nullable(rules: dict[str, Node]) -> set[str]:
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, node in rules.items():
            if name not in found and _can_be_empty(node, found):
                found.add(name)
                changed = True
    return found


def _can_be_empty(node: Node, nullable: set[str]) -> bool:
    if isinstance(node, Lit):
        return node.text == ""
    if isinstance(node, Cls):
        return False
    if isinstance(node, Ref):
        return node.name in nullable
    if isinstance(node, Seq):
        return all(_can_be_empty(i, nullable) for i in node.items)
    if isinstance(node, Alt):
        return any(_can_be_empty(i, nullable) for i in node.options)
    return node.low == 0 or _can_be_empty(node.item, nullable)


def _first_refs(node: Node, nullable: set[str]) -> set[str]:
    """Rules that may be entered before any character is read."""
    if isinstance(node, Ref):
        return {node.name}
    if isinstance(node, Seq):
        out: set[str] = set()
        for item in node.items:
            out |= _first_refs(item, nullable)
            if not _can_be_empty(item, nullable):
                break
        return out
    if isinstance(node, Alt):
        return set().union(*(_first_refs(o, nullable) for o in node.options))
    if isinstance(node, Rep):
        return _first_refs(node.item, nullable)
    return set()
