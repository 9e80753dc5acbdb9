"""Read an explicit automaton (``kind: automaton``) and scenario ``vars`` from a located tree.

Parametric families of states and transitions are expanded here: an item with ``for:`` (one or
more loop variables, each a list, an inclusive ``{from, to, except}`` range, or a Jinja
expression such as ``range(20, 10, -1)``) and an optional ``when:`` condition stands for one item
per binding. Structural fields (state names, ``from``/``to``, ``input``, ``pop``/``push``,
``count``) are rendered now with the binding; text fields (``question``, ``option``, ``step``)
are kept as templates and rendered at prompt time, when the scenario variables are known.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import jinja2

from fllm_cli.content import LanguageError, language_from_text
from fllm_cli.diagnostics import Location
from fllm_cli.domain.model import (
    AutomatonSpec,
    Binding,
    CounterSpec,
    NoteSpec,
    StateSpec,
    Text,
    TransitionSpec,
    VarSpec,
)
from fllm_cli.domain.yamlloc import Node, Reader
from fllm_cli.errors import FllmError
from fllm_cli.prompts import TEMPLATE_FAILURES, environment, render_bounded, template_reason

ANY = "∀"
ANY_SPELLINGS = {"∀", "*", "any"}
EPSILON = {"ε", "eps", "epsilon"}
AUTOMATON_KEYS = {"states", "start", "accept", "stack", "counters", "transitions", "order"}
STATE_KEYS = {"name", "question", "template", "for", "when"}
TRANSITION_KEYS = {
    "from", "to", "input", "pop", "push", "count", "option", "step", "note", "for", "when",
}  # fmt: skip
NOTE_KEYS = {"ask", "language", "max_tokens"}
MAX_NOTE_TOKENS = 2000
STACK_KEYS = {"alphabet", "initial"}
ACCEPT_KEYS = {"states", "stack_top"}
COUNTER_KEYS = {"min", "max"}
VAR_KEYS = {"description", "default"}
RANGE_KEYS = {"from", "to", "step", "except"}
# Names a text field may use besides its family variables and the scenario vars.
TEXT_NAMES = frozenset({"state"})


class _Bad(Exception):
    """A family expression failed; carries the message for a located diagnostic."""


class _Located(Exception):
    def __init__(self, message: str, loc: Location) -> None:
        super().__init__(message)
        self.loc = loc


def read_vars(reader: Reader, node: Node | None) -> tuple[VarSpec, ...]:
    """Read ``vars:`` (NAME: description, or NAME: {description, default})."""
    out: list[VarSpec] = []
    if reader.mapping(node, "vars") is None:
        return ()
    for name, value, loc in reader.items(node):
        if not name.isidentifier():
            reader.error(f"variable name '{name}' must be an identifier", loc)
            continue
        if value.value is None or isinstance(value.value, str):
            out.append(VarSpec(name, value.value or "", None, loc))
            continue
        m = reader.mapping(value, f"variable '{name}'", VAR_KEYS)
        desc = reader.string(Reader.get(m, "description"), "description") or ""
        default = reader.string(Reader.get(m, "default"), "default")
        out.append(VarSpec(name, desc, default, loc))
    return tuple(out)


# -- families -----------------------------------------------------------------------------


def _env() -> jinja2.Environment:
    return environment(())


def _render(source: object, binding: dict[str, Any]) -> str:
    if isinstance(source, (dict, list)):
        raise _Bad(
            f"expected a name or text, got a {'mapping' if isinstance(source, dict) else 'list'}"
        )
    text = str(source)
    if "{{" not in text and "{%" not in text:
        return text
    try:
        return render_bounded(_env().from_string(text), binding).strip()
    except TEMPLATE_FAILURES as exc:
        raise _Bad(f"cannot evaluate '{text}': {_jinja_message(exc)}") from None


def _jinja_message(exc: Exception) -> str:
    if isinstance(exc, jinja2.TemplateError):
        return str(getattr(exc, "message", None) or exc)
    return template_reason(exc)


def _evaluate(source: str, binding: dict[str, Any]) -> Any:
    try:
        return _env().compile_expression(source)(**binding)
    except jinja2.TemplateError as exc:
        raise _Bad(f"cannot evaluate '{source}': {_jinja_message(exc)}") from None
    except Exception as exc:
        raise _Bad(f"cannot evaluate '{source}': {exc}") from None


def _values(reader: Reader, name: str, node: Node, binding: dict[str, Any]) -> list[Any]:
    value = node.value
    if isinstance(value, list):
        return [item.value for item in value]
    if isinstance(value, dict):
        m = reader.mapping(node, f"range of '{name}'", RANGE_KEYS)
        start = _int_field(m, "from", binding)
        stop = _int_field(m, "to", binding)
        step_node = Reader.get(m, "step")
        step = _int_field(m, "step", binding) if step_node is not None else 0
        if step == 0:
            step = 1 if stop >= start else -1
        skip_node = Reader.get(m, "except")
        skip_values = skip_node.value if skip_node else []
        if not isinstance(skip_values, list):
            skip_values = [skip_node] if skip_node is not None else []
        skip = [_plain(v) for v in skip_values]
        if any(isinstance(v, (list, dict)) for v in skip):
            raise _Bad(f"'except' of '{name}' takes single values, not lists")
        end = stop + (1 if step > 0 else -1)
        span = range(start, end, step)
        _check_size(name, _length(span))
        return [v for v in span if v not in skip]
    if isinstance(value, str):
        got = _evaluate(value, binding)
        try:
            _check_size(name, _length(got))
            return list(got)
        except TypeError:
            raise _Bad(f"'{value}' is not a list or range (got {str(got)[:60]!r})") from None
    raise _Bad(f"loop variable '{name}' needs a list, a range mapping or an expression")


# The most copies one family may make; more is almost surely a mistake, and would be slow.
MAX_FAMILY = 10_000


def _length(values: Any) -> int:
    """Return ``len(values)``, counting a range too long for ``len`` (2**63 items or more)."""
    try:
        return len(values)
    except OverflowError:
        if not isinstance(values, range):
            raise _Bad(f"a family of more than {sys.maxsize:,} copies") from None
        a, b, c = values.start, values.stop, values.step
        return max(0, (b - a + c - 1) // c if c > 0 else (a - b - c - 1) // -c)


def _check_size(name: str, size: int) -> None:
    if size > MAX_FAMILY:
        raise _Bad(
            f"'{name}' takes {size} values; a family makes at most {MAX_FAMILY} copies "
            "(split it, or narrow the range)"
        )


def _plain(node: Any) -> Any:
    return node.value if isinstance(node, Node) else node


def _int_field(m: Node | None, key: str, binding: dict[str, Any]) -> int:
    node = Reader.get(m, key)
    if node is None:
        raise _Bad(f"a range needs '{key}'")
    value = node.value
    if isinstance(value, str):
        value = _evaluate(value, binding)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Bad(f"range '{key}' must be an integer, got {value!r}")
    return value


def _bindings(reader: Reader, item: Node) -> Iterator[tuple[dict[str, Any], Location]]:
    """Yield every binding of an item's ``for:`` that satisfies its ``when:``."""
    for_node = Reader.get(item, "for")
    when_node = Reader.get(item, "when")
    if for_node is None:
        if when_node is not None:
            reader.error("'when' needs a 'for' block", when_node.loc)
        yield {}, item.loc
        return
    if reader.mapping(for_node, "for") is None:
        return
    names = list(reader.items(for_node))
    if not names:
        reader.error("'for' declares no loop variable", for_node.loc)
        return
    for _name, _node, loc in names:
        if not _name.isidentifier():
            reader.error(f"loop variable '{_name}' must be an identifier", loc)
            return

    def expand(k: int, binding: dict[str, Any]) -> Iterator[dict[str, Any]]:
        if k == len(names):
            yield dict(binding)
            return
        name, node, _loc = names[k]
        try:
            values = _values(reader, name, node, binding)
        except _Bad as exc:
            raise _Located(f"bad family expression: {exc}", node.loc) from None
        for v in values:
            binding[name] = v
            yield from expand(k + 1, binding)
        binding.pop(name, None)

    try:
        made = 0
        for binding in expand(0, {}):
            made += 1
            if made > MAX_FAMILY:
                raise _Located(
                    f"the family makes more than {MAX_FAMILY} copies (split it, or narrow it)",
                    for_node.loc,
                )
            if when_node is not None:
                try:
                    keep = _evaluate(str(when_node.value), binding)
                except _Bad as exc:
                    raise _Located(f"bad family expression: {exc}", when_node.loc) from None
                if not keep:
                    continue
            yield binding, item.loc
    except _Located as exc:
        reader.error(str(exc), exc.loc)


