"""Content languages: what the text of a state, a tool input or an answer may be.

A language is written as a regular expression, a JSON schema (a small subset) or a context-free
grammar in llama.cpp's GBNF syntax, or named (``number``, ``arithmetic``, ...). All of them are
compiled into one grammar representation, which serves twice:

* serialised as GBNF, it constrains the embedded model's decoding (``GenerateRequest.grammar``);
* run by the recogniser below, it checks text (the runtime's validate-and-retry for back ends
  without grammars, and ``fllm check-trace``).

Both sides read the same rules, so whatever the decoder can produce the checker accepts.

Supported subsets (documented in docs/agents.md):

* **regex**: literals, ``.`` (any character but a newline), classes ``[a-z]``/``[^...]``,
  ``\\d \\w \\s`` (ASCII) and their negations, escapes ``\\n \\t \\r \\xHH``, groups ``(...)`` and
  ``(?:...)``, ``|``, and the greedy quantifiers ``* + ? {m} {m,} {m,n}``. The whole text must
  match; a leading ``^`` and a trailing ``$`` are accepted and change nothing. Lookarounds,
  backreferences and lazy quantifiers are refused.
* **JSON schema**: ``type`` string / number / integer / boolean / null / object / array,
  ``properties`` (every listed property is written, in the listed order), ``items``,
  ``minItems``/``maxItems``, ``enum``, ``const``, ``anyOf``/``oneOf``, and objects of any keys
  (``additionalProperties`` with a schema and no ``properties``, ``minProperties``); other
  keywords are refused.
* **GBNF**: ``name ::= alternatives`` rules with ``root`` as the start, string literals, character
  classes, ``.``, groups, ``|``, ``* + ? {m} {m,} {m,n}`` and ``#`` comments. Left recursion is
  refused (llama.cpp refuses it too).
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MAX_REPEAT = 1000
MAX_CHECK_CHARS = 20000


class LanguageError(ValueError):
    """A language that cannot be read; the message says where (column or rule)."""


# --------------------------------------------------------------------- the grammar model


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


# --------------------------------------------------------------------- GBNF: read and write


_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "[": "[", "]": "]", "-": "-"}


class _Reader:
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


def _gbnf_space(r: _Reader) -> None:
    while not r.done():
        ch = r.peek()
        if ch == "#":
            while not r.done() and r.peek() != "\n":
                r.pos += 1
        elif ch.isspace():
            r.pos += 1
        else:
            return


def _gbnf_char(r: _Reader) -> str:
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


def _gbnf_class(r: _Reader) -> Cls:
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


def _gbnf_alternates(r: _Reader) -> Node:
    options = [_gbnf_sequence(r)]
    while r.peek() == "|":
        r.pos += 1
        options.append(_gbnf_sequence(r))
    return options[0] if len(options) == 1 else Alt(tuple(options))


def _at_rule_start(r: _Reader) -> bool:
    match = _NAME.match(r.text, r.pos)
    if not match:
        return False
    rest = r.text[match.end() :].lstrip(" \t")
    return rest.startswith("::=")


def _gbnf_sequence(r: _Reader) -> Node:
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
            item = _gbnf_alternates(r)
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


def _gbnf_suffix(r: _Reader, item: Node) -> Node:
    while True:
        ch = r.peek()
        if ch == "*":
            item, r.pos = Rep(item, 0, None), r.pos + 1
        elif ch == "+":
            item, r.pos = Rep(item, 1, None), r.pos + 1
        elif ch == "?":
            item, r.pos = Rep(item, 0, 1), r.pos + 1
        elif ch == "{":
            low, high = _braces(r)
            item = Rep(item, low, high)
        else:
            return item


def _braces(r: _Reader) -> tuple[int, int | None]:
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


def parse_gbnf(text: str, what: str = "grammar") -> dict[str, Node]:
    """Read GBNF rules; the start rule is ``root``. Raise LanguageError on any problem."""
    r = _Reader(text, what)
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
        rules[name] = _gbnf_alternates(r)
        _gbnf_space(r)
        if r.peek() == ")":
            raise r.fail("unbalanced ')'")
    check_rules(rules, what)
    return rules


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


# --------------------------------------------------------------------- the recogniser


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


# --------------------------------------------------------------------- regular expressions

_CLASS_ESCAPES = {
    "d": Cls(((48, 57),)),
    "w": Cls(((48, 57), (65, 90), (95, 95), (97, 122))),
    "s": Cls(((9, 13), (32, 32))),
}
_SPECIAL = set("().[]{}*+?|\\^$")


def parse_regex(pattern: str) -> dict[str, Node]:
    """Compile the supported regex subset to grammar rules (the whole text must match)."""
    r = _Reader(pattern, "regex")
    if r.peek() == "^":
        r.pos += 1
    node = _re_alt(r)
    if r.peek() == "$" and r.pos == len(pattern) - 1:
        r.pos += 1
    if not r.done():
        raise r.fail(f"unexpected {r.peek()!r}")
    return {"root": node}


def _re_alt(r: _Reader) -> Node:
    options = [_re_seq(r)]
    while r.peek() == "|":
        r.pos += 1
        options.append(_re_seq(r))
    return options[0] if len(options) == 1 else Alt(tuple(options))


def _re_seq(r: _Reader) -> Node:
    items: list[Node] = []
    while not r.done() and r.peek() not in "|)":
        if r.peek() == "$" and r.pos == len(r.text) - 1:
            break
        items.append(_re_quant(r, _re_atom(r)))
    return items[0] if len(items) == 1 else Seq(tuple(items))


def _re_atom(r: _Reader) -> Node:
    ch = r.peek()
    if ch == "(":
        r.pos += 1
        if r.peek() == "?":
            if r.peek(1) != ":":
                raise r.fail("only (?:...) groups are supported (no lookarounds or flags)")
            r.pos += 2
        node = _re_alt(r)
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


def _re_escape(r: _Reader, in_class: bool) -> Node:
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


def _re_class(r: _Reader) -> Cls:
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


def _re_quant(r: _Reader, item: Node) -> Node:
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
        low, high = _braces(r)
        node = Rep(item, low, high)
    else:
        return item
    if r.peek() in ("?", "+"):
        raise r.fail("lazy and possessive quantifiers are not supported")
    if r.peek() == "*":
        raise r.fail("multiple repeat")
    return node


# --------------------------------------------------------------------- JSON schema

_JSON_WS = Rep(Cls(((9, 10), (13, 13), (32, 32))), 0, 20)
_JSON_SCHEMA_KEYS = {
    "type",
    "properties",
    "required",
    "items",
    "minItems",
    "maxItems",
    "enum",
    "const",
    "anyOf",
    "oneOf",
    "additionalProperties",
    "minProperties",
    "title",
    "description",
    "$schema",
}


def _json_base_rules() -> dict[str, Node]:
    digits = Rep(Cls(((48, 57),)), 1, None)
    integer = Seq(
        (
            Rep(Lit("-"), 0, 1),
            Alt((Lit("0"), Seq((Cls(((49, 57),)), Rep(Cls(((48, 57),)), 0, 15))))),
        )
    )
    fraction = Rep(Seq((Lit("."), digits)), 0, 1)
    exponent = Rep(
        Seq((Cls(((69, 69), (101, 101))), Rep(Cls(((43, 43), (45, 45))), 0, 1), digits)), 0, 1
    )
    char = Alt(
        (
            Cls(((0, 31), (34, 34), (92, 92)), negated=True),
            Seq(
                (
                    Lit("\\"),
                    Cls(
                        (
                            (34, 34),
                            (47, 47),
                            (92, 92),
                            (98, 98),
                            (102, 102),
                            (110, 110),
                            (114, 114),
                            (116, 116),
                        )
                    ),
                )
            ),
            Seq((Lit("\\u"), Rep(Cls(((48, 57), (65, 70), (97, 102))), 4, 4))),
        )
    )
    return {
        "json-ws": _JSON_WS,
        "json-string": Seq((Lit('"'), Rep(char, 0, None), Lit('"'))),
        "json-integer": integer,
        "json-number": Seq((Ref("json-integer"), fraction, exponent)),
        "json-boolean": Alt((Lit("true"), Lit("false"))),
        "json-null": Lit("null"),
    }


class _SchemaCompiler:
    def __init__(self) -> None:
        self.rules: dict[str, Node] = {}
        self.count = 0

    def compile(self, schema: Any, where: str) -> Node:
        if schema is True or schema == {}:
            raise LanguageError(f"json schema {where}: an unconstrained value is not supported")
        if not isinstance(schema, dict):
            raise LanguageError(f"json schema {where}: expected an object")
        unknown = sorted(set(schema) - _JSON_SCHEMA_KEYS)
        if unknown:
            raise LanguageError(f"json schema {where}: unsupported keyword '{unknown[0]}'")
        if "const" in schema:
            return _json_literal(schema["const"])
        if "enum" in schema:
            values = schema["enum"]
            if not isinstance(values, list) or not values:
                raise LanguageError(f"json schema {where}: enum must be a non-empty list")
            return Alt(tuple(_json_literal(v) for v in values))
        for key in ("anyOf", "oneOf"):
            if key in schema:
                options = schema[key]
                if not isinstance(options, list) or not options:
                    raise LanguageError(f"json schema {where}: {key} must be a non-empty list")
                return Alt(
                    tuple(self.compile(o, f"{where}/{key}/{i}") for i, o in enumerate(options))
                )
        kind = schema.get("type")
        if isinstance(kind, list):
            return Alt(tuple(self.compile({**schema, "type": k}, where) for k in kind))
        simple = {
            "string": "json-string",
            "number": "json-number",
            "integer": "json-integer",
            "boolean": "json-boolean",
            "null": "json-null",
        }
        if kind in simple:
            return Ref(simple[str(kind)])
        if kind == "array":
            return self._array(schema, where)
        if kind == "object" or "properties" in schema:
            return self._object(schema, where)
        raise LanguageError(f"json schema {where}: unsupported or missing type {kind!r}")

    def _rule(self, node: Node) -> Ref:
        self.count += 1
        name = f"json-part-{self.count}"
        self.rules[name] = node
        return Ref(name)

    def _array(self, schema: dict[str, Any], where: str) -> Node:
        if "items" not in schema:
            raise LanguageError(f"json schema {where}: an array needs 'items'")
        item = self._rule(self.compile(schema["items"], f"{where}/items"))
        low = _count(schema, "minItems", where)
        high = _count(schema, "maxItems", where) if "maxItems" in schema else None
        ws = Ref("json-ws")
        more = Seq((ws, Lit(","), ws, item))
        if high == 0:
            body: Node = Seq(())
        else:
            rest = Rep(more, max(0, low - 1), None if high is None else high - 1)
            body = Seq((item, rest))
            if low == 0:
                body = Rep(body, 0, 1)
        return Seq((Lit("["), ws, body, ws, Lit("]")))

    def _object(self, schema: dict[str, Any], where: str) -> Node:
        props = schema.get("properties", {})
        if not isinstance(props, dict):
            raise LanguageError(f"json schema {where}: properties must be an object")
        extra = schema.get("additionalProperties")
        if extra is True:
            raise LanguageError(
                f"json schema {where}: additionalProperties: true allows any value; "
                "give a schema for the values"
            )
        if not props and isinstance(extra, dict):
            return self._map(schema, extra, where)
        if isinstance(extra, dict):
            raise LanguageError(
                f"json schema {where}: additionalProperties with a schema works only without "
                "properties (an object of any keys)"
            )
        if _count(schema, "minProperties", where) > len(props):
            raise LanguageError(
                f"json schema {where}: minProperties needs additionalProperties with a schema "
                "(only the listed properties are written)"
            )
        ws = Ref("json-ws")
        parts: list[Node] = [Lit("{"), ws]
        for i, (key, sub) in enumerate(props.items()):
            if i:
                parts += [ws, Lit(","), ws]
            value = self._rule(self.compile(sub, f"{where}/properties/{key}"))
            parts += [_json_literal(str(key)), ws, Lit(":"), ws, value]
        parts += [ws, Lit("}")]
        return Seq(tuple(parts))

    def _map(self, schema: dict[str, Any], values: dict[str, Any], where: str) -> Node:
        """An object of any keys whose values all follow ``values`` (at least minProperties)."""
        low = _count(schema, "minProperties", where)
        value = self._rule(self.compile(values, f"{where}/additionalProperties"))
        ws = Ref("json-ws")
        entry = self._rule(Seq((Ref("json-string"), ws, Lit(":"), ws, value)))
        body: Node = Seq((entry, Rep(Seq((ws, Lit(","), ws, entry)), max(0, low - 1), None)))
        if low == 0:
            body = Rep(body, 0, 1)
        return Seq((Lit("{"), ws, body, ws, Lit("}")))


def _count(schema: dict[str, Any], key: str, where: str) -> int:
    """Return a count keyword (0 when absent): an integer from 0 to MAX_REPEAT."""
    value = schema.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_REPEAT:
        raise LanguageError(
            f"json schema {where}: {key} must be an integer from 0 to {MAX_REPEAT}, got {value!r}"
        )
    return value


def _json_literal(value: Any) -> Node:
    return Lit(json.dumps(value, ensure_ascii=False))


def parse_json_schema(text: str | dict[str, Any]) -> dict[str, Node]:
    """Compile a JSON schema (text or already parsed) of the supported subset to rules."""
    if isinstance(text, str):
        try:
            schema = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LanguageError(
                f"json schema is not JSON: {exc.msg} at column {exc.colno}"
            ) from None
    else:
        schema = text
    compiler = _SchemaCompiler()
    root = compiler.compile(schema, "#")
    rules = {"root": root, **compiler.rules, **_json_base_rules()}
    check_rules(rules, "json schema")
    return rules


# --------------------------------------------------------------------- languages


ARITHMETIC_GBNF = r"""
root   ::= expr
expr   ::= term (ws [-+] ws term)*
term   ::= factor (ws ("*" | "//" | "/" | "%") ws factor)*
factor ::= "-" ws factor | power
power  ::= atom (ws "**" ws factor)?
atom   ::= number "%"? | "(" ws expr ws ")" | fn "(" ws expr (ws "," ws expr)* ws ")" | "pi"
fn     ::= "sqrt" | "round" | "abs" | "min" | "max" | "floor" | "ceil"
number ::= ("0" | [1-9] [0-9]{0,14}) ("." [0-9]{1,10})?  # no leading zeros: 049
ws     ::= " "?
"""

NAMED: dict[str, tuple[str, str, str]] = {
    # name: (kind, source, description)
    "number": ("regex", r"-?[0-9]+(\.[0-9]+)?", "a number such as 52.8"),
    "integer": ("regex", r"-?[0-9]+", "a whole number such as 180"),
    "yes-no": ("regex", r"yes|no", "yes or no"),
    "query": ("regex", r"[^ \t\r\n][^\r\n]{0,119}", "a short single-line query"),
    "line": ("regex", r"[^\r\n]+", "one line of text"),
    "arithmetic": (
        "gbnf",
        ARITHMETIC_GBNF,
        "an arithmetic expression such as 0.17 * 240 + 12",
    ),
    # Grounded answers: the language is made at run time from the last observation
    # (fllm_cli.ltl.languages.grounded); these rules only stand in until then.
    "observed-number": ("regex", r"-?[0-9]+(\.[0-9]+)?", "a number from the last observation"),
    "observed-span": ("regex", r"[^\r\n]{1,200}", "words copied from the last observation"),
}
OBSERVED = ("observed-number", "observed-span")


# --------------------------------------------------------------------- building a text


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


@dataclass(frozen=True)
class Language:
    """A content language: how it was written, its grammar rules and a description."""

    kind: str  # name | regex | json-schema | gbnf
    source: str
    rules: dict[str, Node] = field(compare=False, repr=False)
    description: str = ""

    def check(self, text: str) -> str | None:
        """Return None when ``text`` belongs to the language, else why not (one line)."""
        return recognise(self.rules, text)

    def build(self, pick: Pick, budget: int = 40) -> str:
        """Return a text of the language, ``pick(so_far, options)`` choosing at each point
        (a chooser that writes no text, or a model whose replies never parse, still gets a
        text the language accepts; the length steers to completion as ``budget`` runs out)."""
        return build_text(self.rules, pick, budget)

    @property
    def line_only(self) -> bool:
        """True for the language of any one line: stopping at the line's end enforces it, so a
        back end needs no grammar for it (grammar-bound sampling is slower)."""
        return self.kind == "name" and self.source == "line"

    def gbnf(self) -> str:
        """Return a GBNF grammar for decoding: optional space before, optional newline after."""
        lines = ['root ::= " "? c-root "\\n"?', *write_gbnf(self.rules, prefix="c-")]
        return "\n".join(lines) + "\n"

    def json_schema(self) -> dict[str, Any] | None:
        """Return the JSON schema of a json-schema language (for providers' structured replies)."""
        if self.kind != "json-schema":
            return None
        value = json.loads(self.source)
        return value if isinstance(value, dict) else None

    def describe(self) -> str:
        """Return a short human description (for prompts and messages)."""
        if self.description:
            return self.description
        shown = self.source if len(self.source) <= 60 else self.source[:57] + "..."
        if self.kind == "regex":
            return f"text matching the regular expression {shown}"
        if self.kind == "json-schema":
            return f"JSON matching the schema {shown}"
        return f"text in the grammar {' '.join(shown.split())}"

    @property
    def label(self) -> str:
        """Return the spelling shown in stats and check-trace messages."""
        if self.kind == "name":
            return self.source
        shown = " ".join(self.source.split())
        return f"{self.kind}:{shown[:40]}{'...' if len(shown) > 40 else ''}"


def make_language(kind: str, source: str | dict[str, Any]) -> Language:
    """Build a language of ``kind`` (name, regex, json-schema, gbnf); raise LanguageError."""
    if kind == "name":
        assert isinstance(source, str)
        if source not in NAMED:
            raise LanguageError(f"unknown language '{source}'; named languages: {', '.join(NAMED)}")
        inner, text, description = NAMED[source]
        rules = parse_regex(text) if inner == "regex" else parse_gbnf(text, source)
        return Language("name", source, rules, description)
    if kind == "regex":
        assert isinstance(source, str)
        return Language("regex", source, parse_regex(source))
    if kind == "json-schema":
        shown = source if isinstance(source, str) else json.dumps(source, ensure_ascii=False)
        return Language("json-schema", shown, parse_json_schema(source))
    if kind == "gbnf":
        assert isinstance(source, str)
        return Language("gbnf", source, parse_gbnf(source))
    raise LanguageError(f"unknown language kind '{kind}'; use regex, json-schema or gbnf")


KINDS = ("regex", "json-schema", "gbnf")


def language_from_text(text: str, read_file: Callable[[str], str] | None = None) -> Language:
    """Read the one-string spelling of ``--answer`` and tool declarations.

    ``NAME`` (number, integer, yes-no, query, line, arithmetic), ``regex:PATTERN``,
    ``json-schema:SCHEMA``, ``gbnf:GRAMMAR``, ``gbnf@FILE`` / ``json-schema@FILE`` (with
    ``read_file``); anything else is a regular expression (so ``yes|no`` works as written).
    """
    value = text.strip()
    if not value:
        raise LanguageError("empty language")
    if value in NAMED:
        return make_language("name", value)
    for kind in KINDS:
        if value.startswith(kind + ":"):
            return make_language(kind, value[len(kind) + 1 :])
        if value.startswith(kind + "@") and kind != "regex":
            if read_file is None:
                raise LanguageError(f"{kind}@FILE is not available here")
            return make_language(kind, read_file(value[len(kind) + 1 :]))
    return make_language("regex", value)
