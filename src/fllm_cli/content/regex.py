"""Regular expressions, the supported subset, compiled to rules.

Literals, ``.`` (any character but a newline), classes ``[a-z]``/``[^...]``, ``\\d \\w \\s``
(ASCII) and their negations, escapes ``\\n \\t \\r \\xHH``, groups ``(...)`` and ``(?:...)``,
``|``, and the greedy quantifiers ``* + ? {m} {m,} {m,n}``. The whole text must match; a leading
``^`` and a trailing ``$`` are accepted and change nothing. Lookarounds, backreferences and lazy
quantifiers are refused.
"""

from __future__ import annotations

import re

from fllm_cli.content.reader import Reader, alternates, braces
from fllm_cli.content.rules import ANY, Cls, Lit, Node, Rep, Seq

_CLASS_ESCAPES = {
    "d": Cls(((48, 57),)),
    "w": Cls(((48, 57), (65, 90), (95, 95), (97, 122))),
    "s": Cls(((9, 13), (32, 32))),
}


def parse_regex(pattern: str) -> dict[str, Node]:
    """Compile the supported regex subset to grammar rules (the whole text must match)."""
    r = Reader(pattern, "regex")
    if r.peek() == "^":
        r.pos += 1
    node = alternates(r, _re_seq)
    if r.peek() == "$" and r.pos == len(pattern) - 1:
        r.pos += 1
    if not r.done():
        raise r.fail(f"unexpected {r.peek()!r}")
    return {"root": node}


def _re_seq(r: Reader) -> Node:
    items: list[Node] = []
    while not r.done() and r.peek() not in "|)":
        if r.peek() == "$" and r.pos == len(r.text) - 1:
            break
        items.append(_re_quant(r, _re_atom(r)))
    return items[0] if len(items) == 1 else Seq(tuple(items))


def _re_atom(r: Reader) -> Node:
    ch = r.peek()
    if ch == "(":
        r.pos += 1
        if r.peek() == "?":
            if r.peek(1) != ":":
                raise r.fail("only (?:...) groups are supported (no lookarounds or flags)")
            r.pos += 2
        node = alternates(r, _re_seq)
        if r.peek() != ")":
            raise r.fail("missing ')'")
        r.pos += 1
        return node
    if ch == "[":
        return _re_class(r)
    if ch == ".":
        r.pos += 1
        return ANY
    if ch == "\\":
        return _re_escape(r, in_class=False)
    if ch in "*+?{":
        raise r.fail(f"nothing to repeat before {ch!r}")
    if ch in "^$":
        raise r.fail(f"'{ch}' is only supported at the very start or end")
    if ch == ")":
        raise r.fail("unbalanced ')'")
    r.pos += 1
    return Lit(ch)


def _re_escape(r: Reader, in_class: bool) -> Node:
    nxt = r.peek(1)
    if nxt == "":
        raise r.fail("pattern ends with a backslash")
    low = nxt.lower()
    if low in _CLASS_ESCAPES:
        r.pos += 2
        base = _CLASS_ESCAPES[low]
        return Cls(base.ranges, negated=nxt.isupper())
    if nxt in "ntrfv":
        r.pos += 2
        return Lit({"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v"}[nxt])
    if nxt == "x":
        digits = r.text[r.pos + 2 : r.pos + 4]
        if len(digits) != 2 or not all(c in "0123456789abcdefABCDEF" for c in digits):
            raise r.fail("bad \\x escape")
        r.pos += 4
        return Lit(chr(int(digits, 16)))
    if nxt.isalnum():
        raise r.fail(f"unsupported escape '\\{nxt}' (no anchors or backreferences)")
    r.pos += 2
    return Lit(nxt)


def _re_class(r: Reader) -> Cls:
    r.pos += 1
    negated = r.peek() == "^"
    if negated:
        r.pos += 1
    ranges: list[tuple[int, int]] = []
    first = True
    while first or r.peek() != "]":
        if r.done():
            raise r.fail("unclosed '['")
        first = False
        if r.peek() == "\\":
            item = _re_escape(r, in_class=True)
            if isinstance(item, Cls):
                if item.negated:
                    raise r.fail("negated escapes (\\D, \\W, \\S) are not supported inside [...]")
                ranges.extend(item.ranges)
                continue
            assert isinstance(item, Lit)
            lo = item.text
        else:
            lo = r.peek()
            r.pos += 1
        if r.peek() == "-" and r.peek(1) not in ("]", ""):
            r.pos += 1
            if r.peek() == "\\":
                hi_node = _re_escape(r, in_class=True)
                if not isinstance(hi_node, Lit):
                    raise r.fail("a range cannot end in a class escape")
                hi = hi_node.text
            else:
                hi = r.peek()
                r.pos += 1
            if ord(hi) < ord(lo):
                raise r.fail(f"bad range {lo}-{hi}")
            ranges.append((ord(lo), ord(hi)))
        else:
            ranges.append((ord(lo), ord(lo)))
    r.pos += 1
    return Cls(tuple(ranges), negated)


def _re_quant(r: Reader, item: Node) -> Node:
    ch = r.peek()
    if ch == "*":
        r.pos += 1
        node: Node = Rep(item, 0, None)
    elif ch == "+":
        r.pos += 1
        node = Rep(item, 1, None)
    elif ch == "?":
        r.pos += 1
        node = Rep(item, 0, 1)
    elif ch == "{" and re.match(r"\{\d+(,\d*)?\}", r.text[r.pos :]):
        low, high = braces(r)
        node = Rep(item, low, high)
    else:
        return item
    if r.peek() in ("?", "+"):
        raise r.fail("lazy and possessive quantifiers are not supported")
    if r.peek() == "*":
        raise r.fail("multiple repeat")
    return node