def _text(reader: Reader, node: Node | None, binding: Binding, what: str) -> Text | None:
    s = reader.string(node, what)
    if s is None or node is None:
        return None
    return Text(s, binding, node.loc)


def _frozen(binding: dict[str, Any]) -> Binding:
    return tuple(sorted(binding.items()))


# -- states and transitions -------------------------------------------------------------


def _states(reader: Reader, node: Node | None) -> list[StateSpec]:
    out: list[StateSpec] = []
    for item in reader.sequence(node, "automaton.states"):
        if not isinstance(item.value, dict):
            name = reader.string(item, "state name", required=True)
            if name:
                out.append(StateSpec(name, loc=item.loc))
            continue
        m = reader.mapping(item, "a state", STATE_KEYS)
        if m is None:
            continue
        name_node = reader.require(m, "name", "a state")
        for binding, _loc in _bindings(reader, m):
            try:
                name = _render(name_node.value, binding) if name_node else ""
            except _Bad as exc:
                reader.error(f"bad family expression: {exc}", name_node.loc if name_node else None)
                break
            if not name:
                continue
            frozen = _frozen(binding)
            question = _text(reader, Reader.get(m, "question"), frozen, "question")
            template = reader.string(Reader.get(m, "template"), "template")
            out.append(StateSpec(name, question, template, name_node.loc if name_node else m.loc))
    return out


