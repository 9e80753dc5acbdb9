"""GBNF, llama.cpp's grammar syntax: read into rules, and rules written back out.

``name ::= alternatives`` rules with ``root`` as the start, string literals, character classes,
``.``, groups, ``|``, ``* + ? {m} {m,} {m,n}`` and ``#`` comments. Left recursion is refused
(llama.cpp refuses it too).
"""

from __future__ import annotations

import re
import sys

from fllm_cli.content.reader import Reader, alternates, braces
from fllm_cli.content.rules import ANY, Alt, Cls, Lit, Node, Ref, Rep, Seq, check_rules

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "[": "[", "]": "]", "-": "-"}


def _gbnf_space(r: Reader) -> None:
    while not r.done():
        ch = r.peek()
        if ch == "#":
            while not r.done() and r.peek() != "\n":
                r.pos += 1
        elif ch.isspace():
            r.pos += 1
        else:
            return


def _gbnf_char(r: Reader) -> str:
    ch = r.peek()
    if ch == "":
        raise r.fail("unexpected end of text")
    if ch != "\\":
        r.pos += 1
        return ch
    nxt = r.peek(1)
    if nxt in _ESCAPES:
        r.pos += 2
        return _ESCAPES[nxt]
    sizes = {"x": 2, "u": 4, "U": 8}
    if nxt in sizes:
        digits = r.text[r.pos + 2 : r.pos + 2 + sizes[nxt]]
        if len(digits) != sizes[nxt] or not all(c in "0123456789abcdefABCDEF" for c in digits):
            raise r.fail(f"bad \\{nxt} escape")
        r.pos += 2 + sizes[nxt]
        code = int(digits, 16)
        if code > sys.maxunicode:
            raise r.fail(f"bad \\{nxt} escape")
        return chr(code)
    raise r.fail(f"unknown escape '\\{nxt}'")


def _gbnf_class(r: Reader) -> Cls:
    r.pos += 1  # [
    negated = r.peek() == "^"
    if negated:
        r.pos += 1
    ranges: list[tuple[int, int]] = []
    while r.peek() != "]":
        if r.done():
            raise r.fail("unclosed character class")
        lo = _gbnf_char(r)
        if r.peek() == "-" and r.peek(1) not in ("]", ""):
            r.pos += 1
            hi = _gbnf_char(r)
            if ord(hi) < ord(lo):
                raise r.fail(f"empty range {lo!r}-{hi!r}")
            ranges.append((ord(lo), ord(hi)))
        else:
            ranges.append((ord(lo), ord(lo)))
    r.pos += 1
    return Cls(tuple(ranges), negated)


def _at_rule_start(r: Reader) -> bool:
    match = _NAME.match(r.text, r.pos)
    if not match:
        return False
    rest = r.text[match.end() :].lstrip(" \t")
    return rest.startswith("::=")


def _gbnf_sequence(r: Reader) -> Node:
    items: list[Node] = []
    while True:
        _gbnf_space(r)
        ch = r.peek()
        if ch in ("", "|", ")") or _at_rule_start(r):
            break
        if ch == '"':
            opened = r.pos
            r.pos += 1
            chars = []
            while r.peek() != '"':
                if r.done() or r.peek() == "\n":
                    r.pos = opened
                    raise r.fail("unclosed string")
                chars.append(_gbnf_char(r))
            r.pos += 1
            item: Node = Lit("".join(chars))
        elif ch == "[":
            item = _gbnf_class(r)
        elif ch == ".":
            r.pos += 1
            item = ANY
        elif ch == "(":
            r.pos += 1
            item = alternates(r, _gbnf_sequence)
            _gbnf_space(r)
            if r.peek() != ")":
                raise r.fail("expected ')'")
            r.pos += 1
        else:
            match = _NAME.match(r.text, r.pos)
            if not match:
                raise r.fail(f"unexpected {ch!r}")
            r.pos = match.end()
            item = Ref(match.group(0))
        items.append(_gbnf_suffix(r, item))
    return items[0] if len(items) == 1 else Seq(tuple(items))


def _gbnf_suffix(r: Reader, item: Node) -> Node:
    while True:
        ch = r.peek()
        if ch == "*":
            item, r.pos = Rep(item, 0, None), r.pos + 1
        elif ch == "+":
            item, r.pos = Rep(item, 1, None), r.pos + 1
        elif ch == "?":
            item, r.pos = Rep(item, 0, 1), r.pos + 1
        elif ch == "{":
            low, high = braces(r)
            item = Rep(item, low, high)
        else:
            return item


def parse_gbnf(text: str, what: str = "grammar") -> dict[str, Node]:
    """Read GBNF rules; the start rule is ``root``. Raise LanguageError on any problem."""
    r = Reader(text, what)
    rules: dict[str, Node] = {}
    _gbnf_space(r)
    while not r.done():
        match = _NAME.match(r.text, r.pos)
        if not match:
            raise r.fail("expected a rule 'name ::= ...'")
        name = match.group(0)
        r.pos = match.end()
        _gbnf_space(r)
        if not r.text.startswith("::=", r.pos):
            raise r.fail(f"expected '::=' after '{name}'")
        r.pos += 3
        if name in rules:
            raise r.fail(f"rule '{name}' is defined twice")
        rules[name] = alternates(r, _gbnf_sequence)
        _gbnf_space(r)
        if r.peek() == ")":
            raise r.fail("unbalanced ')'")
    check_rules(rules, what)
    return rules


def _gbnf_escape(ch: str, in_class: bool) -> str:
    if ch.isalnum() and ord(ch) < 128:
        return ch
    if ch == " " and not in_class:
        return " "
    code = ord(ch)
    return (
        f"\\x{code:02X}"
        if code < 0x100
        else f"\\u{code:04X}"
        if code < 0x10000
        else f"\\U{code:08X}"
    )


def _write(node: Node, prefix: str) -> str:
    if isinstance(node, Lit):
        return '"' + "".join(_gbnf_escape(c, False) for c in node.text) + '"'
    if isinstance(node, Cls):
        parts = []
        for lo, hi in node.ranges:
            a = _gbnf_escape(chr(lo), True)
            parts.append(a if lo == hi else f"{a}-{_gbnf_escape(chr(hi), True)}")
        return "[" + ("^" if node.negated else "") + "".join(parts) + "]"
    if isinstance(node, Ref):
        return prefix + node.name
    if isinstance(node, Seq):
        if not node.items:
            return '""'
        return "(" + " ".join(_write(i, prefix) for i in node.items) + ")"
    if isinstance(node, Alt):
        return "(" + " | ".join(_write(o, prefix) for o in node.options) + ")"
    inner = _write(node.item, prefix)
    if (node.low, node.high) == (0, None):
        return f"{inner}*"
    if (node.low, node.high) == (1, None):
        return f"{inner}+"
    if (node.low, node.high) == (0, 1):
        return f"{inner}?"
    if node.high is None:
        return f"{inner}{{{node.low},}}"
    if node.high == node.low:
        return f"{inner}{{{node.low}}}"
    return f"{inner}{{{node.low},{node.high}}}"


def write_gbnf(rules: dict[str, Node], prefix: str = "") -> list[str]:
    """Return one GBNF line per rule; rule names get ``prefix``."""
    return [f"{prefix}{name} ::= {_write(node, prefix)}" for name, node in rules.items()]
