"""Building a text of a rule set, a chooser deciding at every open point."""

from __future__ import annotations

import math
from collections.abc import Callable

from fllm_cli.content.rules import Alt, Cls, LanguageError, Lit, Node, Ref, Rep, Seq


def shortest(node: Node, lengths: dict[str, float]) -> float:
    """The length of the shortest text of ``node``, given each rule's (``lengths``)."""
    if isinstance(node, Lit):
        return len(node.text)
    if isinstance(node, Cls):
        return 1
    if isinstance(node, Ref):
        return lengths.get(node.name, math.inf)
    if isinstance(node, Seq):
        return sum(shortest(i, lengths) for i in node.items)
    if isinstance(node, Alt):
        return min((shortest(o, lengths) for o in node.options), default=math.inf)
    return node.low * shortest(node.item, lengths) if node.low else 0


def min_lengths(rules: dict[str, Node]) -> dict[str, float]:
    """The length of the shortest text of each rule (inf for a rule with none)."""
    best: dict[str, float] = {name: math.inf for name in rules}
    changed = True
    while changed:  # a fixpoint: recursive rules settle once their base cases are known
        changed = False
        for name, node in rules.items():
            value = shortest(node, best)
            if value < best[name]:
                best[name], changed = value, True
    return best


# Characters offered for a class: a few from each range, printable ones first.
_OFFERED = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ .,-+*/()"
MAX_CLASS_OPTIONS = 12


def class_options(cls: Cls) -> list[str]:
    """Characters of a class to choose among (never empty for a class that has any)."""
    out = [c for c in _OFFERED if cls.matches(c)]
    if not cls.negated:
        for lo, hi in cls.ranges:
            for code in (lo, (lo + hi) // 2, hi):
                ch = chr(code)
                if ch not in out and ch.isprintable():
                    out.append(ch)
    return out[:MAX_CLASS_OPTIONS]


Pick = Callable[[str, tuple[str, ...]], int]


class _Builder:
    """Build a text of a grammar, letting ``pick`` choose at every open point and steering to
    the shortest completion as the length budget runs out: every text it returns is one the
    grammar accepts, whatever ``pick`` does."""

    def __init__(self, rules: dict[str, Node], pick: Pick, budget: int) -> None:
        self.rules = rules
        self.pick = pick
        self.lengths = min_lengths(rules)
        self.out: list[str] = []
        self.slack = budget  # characters beyond the shortest completion still allowed

    def shortest(self, node: Node) -> float:
        return shortest(node, self.lengths)

    def choose(self, options: list[str]) -> int:
        if len(options) == 1:
            return 0
        index = self.pick("".join(self.out), tuple(options))
        return index if 0 <= index < len(options) else 0

    def build(self, node: Node, depth: int = 0) -> None:
        if depth > 200:
            raise LanguageError("the grammar nests too deeply to build a text")
        if isinstance(node, Lit):
            self.out.append(node.text)
        elif isinstance(node, Cls):
            options = class_options(node)
            if not options:
                raise LanguageError("a character class offers no character to write")
            self.out.append(options[self.choose(options)])
        elif isinstance(node, Ref):
            self.build(self.rules[node.name], depth + 1)
        elif isinstance(node, Seq):
            for item in node.items:
                self.build(item, depth + 1)
        elif isinstance(node, Alt):
            floor = self.shortest(node)
            fits = [o for o in node.options if self.shortest(o) - floor <= self.slack]
            option = fits[self.choose([_preview(o, self.rules) for o in fits])]
            self.slack -= int(self.shortest(option) - floor)
            self.build(option, depth + 1)
        else:
            self.repeat(node, depth)

    def repeat(self, node: Rep, depth: int) -> None:
        for _ in range(node.low):
            self.build(node.item, depth + 1)
        extra = self.shortest(node.item)
        count = node.low
        while (node.high is None or count < node.high) and count < node.low + 64:
            if max(extra, 1) > self.slack or self.choose(["(stop)", "(more)"]) == 0:
                return
            self.slack -= int(max(extra, 1))
            self.build(node.item, depth + 1)
            count += 1


def _preview(node: Node, rules: dict[str, Node], depth: int = 0) -> str:
    """A short label of an alternative (what an option looks like to a chooser)."""
    if depth > 3:
        return "..."
    if isinstance(node, Lit):
        return repr(node.text)
    if isinstance(node, Ref):
        return node.name
    if isinstance(node, Seq):
        return " ".join(_preview(i, rules, depth + 1) for i in node.items[:3]) or "''"
    if isinstance(node, Alt):
        return " | ".join(_preview(o, rules, depth + 1) for o in node.options[:3])
    if isinstance(node, Rep):
        return _preview(node.item, rules, depth + 1) + "*"
    return "[...]"


def build_text(rules: dict[str, Node], pick: Pick, budget: int = 40) -> str:
    """Return a text of the grammar (start rule ``root``), ``pick`` choosing at each point."""
    builder = _Builder(rules, pick, budget)
    if builder.lengths.get("root", math.inf) == math.inf:
        raise LanguageError("the grammar has no finite text")
    builder.build(rules["root"])
    return "".join(builder.out)