def _symbols(value: Any) -> tuple[str, ...]:
    if isinstance(value, list):
        return tuple(str(v.value) for v in value if v.value is not None)
    words = str(value).split()
    if len(words) == 1 and words[0] in EPSILON:
        return ()
    return tuple(words)


def _transition(reader: Reader, m: Node, binding: dict[str, Any]) -> TransitionSpec | None:
    get = Reader.get

    def field(key: str) -> str | None:
        node = get(m, key)
        if node is None or node.value is None:
            return None
        try:
            return _render(node.value, binding)
        except _Bad as exc:
            raise _Located(f"bad family expression: {exc}", node.loc) from None

    source, target = field("from"), field("to")
    read = field("input")
    if read is not None and (read == "" or read in EPSILON):
        read = None
    pop = field("pop")
    if pop is not None and pop in ANY_SPELLINGS:
        pop = ANY
    push_node = get(m, "push")
    push: tuple[str, ...] | None = None
    if push_node is not None:
        raw = (
            [_render(v.value, binding) for v in push_node.value]
            if isinstance(push_node.value, list)
            else _symbols(_render(push_node.value, binding) if push_node.value is not None else "")
        )
        push = tuple(ANY if s in ANY_SPELLINGS else s for s in raw if s not in EPSILON)
    frozen = _frozen(binding)
    step_node = get(m, "step")
    step: list[tuple[str, Text]] = []
    if step_node is not None and isinstance(step_node.value, dict):
        for key, value, _loc in reader.items(step_node):
            t = _text(reader, value, frozen, f"step.{key}")
            if t is not None:
                step.append((key, t))
    elif step_node is not None:
        t = _text(reader, step_node, frozen, "step")
        if t is not None:
            step.append(("text", t))
    return TransitionSpec(
        source=source or "",
        target=target or "",
        read=read,
        pop=pop,
        push=push,
        count=field("count"),
        option=_text(reader, get(m, "option"), frozen, "option"),
        step=tuple(step),
        note=_note(reader, get(m, "note"), frozen),
        loc=m.loc,
    )


def _note(reader: Reader, node: Node | None, frozen: Binding) -> NoteSpec | None:
    """Read a transition's ``note: {ask, language, max_tokens}``; a bad language is located."""
    m = reader.mapping(node, "a note", NOTE_KEYS)
    if m is None:
        return None
    ask = _text(reader, Reader.get(m, "ask"), frozen, "note.ask")
    if ask is None:
        reader.error("a note needs 'ask': what the model should write", m.loc)
        return None
    language_node = Reader.get(m, "language")
    spelling = reader.string(language_node, "note.language") or "line"
    try:
        language = language_from_text(spelling)
    except LanguageError as exc:
        where = language_node.loc if language_node is not None else m.loc
        reader.error(f"note.language: {exc}", where)
        return None
    tokens = reader.integer(Reader.get(m, "max_tokens"), "note.max_tokens", minimum=1)
    if tokens is not None and tokens > MAX_NOTE_TOKENS:
        reader.error(f"note.max_tokens is at most {MAX_NOTE_TOKENS}, got {tokens}", m.loc)
        tokens = MAX_NOTE_TOKENS
    return NoteSpec(ask, language, tokens or 60, m.loc)


