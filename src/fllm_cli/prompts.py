"""The single Jinja environment used for every prompt: sandboxed, strict about variables."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from fllm_cli.errors import FllmError
from fllm_cli.resources import data_dir

# The longest string or list one template operation may build, and the largest power. Domain
# files are shared between people: an expression such as 'x' * 3000000000 must fail, not eat
# the machine. (Jinja's sandbox already caps range() at 100,000 items.)
MAX_BUILT = 1_000_000
MAX_EXPONENT = 10_000


class _BoundedEnvironment(ImmutableSandboxedEnvironment):
    """The sandbox, with repetition and powers bounded."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            for seq, times in ((left, right), (right, left)):
                repeats = isinstance(seq, (str, list, tuple)) and isinstance(times, int)
                if repeats and len(seq) * max(times, 0) > MAX_BUILT:
                    raise SecurityError(f"the expression would build more than {MAX_BUILT} items")
        if operator == "**" and isinstance(right, (int, float)) and abs(right) > MAX_EXPONENT:
            raise SecurityError(f"exponent larger than {MAX_EXPONENT}")
        return super().call_binop(context, operator, left, right)


def _environment(search: tuple[str, ...]) -> ImmutableSandboxedEnvironment:
    loader = jinja2.FileSystemLoader([*search, str(data_dir("prompts"))])
    env = _BoundedEnvironment(
        loader=loader,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    return env


@lru_cache(maxsize=32)
def environment(search: tuple[str, ...] = ()) -> ImmutableSandboxedEnvironment:
    """Return the prompt environment; ``search`` folders are tried before the shipped prompts."""
    return _environment(search)


def get_template(name: str, search: Iterable[str | Path] = ()) -> jinja2.Template:
    """Load template ``name`` (e.g. ``plan/default.j2``), raising FllmError if it is missing."""
    env = environment(tuple(str(s) for s in search))
    try:
        return env.get_template(name)
    except jinja2.TemplateNotFound as exc:
        raise FllmError(f"prompt template '{name}' not found") from exc
    except jinja2.TemplateSyntaxError as exc:
        raise FllmError(f"prompt template '{name}' line {exc.lineno}: {exc.message}") from exc


def render(name: str, variables: Mapping[str, Any], search: Iterable[str | Path] = ()) -> str:
    """Render template ``name``; an undefined variable is an FllmError, not a crash."""
    template = get_template(name, search)
    try:
        return template.render(**variables).strip() + "\n"
    except jinja2.UndefinedError as exc:
        raise FllmError(f"prompt template '{name}': {exc.message}") from exc
    except TEMPLATE_FAILURES as exc:
        raise FllmError(f"prompt template '{name}': {template_reason(exc)}") from exc


def render_string(source: str, variables: Mapping[str, Any], what: str = "template") -> str:
    """Render an inline template string with the same strict, sandboxed rules."""
    env = environment(())
    try:
        return env.from_string(source).render(**variables)
    except jinja2.UndefinedError as exc:
        raise FllmError(f"{what}: {exc.message}") from exc
    except TEMPLATE_FAILURES as exc:
        raise FllmError(f"{what}: {template_reason(exc)}") from exc


# What rendering can raise: Jinja's own errors, and what an expression raises on the values it
# was given ('a' + 1, 1 / 0, a range over the sandbox's cap, int('x')). All are the template's
# fault and reported as such.
TEMPLATE_FAILURES: tuple[type[Exception], ...] = (
    jinja2.TemplateError,
    ArithmeticError,
    TypeError,
    ValueError,
)


def template_reason(exc: Exception) -> str:
    """Say what went wrong in a template, naming the Python error when it is not Jinja's."""
    if isinstance(exc, jinja2.TemplateError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
