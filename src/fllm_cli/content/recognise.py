"""The recogniser: whether a text belongs to a rule set, and if not, why not (one line)."""

from __future__ import annotations

from fllm_cli.content.rules import ANY, Alt, Cls, Lit, Node, Ref, Rep, Seq

MAX_CHECK_CHARS = 20000


class _Recogniser:
    """All-parses recogniser: for a node and a start position, the set of end positions."""

    def __init__(self, rules: dict[str, Node], text: str) -> None:
        self.rules = rules
        self.text = text
        self.memo: dict[tuple[str, int], frozenset[int]] = {}
        self.active: set[tuple[str, int]] = set()
        self.furthest = 0
        self.expected: list[Node] = []

    def _miss(self, pos: int, node: Node) -> None:
        if pos > self.furthest:
            self.furthest, self.expected = pos, [node]
        elif pos == self.furthest and len(self.expected) < 8 and node not in self.expected:
            self.expected.append(node)

    def ends(self, node: Node, pos: int) -> frozenset[int]:
        text = self.text
        if isinstance(node, Lit):
            for k, ch in enumerate(node.text):
                if pos + k >= len(text) or text[pos + k] != ch:
                    self._miss(pos + k, node if k == 0 else Lit(node.text[k:]))
                    return frozenset()
            return frozenset((pos + len(node.text),))
        if isinstance(node, Cls):
            if pos < len(text) and node.matches(text[pos]):
                return frozenset((pos + 1,))
            self._miss(pos, node)
            return frozenset()
        if isinstance(node, Ref):
            key = (node.name, pos)
            if key in self.memo:
                return self.memo[key]
            if key in self.active:  # only reachable through left recursion, which is refused
                return frozenset()
            self.active.add(key)
            found = self.ends(self.rules[node.name], pos)
            self.active.discard(key)
            self.memo[key] = found
            return found
        if isinstance(node, Seq):
            current = frozenset((pos,))
            for item in node.items:
                current = frozenset(e for p in current for e in self.ends(item, p))
                if not current:
                    break
            return current
        if isinstance(node, Alt):
            return frozenset(e for o in node.options for e in self.ends(o, pos))
        return self._repeat(node, pos)

    def _repeat(self, node: Rep, pos: int) -> frozenset[int]:
        result: set[int] = {pos} if node.low == 0 else set()
        frontier = frozenset((pos,))
        seen_at_least_low: set[int] = set(result)
        count = 0
        while frontier and (node.high is None or count < node.high):
            count += 1
            nxt = frozenset(e for p in frontier for e in self.ends(node.item, p))
            if count >= node.low:
                if node.high is None:
                    nxt = frozenset(nxt - seen_at_least_low)  # nothing new: a fixpoint
                    seen_at_least_low |= nxt
                result |= nxt
            frontier = nxt
        return frozenset(result)


def _describe_node(node: Node) -> str:
    if isinstance(node, Lit):
        return repr(node.text[:20])
    if isinstance(node, Cls):
        if node == ANY:
            return "any character but a newline"
        shown = "".join(
            chr(lo) if lo == hi else f"{chr(lo)}-{chr(hi)}" for lo, hi in node.ranges[:6]
        )
        return ("a character not in " if node.negated else "one of ") + repr(f"[{shown}]")
    return "more text"


def recognise(rules: dict[str, Node], text: str) -> str | None:
    """Return None when ``text`` is in the language of ``rules``, else why not (one line)."""
    if len(text) > MAX_CHECK_CHARS:
        return f"the text is longer than {MAX_CHECK_CHARS} characters"
    rec = _Recogniser(rules, text)
    try:
        ends = rec.ends(Ref("root"), 0)
    except RecursionError:
        return "the text is nested too deeply to check"
    if len(text) in ends:
        return None
    if rec.furthest >= len(text) and rec.furthest > 0 and not rec.expected:
        return "the text ends too early"
    if not rec.expected and ends:
        at = max(ends)
        return f"unexpected {text[at : at + 12]!r} at character {at + 1}"
    at = rec.furthest
    wanted = " or ".join(dict.fromkeys(_describe_node(n) for n in rec.expected[:4]))
    if at >= len(text):
        return f"the text ends too early; expected {wanted or 'more'}"
    return f"at character {at + 1} ({text[at : at + 12]!r}): expected {wanted or 'something else'}"