def _transitions(reader: Reader, node: Node | None) -> list[TransitionSpec]:
    out: list[TransitionSpec] = []
    for item in reader.sequence(node, "automaton.transitions"):
        m = reader.mapping(item, "a transition", TRANSITION_KEYS)
        if m is None:
            continue
        for key in ("from", "to"):
            reader.require(m, key, "a transition")
        for binding, _loc in _bindings(reader, m):
            try:
                t = _transition(reader, m, binding)
            except _Located as exc:
                reader.error(str(exc), exc.loc)
                break
            except _Bad as exc:
                reader.error(f"bad family expression: {exc}", m.loc)
                break
            if t is not None:
                out.append(t)
    return out


def _counters(reader: Reader, node: Node | None) -> list[CounterSpec]:
    out: list[CounterSpec] = []
    if reader.mapping(node, "automaton.counters") is None:
        return out
    for name, value, loc in reader.items(node):
        if isinstance(value.value, int) and not isinstance(value.value, bool):
            n = reader.integer(value, f"counter '{name}'", 0)
            out.append(CounterSpec(name, n or 0, n, loc))
            continue
        m = reader.mapping(value, f"counter '{name}'", COUNTER_KEYS)
        low = reader.integer(Reader.get(m, "min"), f"counter '{name}' min", 0) or 0
        high = reader.integer(Reader.get(m, "max"), f"counter '{name}' max", 0, allow_null=True)
        if high is not None and high < low:
            reader.error(f"counter '{name}' has max {high} below min {low}", loc)
        out.append(CounterSpec(name, low, high, loc))
    return out


def read_automaton(reader: Reader, node: Node | None) -> AutomatonSpec | None:
    """Read and expand an ``automaton:`` section; structural checks are in ``check_automaton``."""
    m = reader.mapping(node, "automaton", AUTOMATON_KEYS)
    if m is None:
        return None
    get = Reader.get
    start = reader.string(reader.require(m, "start", "automaton"), "automaton.start") or ""
    accept_node = reader.require(m, "accept", "automaton")
    accept: tuple[str, ...] = ()
    tops: tuple[str, ...] = ()
    if accept_node is not None and isinstance(accept_node.value, dict):
        a = reader.mapping(accept_node, "automaton.accept", ACCEPT_KEYS)
        accept = _names(reader, get(a, "states"), "accept.states")
        tops = _names(reader, get(a, "stack_top"), "accept.stack_top")
    elif accept_node is not None:
        accept = _names(reader, accept_node, "automaton.accept")
    stack = reader.mapping(get(m, "stack"), "automaton.stack", STACK_KEYS)
    alphabet = _names(reader, get(stack, "alphabet"), "stack.alphabet")
    initial_node = get(stack, "initial")
    initial = _symbols(initial_node.value) if initial_node is not None else ()
    order_node = get(m, "order")
    order = reader.string(order_node, "automaton.order") or "forward"
    if order not in ("forward", "reverse"):
        reader.error(f"order must be 'forward' or 'reverse', got '{order}'", order_node.loc)  # type: ignore[union-attr]
        order = "forward"
    return AutomatonSpec(
        states=tuple(_states(reader, reader.require(m, "states", "automaton"))),
        start=start,
        accept=accept,
        accept_stack=tops,
        stack_alphabet=alphabet,
        initial_stack=initial,
        transitions=tuple(_transitions(reader, reader.require(m, "transitions", "automaton"))),
        counters=tuple(_counters(reader, get(m, "counters"))),
        order=order,  # type: ignore[arg-type]
        loc=m.loc,
    )


def _names(reader: Reader, node: Node | None, what: str) -> tuple[str, ...]:
    if node is None or node.value is None:
        return ()
    if not isinstance(node.value, list):
        return (str(node.value),)
    return tuple(str(v.value) for v in reader.sequence(node, what) if v.value is not None)


def render_text(text: Text | None, variables: dict[str, str], state: str = "") -> str:
    """Render a text field with its binding and the scenario variables."""
    if text is None:
        return ""
    ctx: dict[str, Any] = {"state": state, **variables, **dict(text.binding)}
    try:
        return _render(text.source, ctx)
    except _Bad as exc:
        raise FllmError(str(exc), location=text.loc) from None
