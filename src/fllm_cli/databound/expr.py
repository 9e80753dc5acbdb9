"""Small arithmetic expressions of data-bound domains, evaluated without ``eval``.

A domain file is untrusted text, so its expressions (``price * people_number``,
``cost * ceil(people_number / 4)``) are parsed with :mod:`ast` and only a short list of node
kinds is accepted: numbers and strings, names, ``+ - * / // %``, comparisons, ``and``/``or``/
``not``, ``a if c else b`` and the functions ``ceil``, ``floor``, ``min``, ``max``, ``round``.
Anything else (attributes, subscripts, lambdas, other calls) is refused when the domain is read.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

MAX_LENGTH = 400
MAX_NODES = 200

_BIN: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_CMP: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "ceil": math.ceil,
    "floor": math.floor,
    "min": min,
    "max": max,
    "round": round,
}
_ALLOWED = (
    ast.Expression,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.IfExp,
    ast.Name,
    ast.Constant,
    ast.Call,
    ast.Load,
    ast.USub,
    ast.UAdd,
    ast.Not,
    ast.And,
    ast.Or,
    *_BIN,
    *_CMP,
)


class ExprError(ValueError):
    """An expression that cannot be read or evaluated; the message is one line."""


@dataclass(frozen=True)
class Expr:
    """A checked expression and the names it reads."""

    text: str
    tree: ast.Expression
    names: frozenset[str]

    def __call__(self, env: Mapping[str, Any]) -> Any:
        try:
            return _eval(self.tree.body, env)
        except ExprError:
            raise
        except (ArithmeticError, TypeError, ValueError, OverflowError) as exc:
            raise ExprError(f"'{self.text}': {exc}") from None


def parse_expr(text: str) -> Expr:
    """Parse ``text`` or raise ExprError naming what is not allowed."""
    source = str(text).strip()
    if not source:
        raise ExprError("empty expression")
    if len(source) > MAX_LENGTH:
        raise ExprError(f"expression longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ExprError(f"'{source}' is not an expression") from None
    nodes = list(ast.walk(tree))
    if len(nodes) > MAX_NODES:
        raise ExprError(f"'{source}' is too long ({len(nodes)} parts; at most {MAX_NODES})")
    names: set[str] = set()
    for node in nodes:
        if not isinstance(node, _ALLOWED):
            raise ExprError(f"'{source}': {type(node).__name__} is not allowed in an expression")
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                raise ExprError(f"'{source}': only {', '.join(FUNCTIONS)} may be called")
            if node.keywords:
                raise ExprError(f"'{source}': keyword arguments are not allowed")
        elif isinstance(node, ast.Name) and node.id not in FUNCTIONS:
            names.add(node.id)
        elif isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, str)):
            raise ExprError(f"'{source}': {node.value!r} is not allowed")
    return Expr(source, tree, frozenset(names))


def _eval(node: ast.AST, env: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise ExprError(f"unknown name '{node.id}'")
        return env[node.id]
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, env), _eval(node.right, env)
        if isinstance(node.op, ast.Mult) and (isinstance(left, str) or isinstance(right, str)):
            raise ExprError("text cannot be multiplied")
        return _BIN[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        value = _eval(node.operand, env)
        return (
            not value
            if isinstance(node.op, ast.Not)
            else (-value if isinstance(node.op, ast.USub) else +value)
        )
    if isinstance(node, ast.BoolOp):
        values = [_eval(v, env) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env)
        for op, comparator in zip(node.ops, node.comparators):
            right = _eval(comparator, env)
            if not _CMP[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(node.body if _eval(node.test, env) else node.orelse, env)
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        return FUNCTIONS[node.func.id](*(_eval(a, env) for a in node.args))
    raise ExprError(f"{type(node).__name__} is not allowed")
