"""Extended regular expressions over agent states, with Brzozowski derivatives.

The behaviour formula is translated into an expression with concatenation, star, union,
intersection and complement; derivatives then give a DFA directly. Smart constructors keep
expressions in a normal form (flattened, deduplicated unions and intersections), which is what
makes the set of derivatives finite.
"""

from __future__ import annotations

from dataclasses import dataclass

from fllm_cli.ltl.formula import Always, Formula, Implies, Next, Prop, Until


@dataclass(frozen=True)
class Empty:
    """The empty language."""


@dataclass(frozen=True)
class Eps:
    """The language of the empty word."""


@dataclass(frozen=True)
class Sym:
    """One state."""

    name: str


@dataclass(frozen=True)
class Cat:
    """Concatenation (kept right-nested)."""

    left: Regex
    right: Regex


@dataclass(frozen=True)
class Star:
    """Zero or more repetitions."""

    body: Regex


@dataclass(frozen=True)
class Or:
    """Union of two or more expressions."""

    items: frozenset[Regex]


@dataclass(frozen=True)
class And:
    """Intersection of two or more expressions."""

    items: frozenset[Regex]


@dataclass(frozen=True)
class Not:
    """Complement with respect to all words over the states."""

    body: Regex


Regex = Empty | Eps | Sym | Cat | Star | Or | And | Not

EMPTY = Empty()
EPS = Eps()
ANY = Not(EMPTY)  # every word


def cat(left: Regex, right: Regex) -> Regex:
    """Concatenate, simplifying with the empty word and the empty language."""
    if left == EMPTY or right == EMPTY:
        return EMPTY
    if left == EPS:
        return right
    if right == EPS:
        return left
    if isinstance(left, Cat):
        return cat(left.left, cat(left.right, right))
    return Cat(left, right)


def star(body: Regex) -> Regex:
    """Repeat zero or more times."""
    if body in (EMPTY, EPS):
        return EPS
    if isinstance(body, Star):
        return body
    return Star(body)


def or_(*items: Regex) -> Regex:
    """Union, flattened and deduplicated."""
    flat: set[Regex] = set()
    for item in items:
        flat.update(item.items if isinstance(item, Or) else (item,))
    flat.discard(EMPTY)
    if ANY in flat:
        return ANY
    if not flat:
        return EMPTY
    return next(iter(flat)) if len(flat) == 1 else Or(frozenset(flat))


def and_(*items: Regex) -> Regex:
    """Intersection, flattened and deduplicated."""
    flat: set[Regex] = set()
    for item in items:
        flat.update(item.items if isinstance(item, And) else (item,))
    if EMPTY in flat:
        return EMPTY
    flat.discard(ANY)
    if not flat:
        return ANY
    return next(iter(flat)) if len(flat) == 1 else And(frozenset(flat))


def not_(body: Regex) -> Regex:
    """Complement."""
    return body.body if isinstance(body, Not) else Not(body)


def nullable(r: Regex) -> bool:
    """Return True when ``r`` matches the empty word."""
    if isinstance(r, (Eps, Star)):
        return True
    if isinstance(r, (Empty, Sym)):
        return False
    if isinstance(r, Cat):
        return nullable(r.left) and nullable(r.right)
    if isinstance(r, Or):
        return any(nullable(i) for i in r.items)
    if isinstance(r, And):
        return all(nullable(i) for i in r.items)
    return not nullable(r.body)


def derive(r: Regex, a: str) -> Regex:
    """Return the Brzozowski derivative of ``r`` by the state ``a``."""
    if isinstance(r, (Empty, Eps)):
        return EMPTY
    if isinstance(r, Sym):
        return EPS if r.name == a else EMPTY
    if isinstance(r, Cat):
        first = cat(derive(r.left, a), r.right)
        return or_(first, derive(r.right, a)) if nullable(r.left) else first
    if isinstance(r, Star):
        return cat(derive(r.body, a), r)
    if isinstance(r, Or):
        return or_(*(derive(i, a) for i in r.items))
    if isinstance(r, And):
        return and_(*(derive(i, a) for i in r.items))
    return not_(derive(r.body, a))


def from_formula(f: Formula) -> Regex:
    """Translate a behaviour formula under the segment semantics (see docs/agents.md)."""
    if isinstance(f, Prop):
        return Sym(f.name)
    if isinstance(f, Next):
        out: Regex = EPS
        for part in reversed(f.parts):
            out = cat(from_formula(part), out)
        return out
    if isinstance(f, Until):
        return cat(star(from_formula(f.left)), from_formula(f.right))
    if isinstance(f, Always):
        body = from_formula(f.body)
        return cat(body, star(body))
    assert isinstance(f, Implies)
    return or_(not_(from_formula(f.left)), from_formula(f.right))
