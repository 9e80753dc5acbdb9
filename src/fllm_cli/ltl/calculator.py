"""Safe arithmetic for the ``calculator`` tool: an ``ast`` walker, never ``eval``."""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable
from typing import Any

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "floor": math.floor,
    "ceil": math.ceil,
}
_CONSTANTS = {"pi": math.pi, "e": math.e}
MAX_EXPONENT = 1000
MAX_MAGNITUDE = 1e100
MAX_LENGTH = 500


class CalculatorError(ValueError):
    """The expression is not plain arithmetic, or it cannot be computed."""


def _normalise(expression: str) -> str:
    text = expression.strip().strip("`").strip()
    text = text.replace("×", "*").replace("÷", "/").replace("^", "**").replace("$", "")
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)  # thousands separators
    # '17%' (a percentage) but not '17 % 5' or '4 % pi' (modulo): a % not followed by an operand.
    text = re.sub(r"(\d+(?:\.\d+)?)\s*%(?!\s*[\w(.])", r"(\1/100)", text)
    return text.rstrip("=").strip()


def evaluate(expression: str) -> float | int:
    """Return the value of an arithmetic expression, or raise CalculatorError."""
    text = _normalise(expression)
    if not text:
        raise CalculatorError("empty expression")
    if len(text) > MAX_LENGTH:
        raise CalculatorError("expression too long")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise CalculatorError(
            f"not an arithmetic expression: {expression.strip()[:80]!r}"
        ) from None
    try:
        value = _eval(tree.body)
    except (ZeroDivisionError, OverflowError, ValueError, TypeError) as exc:
        if isinstance(exc, CalculatorError):
            raise
        raise CalculatorError(str(exc) or type(exc).__name__) from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CalculatorError("the result is not a number")
    return value


def _eval(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise CalculatorError("exponent too large")
        return _check(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        return _check(_FUNCTIONS[node.func.id](*[_eval(a) for a in node.args]))
    raise CalculatorError(
        f"unsupported element {ast.dump(node)[:40]!r}; use numbers and + - * / ** %"
    )


def _check(value: Any) -> Any:
    if isinstance(value, complex):
        raise CalculatorError("complex result")
    if isinstance(value, (int, float)) and abs(value) > MAX_MAGNITUDE:
        raise CalculatorError("result too large")
    return value


def format_number(value: float | int) -> str:
    """Print integers without a decimal point and floats with at most 10 significant digits."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.10g}"
    return str(value)
