"""The single Jinja environment used for every prompt: sandboxed, strict about variables."""

from __future__ import annotations

import re
import string
import time
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import FilterArgumentError, SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from fllm_cli.errors import FllmError
from fllm_cli.resources import data_dir

# The longest string or list one template operation may build, and the largest power. Domain
# files are shared between people: an expression such as 'x' * 3000000000 must fail, not eat
# the machine. (Jinja's sandbox already caps range() at 100,000 items.)
MAX_BUILT = 1_000_000
MAX_EXPONENT = 10_000
# What one render may produce and take: loops and string growth are bounded through the
# sandbox's hooks (every call, attribute or item read, operator and '~' join checks the clock).
MAX_OUTPUT = 2_000_000
MAX_RENDER_SECONDS = 3.0
_DEADLINE: ContextVar[float | None] = ContextVar("fllm_render_deadline", default=None)


def _tick() -> None:
    """Fail once the current render has run past its time bound."""
    deadline = _DEADLINE.get()
    if deadline is not None and time.monotonic() > deadline:
        raise SecurityError(f"the template ran longer than {MAX_RENDER_SECONDS:g} s")


def _check_size(value: Any) -> Any:
    if isinstance(value, (str, list, tuple)) and len(value) > MAX_BUILT:
        raise SecurityError(f"a value of more than {MAX_BUILT} items")
    return value


class _CountedRange:
    """A range whose iteration checks the render's clock (nested loops cannot run on)."""

    def __init__(self, inner: range) -> None:
        self.inner = inner

    def __iter__(self) -> Iterator[int]:
        for item in self.inner:
            _tick()
            yield item

    def __reversed__(self) -> Iterator[int]:
        return iter(_CountedRange(self.inner[::-1]))

    def __len__(self) -> int:
        return len(self.inner)

    def __getitem__(self, index: Any) -> Any:
        item = self.inner[index]
        return _CountedRange(item) if isinstance(item, range) else item

    def __contains__(self, value: Any) -> bool:
        return value in self.inner

    def __repr__(self) -> str:
        return repr(self.inner)


class _CheckedCodeGenerator(CodeGenerator):
    """Compiles '~' joins through the environment, which bounds their length and time."""

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        if frame.eval_ctx.volatile:
            join = "(markup_join if context.eval_ctx.volatile else str_join)"
        elif frame.eval_ctx.autoescape:
            join = "markup_join"
        else:
            join = "str_join"
        self.write(f"environment.checked_join({join}, (")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


def render_bounded(template: jinja2.Template, variables: Mapping[str, Any]) -> str:
    """Render ``template`` within the time and output bounds (a SecurityError past them)."""
    token = _DEADLINE.set(time.monotonic() + MAX_RENDER_SECONDS)
    try:
        parts: list[str] = []
        size = 0
        for chunk in template.generate(**variables):
            size += len(chunk)
            if size > MAX_OUTPUT:
                raise SecurityError(f"the template wrote more than {MAX_OUTPUT} characters")
            parts.append(chunk)
            _tick()
        return "".join(parts)
    finally:
        _DEADLINE.reset(token)


# Numbers in a format spec ("%3000000000d", "{:>3000000000}") are widths and precisions.
_SPEC_NUMBER = re.compile(r"\d+")
_PERCENT_SPEC = re.compile(r"%[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")


def _too_wide(numbers: Iterable[str]) -> bool:
    return any(len(n) > 7 or int(n) > MAX_BUILT for n in numbers)


def _check_percent(fmt: str, args: Any) -> None:
    """Refuse ``fmt % args`` when a width or precision would build a huge string."""
    specs = list(_PERCENT_SPEC.finditer(fmt))
    numbers = [n for m in specs for n in m.groups() if n and n != "*"]
    stars = any("*" in m.group(0) for m in specs)
    values = args if isinstance(args, tuple) else (args,)
    if _too_wide(numbers) or (
        stars and any(isinstance(v, int) and abs(v) > MAX_BUILT for v in values)
    ):
        raise SecurityError(f"a format width or precision above {MAX_BUILT}")


