"""Agent specs: states (tag, environment input, content choices or language) and a behaviour.

Two surface forms load into the same :class:`AgentSpec`: the paper's PDDL-style s-expression
(``(define NAME (:states ...) (:behavior ...))``) and a YAML mapping under a top-level ``agent:``
key. Both collect every problem as a located diagnostic instead of stopping at the first.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fllm_cli.content import Language, LanguageError, language_from_text, make_language
from fllm_cli.diagnostics import Diagnostic, Location, did_you_mean
from fllm_cli.domain import yamlloc
from fllm_cli.errors import SpecError, UsageError
from fllm_cli.ltl.formula import Formula, atoms_in_order, parse_formula
from fllm_cli.resources import resolve_spec_path
from fllm_cli.sexp import Atom, SExp, SList, read, show
from fllm_cli.textio import MAX_SPEC_BYTES, read_text

TOOLS = ":tools"  # the choices marker meaning 'the names of the available tools'


@dataclass(frozen=True)
class StateDecl:
    """One agent state: its name, the tag that prompts and delimits it, who fills it."""

    name: str
    text: str
    env_input: bool = False
    choices: tuple[str, ...] | None = None
    loc: Location | None = None
    language: Language | None = None  # the language the state's text must belong to
    max_tokens: int | None = None  # at most this many tokens per text (below --max-tokens)

    @property
    def tool_choices(self) -> bool:
        """Return True when the state must name one of the available tools."""
        return self.choices == (TOOLS,)


@dataclass(frozen=True)
class AgentSpec:
    """A validated agent: states, behaviour, start and final state."""

    name: str
    path: str
    states: tuple[StateDecl, ...]
    behavior: Formula
    start: str
    final: str
    prompt: str | None = None
    behavior_loc: Location | None = None

    def state(self, name: str) -> StateDecl:
        """Return the declaration of state ``name``."""
        for decl in self.states:
            if decl.name == name:
                return decl
        raise KeyError(name)

    @property
    def names(self) -> tuple[str, ...]:
        """Return the state names in declaration order."""
        return tuple(s.name for s in self.states)


@dataclass
class _Draft:
    """What the surface readers collect before the shared checks."""

    path: str
    name: str = "agent"
    states: list[StateDecl] | None = None
    behavior: SExp | None = None
    behavior_loc: Location | None = None
    start: Atom | None = None
    final: Atom | None = None
    prompt: str | None = None


class _Collector:
    def __init__(self, path: str) -> None:
        self.path = path
        self.diagnostics: list[Diagnostic] = []

    def error(self, message: str, loc: Location | None) -> None:
        self.diagnostics.append(Diagnostic("error", message, loc or Location(self.path)))

    def warning(self, message: str, loc: Location | None) -> None:
        self.diagnostics.append(Diagnostic("warning", message, loc or Location(self.path)))


# --------------------------------------------------------------------- s-expression form

_SECTIONS = (":states", ":behavior", ":start", ":final", ":prompt")
_STATE_KEYS = (":text", ":flags", ":choices", ":language", ":max-tokens")
_LANGUAGE_KEYS = (":regex", ":json-schema", ":gbnf")


def _read_sexp(text: str, path: str, out: _Collector) -> _Draft:
    forms, diags = read(text, path)
    out.diagnostics.extend(diags)
    draft = _Draft(path)
    defines = [f for f in forms if isinstance(f, SList) and f.head == "define"]
    if not defines:
        out.error("expected (define NAME (:states ...) (:behavior ...))", Location(path, 1, 1))
        return draft
    define = defines[0]
    items = list(define.items[1:])
    first = items[0] if items else None
    if isinstance(first, Atom) and not first.is_keyword:
        draft.name = first.value
        items.pop(0)
    else:
        out.error("define needs a name, e.g. (define my-agent ...)", define.loc)
    for form in forms:
        if form is define:
            continue
        if isinstance(form, SList) and form.head in _SECTIONS:
            # Figure 4b of the paper closes its define early; keep the section, but say so.
            out.warning(f"({form.head} ...) is outside the define; check the parentheses", form.loc)
            items.append(form)
        else:
            out.error(f"unexpected top-level form {show(form)[:40]}", form.loc)
    draft.states = []
    for item in items:
        _read_section(item, draft, out)
    return draft


def _read_section(item: SExp, draft: _Draft, out: _Collector) -> None:
    if not isinstance(item, SList) or item.head is None:
        out.error(f"expected a (:section ...), got {show(item)[:40]}", item.loc)
        return
    head = item.head
    args = item.items[1:]
    if head == ":states":
        for entry in args:
            _read_state_entry(entry, draft, out)
    elif head == ":behavior":
        if len(args) != 1:
            out.error(f":behavior takes one formula, got {len(args)}", item.loc)
        if args:
            draft.behavior, draft.behavior_loc = args[0], args[0].loc
    elif head in (":start", ":final", ":prompt"):
        _read_option(head, args, item, draft, out)
    elif not head.startswith(":") and any(isinstance(a, SList) and a.head == ":text" for a in args):
        out.warning(f"state '{head}' is outside (:states ...); check the parentheses", item.loc)
        _read_state_entry(item, draft, out)
    else:
        out.error(f"unknown section '{head}'{did_you_mean(head, _SECTIONS)}", item.loc)


def _read_option(
    head: str, args: tuple[SExp, ...], item: SList, draft: _Draft, out: _Collector
) -> None:
    if len(args) != 1 or not isinstance(args[0], Atom):
        out.error(f"({head} ...) takes one name", item.loc)
        return
    if head == ":start":
        draft.start = args[0]
    elif head == ":final":
        draft.final = args[0]
    else:
        draft.prompt = args[0].value


def _read_state_entry(entry: SExp, draft: _Draft, out: _Collector) -> None:
    assert draft.states is not None
    if isinstance(entry, SList) and entry.head == ":flags" and draft.states:
        # Figure 4b of the paper closes the Observation state one ')' too early.
        prev = draft.states[-1]
        out.warning(
            f"(:flags ...) after state '{prev.name}' attached to it; check the parentheses",
            entry.loc,
        )
        env = _read_flags(entry, out)
        draft.states[-1] = StateDecl(
            prev.name,
            prev.text,
            env or prev.env_input,
            prev.choices,
            prev.loc,
            prev.language,
            prev.max_tokens,
        )
        return
    if not isinstance(entry, SList) or entry.head is None or entry.head.startswith(":"):
        out.error(f'expected a state like (Name (:text "Tag:")), got {show(entry)[:40]}', entry.loc)
        return
    decl = _read_state(entry, out)
    if decl is not None:
        draft.states.append(decl)


def _read_state(entry: SList, out: _Collector) -> StateDecl | None:
    name = entry.head or ""
    text: str | None = None
    env = False
    choices: tuple[str, ...] | None = None
    language: Language | None = None
    max_tokens: int | None = None
    for prop in entry.items[1:]:
        if not isinstance(prop, SList) or prop.head not in _STATE_KEYS:
            got = prop.head if isinstance(prop, SList) and prop.head else show(prop)[:30]
            out.error(f"unknown state property '{got}'{did_you_mean(got, _STATE_KEYS)}", prop.loc)
            continue
        args = prop.items[1:]
        if prop.head == ":text":
            if len(args) != 1 or not isinstance(args[0], Atom) or not args[0].quoted:
                out.error(':text takes one string, e.g. (:text "Thought:")', prop.loc)
            else:
                text = args[0].value
        elif prop.head == ":flags":
            env = _read_flags(prop, out) or env
        elif prop.head == ":language":
            language = _read_language(prop, name, out)
        elif prop.head == ":max-tokens":
            value = args[0].value if len(args) == 1 and isinstance(args[0], Atom) else ""
            if not value.isdigit() or not 1 <= int(value) <= 100_000:
                out.error(":max-tokens takes a whole number from 1 to 100000", prop.loc)
            else:
                max_tokens = int(value)
        else:
            choices = _read_choices(prop, out)
    if text is None:
        out.error(f"state '{name}' has no (:text \"...\")", entry.loc)
        return None
    return StateDecl(name, text, env, choices, entry.loc, language, max_tokens)


def _read_language(prop: SList, state: str, out: _Collector) -> Language | None:
    """``(:language number)``, ``(:language "yes|no")`` or ``(:language (:regex "..."))``."""
    args = prop.items[1:]
    usage = (
        ":language takes a name (number, integer, yes-no, query, line, arithmetic), a string, "
        'or (:regex "...") / (:json-schema "...") / (:gbnf "...")'
    )
    if len(args) != 1:
        out.error(usage, prop.loc)
        return None
    arg = args[0]
    try:
        if isinstance(arg, Atom):
            if arg.quoted:
                return language_from_text(arg.value)
            return make_language("name", arg.value)
        if arg.head in _LANGUAGE_KEYS and len(arg.items) == 2:
            value = arg.items[1]
            if isinstance(value, Atom) and value.quoted:
                return make_language(arg.head[1:], value.value)
        out.error(usage, arg.loc)
    except LanguageError as exc:
        out.error(f"state '{state}': {exc}", arg.loc)
    return None


def _read_flags(prop: SList, out: _Collector) -> bool:
    env = False
    for flag in prop.items[1:]:
        if isinstance(flag, Atom) and flag.value == ":env-input":
            env = True
        else:
            out.error(f"unknown flag {show(flag)}; the only flag is :env-input", flag.loc)
    return env


def _read_choices(prop: SList, out: _Collector) -> tuple[str, ...] | None:
    args = prop.items[1:]
    if len(args) == 1 and isinstance(args[0], Atom) and args[0].value == TOOLS:
        return (TOOLS,)
    values = [a.value for a in args if isinstance(a, Atom) and a.quoted]
    if len(values) != len(args) or not values:
        out.error(
            ':choices takes strings, e.g. (:choices "SUPPORTS" "REFUTES"), or :tools', prop.loc
        )
        return None
    return tuple(values)


# --------------------------------------------------------------------- YAML form

_YAML_KEYS = {"name", "states", "behavior", "start", "final", "prompt"}
_YAML_STATE_KEYS = {"text", "env-input", "choices", "language", "max-tokens"}


def _read_yaml(text: str, path: str, out: _Collector) -> _Draft:
    draft = _Draft(path)
    root, diags = yamlloc.load(text, path)
    out.diagnostics.extend(diags)
    reader = yamlloc.Reader(path)
    top = reader.mapping(root, "the file")
    agent = reader.mapping(reader.require(top, "agent", "the file"), "agent", _YAML_KEYS)
    if agent is not None:
        draft.name = reader.string(reader.get(agent, "name"), "agent.name") or Path(path).stem
        draft.states = _yaml_states(reader.get(agent, "states"), reader)
        draft.behavior = _yaml_behavior(reader.require(agent, "behavior", "agent"), out)
        node = reader.get(agent, "behavior")
        draft.behavior_loc = node.loc if node else None
        for key in ("start", "final"):
            node = reader.get(agent, key)
            value = reader.string(node, f"agent.{key}")
            if value is not None and node is not None:
                setattr(draft, key, Atom(value, node.loc))
        draft.prompt = reader.string(reader.get(agent, "prompt"), "agent.prompt")
        if reader.get(agent, "states") is None:
            reader.error("agent is missing required key 'states'", agent.loc)
    out.diagnostics.extend(reader.diagnostics)
    return draft


def _yaml_states(node: yamlloc.Node | None, reader: yamlloc.Reader) -> list[StateDecl]:
    states: list[StateDecl] = []
    for name, value, loc in reader.items(reader.mapping(node, "agent.states")):
        what = f"state '{name}'"
        body = reader.mapping(value, what, _YAML_STATE_KEYS)
        text = reader.string(reader.require(body, "text", what), f"{what} text", required=True)
        env = reader.boolean(reader.get(body, "env-input"), f"{what} env-input") or False
        choices_node = reader.get(body, "choices")
        choices: tuple[str, ...] | None = None
        if choices_node is not None and choices_node.value == "tools":
            choices = (TOOLS,)
        elif choices_node is not None:
            items = [
                reader.string(c, f"{what} choice")
                for c in reader.sequence(choices_node, f"{what} choices")
            ]
            choices = tuple(c for c in items if c) or None
        language = _yaml_language(reader.get(body, "language"), what, reader)
        bound = reader.get(body, "max-tokens")
        max_tokens = reader.integer(bound, f"{what} max-tokens") if bound is not None else None
        if max_tokens is not None and not 1 <= max_tokens <= 100_000:
            reader.error(f"{what} max-tokens must be from 1 to 100000", bound.loc if bound else loc)
            max_tokens = None
        if text is not None:
            states.append(StateDecl(name, text, env, choices, loc, language, max_tokens))
    return states


def _yaml_language(node: yamlloc.Node | None, what: str, reader: yamlloc.Reader) -> Language | None:
    """``language: number`` or ``"yes|no"``, or ``{regex|json-schema|gbnf: ...}``."""
    if node is None:
        return None
    try:
        if isinstance(node.value, str):
            return language_from_text(node.value)
        if isinstance(node.value, dict) and len(node.value) == 1:
            ((form, value),) = node.value.items()
            if form in ("regex", "gbnf") and isinstance(value.value, str):
                return make_language(form, value.value)
            if form == "json-schema" and isinstance(value.value, (dict, str)):
                return make_language(form, value.plain())
    except LanguageError as exc:
        reader.error(f"{what}: {exc}", node.loc)
        return None
    reader.error(
        f"{what} language must be a name or regex string, or one of "
        "{regex: ...}, {json-schema: ...}, {gbnf: ...}",
        node.loc,
    )
    return None


def _yaml_behavior(node: yamlloc.Node | None, out: _Collector) -> SExp | None:
    if node is None:
        return None
    if isinstance(node.value, str):
        # The string holds s-expression text; quoted YAML shifts columns, so point at the value.
        forms, diags = read(node.value, node.loc.path, node.loc.line, node.loc.col)
        out.diagnostics.extend(diags)
        if len(forms) != 1:
            out.error("behavior must be one formula", node.loc)
            return None
        return forms[0]
    return _node_to_sexp(node, out)


def _node_to_sexp(node: yamlloc.Node, out: _Collector) -> SExp | None:
    if isinstance(node.value, list):
        items = [_node_to_sexp(child, out) for child in node.value]
        if any(i is None for i in items):
            return None
        return SList(tuple(i for i in items if i is not None), node.loc, node.loc)
    if isinstance(node.value, str):
        return Atom(node.value, node.loc)
    out.error(f"behavior items must be names or lists, got {node.form}", node.loc)
    return None


# --------------------------------------------------------------------- shared checks


def _check_states(states: list[StateDecl], out: _Collector) -> None:
    seen: dict[str, StateDecl] = {}
    tags: dict[str, StateDecl] = {}
    for decl in states:
        if decl.name in seen:
            out.error(f"state '{decl.name}' is declared twice", decl.loc)
        seen[decl.name] = decl
        tag = decl.text.strip()
        if not tag:
            out.error(f"state '{decl.name}' has an empty :text", decl.loc)
        elif tag in tags:
            out.error(
                f"states '{tags[tag].name}' and '{decl.name}' share the tag {decl.text!r}", decl.loc
            )
        tags[tag] = decl
        if decl.env_input and decl.choices:
            out.error(
                f"state '{decl.name}' is filled by the environment and cannot have :choices",
                decl.loc,
            )
        if decl.language is not None and decl.env_input:
            out.error(
                f"state '{decl.name}' is filled by the environment and cannot have :language",
                decl.loc,
            )
        elif decl.language is not None and decl.choices:
            out.error(f"state '{decl.name}' has both :choices and :language; keep one", decl.loc)


def _finish(draft: _Draft, out: _Collector) -> AgentSpec | None:
    states = draft.states or []
    if not states:
        out.error("the agent declares no states", Location(draft.path, 1, 1))
    _check_states(states, out)
    names = {s.name for s in states}
    if draft.behavior is None:
        out.error("the agent has no behaviour; add (:behavior FORMULA)", Location(draft.path, 1, 1))
        return None
    formula = parse_formula(draft.behavior, names, out.error)
    if formula is None:
        return None
    order = atoms_in_order(formula)
    for decl in states:
        if decl.name not in order:
            out.warning(f"state '{decl.name}' is never used in the behaviour", decl.loc)
    start = _pick(draft.start, order[0], names, "start", out)
    final = _pick(draft.final, order[-1], names, "final", out)
    if start is None or final is None or any(d.severity == "error" for d in out.diagnostics):
        return None
    return AgentSpec(
        draft.name,
        draft.path,
        tuple(states),
        formula,
        start,
        final,
        draft.prompt,
        draft.behavior_loc,
    )


def _pick(
    atom: Atom | None, default: str, names: set[str], what: str, out: _Collector
) -> str | None:
    if atom is None:
        return default
    if atom.value not in names:
        out.error(f"unknown {what} state '{atom.value}'{did_you_mean(atom.value, names)}", atom.loc)
        return None
    return atom.value


def is_yaml_path(path: str | Path) -> bool:
    """Return True for ``.yaml``/``.yml`` files."""
    return Path(path).suffix.lower() in (".yaml", ".yml")


def parse_spec(text: str, path: str) -> tuple[AgentSpec | None, list[Diagnostic]]:
    """Parse spec text; return the spec (None when there are errors) and all diagnostics."""
    out = _Collector(path)
    draft = _read_yaml(text, path, out) if is_yaml_path(path) else _read_sexp(text, path, out)
    spec = None
    if not any(d.severity == "error" for d in out.diagnostics):
        spec = _finish(draft, out)
    elif draft.states is not None:
        _finish(draft, out)  # still report the behaviour's problems in the same pass
    return spec, out.diagnostics


def read_spec_text(path: str) -> tuple[str, str]:
    """Return ``(resolved path, text)`` of a spec file, or raise UsageError."""
    resolved = resolve_spec_path(path)
    try:
        return str(resolved), read_text(resolved, "agent spec", MAX_SPEC_BYTES)
    except UsageError as exc:  # name the path the user gave, not the resolved one
        raise UsageError(exc.message.replace(str(resolved), path)) from None


def load_spec(path: str) -> AgentSpec:
    """Load and check the spec at ``path``; raise SpecError with every diagnostic."""
    resolved, text = read_spec_text(path)
    spec, diagnostics = parse_spec(text, resolved)
    if spec is None:
        raise SpecError(diagnostics)
    return spec
