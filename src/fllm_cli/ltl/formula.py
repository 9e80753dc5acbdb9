"""The LTL fragment of agent behaviours: atoms, implication, next (n-ary), always, until.

Formulas are immutable values. Parsing from s-expressions lives here too, because the YAML form
writes the behaviour either as the same s-expression text or as nested lists of the same shape.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fllm_cli.diagnostics import Location, did_you_mean
from fllm_cli.sexp import Atom, SExp, SList, show


@dataclass(frozen=True)
class Prop:
    """An atomic proposition: 'the agent is in this state'."""

    name: str


@dataclass(frozen=True)
class Next:
    """``(next f1 f2 ...)``: f1, then f2, then ... on consecutive stretches of the trace."""

    parts: tuple[Formula, ...]


@dataclass(frozen=True)
class Until:
    """``(until f g)``: zero or more f-stretches, then one g-stretch."""

    left: Formula
    right: Formula


@dataclass(frozen=True)
class Always:
    """``(always f)``: the whole stretch is one or more f-stretches."""

    body: Formula


@dataclass(frozen=True)
class Implies:
    """``(implies f g)``: the stretch does not satisfy f, or it satisfies g."""

    left: Formula
    right: Formula


Formula = Prop | Next | Until | Always | Implies

OPERATORS = {
    "next": "next",
    "until": "until",
    "always": "always",
    "implies": "implies",
    "->": "implies",
}


def atoms_in_order(formula: Formula) -> list[str]:
    """Return the state names in the order they are written (with repeats)."""
    if isinstance(formula, Prop):
        return [formula.name]
    if isinstance(formula, Next):
        return [name for part in formula.parts for name in atoms_in_order(part)]
    if isinstance(formula, Always):
        return atoms_in_order(formula.body)
    return atoms_in_order(formula.left) + atoms_in_order(formula.right)


def to_sexp(formula: Formula) -> str:
    """Return the formula as s-expression text."""
    if isinstance(formula, Prop):
        return formula.name
    if isinstance(formula, Next):
        return "(next " + " ".join(to_sexp(p) for p in formula.parts) + ")"
    if isinstance(formula, Always):
        return f"(always {to_sexp(formula.body)})"
    op = "until" if isinstance(formula, Until) else "implies"
    return f"({op} {to_sexp(formula.left)} {to_sexp(formula.right)})"


def to_tree(formula: Formula) -> str | list[object]:
    """Return the formula as nested lists (the YAML/JSON form)."""
    if isinstance(formula, Prop):
        return formula.name
    if isinstance(formula, Next):
        return ["next", *[to_tree(p) for p in formula.parts]]
    if isinstance(formula, Always):
        return ["always", to_tree(formula.body)]
    op = "until" if isinstance(formula, Until) else "implies"
    return [op, to_tree(formula.left), to_tree(formula.right)]


Report = Callable[[str, Location], None]


def parse_formula(expr: SExp, states: set[str], error: Report) -> Formula | None:
    """Build a formula from an s-expression, reporting every problem through ``error``."""
    if isinstance(expr, Atom):
        return _parse_atom(expr, states, error)
    head = expr.head
    if head is None:
        error(f"expected an operator or a state, got {show(expr)[:40]}", expr.loc)
        return None
    op = OPERATORS.get(head.lower())
    if op is None:
        hint = did_you_mean(head, list(OPERATORS))
        error(f"unknown operator '{head}'{hint}; use next, until, always or implies", expr.loc)
        return None
    args = [parse_formula(item, states, error) for item in expr.items[1:]]
    return _build(op, args, expr, error)


def _parse_atom(expr: Atom, states: set[str], error: Report) -> Formula | None:
    if expr.quoted or expr.is_keyword:
        error(f"expected a state name, got {show(expr)}", expr.loc)
        return None
    if expr.value.lower() in OPERATORS:
        error(f"operator '{expr.value}' must be written inside parentheses", expr.loc)
        return None
    if expr.value not in states:
        hint = did_you_mean(expr.value, states)
        error(f"unknown state '{expr.value}' in :behavior{hint}", expr.loc)
        return None
    return Prop(expr.value)


_ARITY = {"until": 2, "implies": 2, "always": 1}


def _build(op: str, args: list[Formula | None], expr: SList, error: Report) -> Formula | None:
    want = _ARITY.get(op)
    if want is not None and len(args) != want:
        error(f"'{op}' takes {want} argument(s), got {len(args)}", expr.loc)
        return None
    if op == "next" and not args:
        error("'next' needs at least one argument", expr.loc)
        return None
    if any(a is None for a in args):
        return None
    parts = [a for a in args if a is not None]
    if op == "next":
        return parts[0] if len(parts) == 1 else Next(tuple(parts))
    if op == "always":
        return Always(parts[0])
    if op == "until":
        return Until(parts[0], parts[1])
    return Implies(parts[0], parts[1])