def _check_format_spec(fmt: str, values: tuple[Any, ...] = ()) -> None:
    """Refuse ``fmt.format(...)`` when a field's width or precision would build a huge string
    (written in the spec, or taken from an argument: ``"{:>{w}}"``)."""
    try:
        fields = list(string.Formatter().parse(fmt))
    except ValueError:
        return  # the format call itself reports it
    big = any(isinstance(v, int) and abs(v) > MAX_BUILT for v in values)
    for _, _, spec, _ in fields:
        if not spec:
            continue
        if _too_wide(_SPEC_NUMBER.findall(spec)) or ("{" in spec and big):
            raise SecurityError(f"a format width or precision above {MAX_BUILT}")


def _bounded_center(value: Any, width: int = 80) -> str:
    if isinstance(width, int) and width > MAX_BUILT:
        raise SecurityError(f"center width above {MAX_BUILT}")
    return str(value).center(width)


def _bounded_format(value: Any, *args: Any, **kwargs: Any) -> str:
    if kwargs and args:
        raise FilterArgumentError("can't handle positional and keyword arguments at the same time")
    fmt = str(value)
    _check_percent(fmt, args or kwargs)
    return fmt % (kwargs or args)


class _BoundedEnvironment(ImmutableSandboxedEnvironment):
    """The sandbox, with repetition, powers, joins, format widths and padding bounded."""

    intercepted_binops = frozenset({"*", "**", "%", "+"})
    code_generator_class = _CheckedCodeGenerator

    def getattr(self, obj: Any, attribute: str) -> Any:
        _tick()
        return _check_size(super().getattr(obj, attribute))

    def getitem(self, obj: Any, argument: Any) -> Any:
        _tick()
        return _check_size(super().getitem(obj, argument))

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        _tick()
        result = super().call(__context, __obj, *args, **kwargs)
        return _CountedRange(result) if isinstance(result, range) else result

    def checked_join(self, join: Any, parts: tuple[Any, ...]) -> Any:
        _tick()
        if sum(len(p) for p in parts if isinstance(p, str)) > MAX_BUILT:
            raise SecurityError(f"the expression would build more than {MAX_BUILT} items")
        return join(parts)

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.filters["center"] = _bounded_center
        self.filters["format"] = _bounded_format
        indent = self.filters["indent"]

        def bounded_indent(value: Any, width: Any = 4, *args: Any, **kwargs: Any) -> Any:
            if isinstance(width, int) and width > MAX_BUILT:
                raise SecurityError(f"indent width above {MAX_BUILT}")
            return indent(value, width, *args, **kwargs)

        self.filters["indent"] = bounded_indent

    def wrap_str_format(self, value: Any) -> Any:
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        fmt = value.__self__

        def checked(*args: Any, **kwargs: Any) -> str:
            _check_format_spec(fmt, (*args, *kwargs.values()))
            return str(wrapped(*args, **kwargs))

        return checked

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        _tick()
        if operator == "%" and isinstance(left, str):
            _check_percent(left, right)
        joined = isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple))
        if operator == "+" and joined and len(left) + len(right) > MAX_BUILT:
            raise SecurityError(f"the expression would build more than {MAX_BUILT} items")
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
        return render_bounded(template, variables).strip() + "\n"
    except jinja2.UndefinedError as exc:
        raise FllmError(f"prompt template '{name}': {exc.message}") from exc
    except TEMPLATE_FAILURES as exc:
        raise FllmError(f"prompt template '{name}': {template_reason(exc)}") from exc


def render_string(source: str, variables: Mapping[str, Any], what: str = "template") -> str:
    """Render an inline template string with the same strict, sandboxed rules."""
    env = environment(())
    try:
        return render_bounded(env.from_string(source), variables)
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
