"""Read a domain YAML file into a :class:`Domain`, collecting every diagnostic on the way."""

from __future__ import annotations

from pathlib import Path

from fllm_cli.diagnostics import Diagnostic, Location, did_you_mean
from fllm_cli.domain.automaton import read_automaton, read_vars
from fllm_cli.domain.kinds import KINDS, Read, check_kind, implied_kind, kind_names
from fllm_cli.domain.model import (
    Domain,
    GrammarSpec,
    Limits,
    Modality,
    Production,
    SetSpec,
    SymbolInfo,
    TaskInterface,
    Tool,
)
from fllm_cli.domain.yamlloc import Node, Reader, load
from fllm_cli.errors import SpecError
from fllm_cli.resources import resolve_spec_path
from fllm_cli.textio import MAX_SPEC_BYTES, read_text, size_reason, too_big

# The sections every kind may use; a kind's own sections come from its row (domain/kinds.py).
COMMON_KEYS = {
    "fllm",
    "name",
    "description",
    "kind",
    "modalities",
    "tools",
    "task",
    "grammar",
    "limits",
    "prompts",
    "intro",
    "vars",
}
TOOL_KEYS = {"name", "description", "inputs", "output", "max_uses"}
TASK_KEYS = {"inputs", "outputs", "max_inputs"}
LIMIT_KEYS = {"max_uses", "max_plan_steps", "allow_empty_plan", "use_every_input"}
GRAMMAR_KEYS = {"start", "nonterminals", "terminals", "productions", "sets"}
SET_KEYS = {"elements", "phrase", "question", "step"}
ALTERNATIVE_KEYS = {"rhs", "step"}
SYMBOL_KEYS = {"phrase", "description", "max_uses"}
MODALITY_KEYS = {"phrase", "description"}
EPSILON = {"ε", "eps", "epsilon"}
MAX_SET_ELEMENTS = 200


def read_domain(
    path: str | Path, text: str | None = None
) -> tuple[Domain | None, list[Diagnostic]]:
    """Parse and check a domain file; return the domain (None if unusable) and diagnostics.

    ``text`` is the file's content when the caller has read it already.
    """
    resolved = resolve_spec_path(path)
    shown = str(path)
    try:
        if text is None:
            reason = too_big(resolved, MAX_SPEC_BYTES)
            if reason is not None:
                return None, [Diagnostic("error", reason, Location(shown))]
            text = resolved.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, [Diagnostic("error", "no such file", Location(shown))]
    except IsADirectoryError:
        return None, [Diagnostic("error", "is a folder, not a spec file", Location(shown))]
    except UnicodeDecodeError:
        return None, [Diagnostic("error", "not UTF-8 text", Location(shown))]
    except OSError as exc:
        return None, [Diagnostic("error", f"cannot read: {exc.strerror}", Location(shown))]
    if len(text) > MAX_SPEC_BYTES:  # read by the caller: its characters, at least as many bytes
        message = size_reason(len(text.encode("utf-8")), MAX_SPEC_BYTES)
        return None, [Diagnostic("error", message, Location(shown))]
    root, diags = load(text, shown)
    if root is None:
        return None, diags
    reader = Reader(shown)
    reader.diagnostics.extend(diags)
    domain = _domain(reader, root, shown, resolved)
    return domain, reader.diagnostics


def load_domain(path: str | Path) -> Domain:
    """Return the parsed domain at ``path`` or raise SpecError with every problem found.

    Only reading and structure: the checks that compile the domain for its kind run in
    ``fllm_cli.kinds.check_domain`` (``fllm_cli.api.load_domain`` runs both).
    """
    # A file that cannot be read at all is a misuse of the command (exit 2), not a bad spec.
    text = read_text(resolve_spec_path(path), "domain file")
    domain, diags = read_domain(path, text)
    if domain is None or any(d.severity == "error" for d in diags):
        raise SpecError(diags)
    return domain


def _domain(reader: Reader, root: Node, shown: str, resolved: Path) -> Domain | None:
    top_keys = COMMON_KEYS.union(*(row.sections for row in KINDS.values()))
    top = reader.mapping(root, "the spec", top_keys)
    if top is None:
        return None
    get = Reader.get
    version = get(top, "fllm")
    if version is not None and version.value not in (1, "1"):
        reader.error(f"unsupported spec version {version.value!r} (this fllm reads 1)", version.loc)
    name = reader.string(get(top, "name"), "name") or Path(shown).stem
    description = reader.string(get(top, "description"), "description") or ""
    intro = reader.string(get(top, "intro"), "intro") or ""
    limits = _limits(reader, get(top, "limits"))
    modalities = _modalities(reader, get(top, "modalities"))
    tools = _tools(reader, get(top, "tools"), limits)
    task = _task(reader, get(top, "task"))
    grammar = _grammar(reader, get(top, "grammar"))
    automaton = read_automaton(reader, get(top, "automaton"))
    variables = read_vars(reader, get(top, "vars"))
    prompts, prompt_locs = _prompts(reader, get(top, "prompts"))
    intro_node = get(top, "intro")
    if intro_node is not None:  # where check_templates points when the intro cannot render
        prompt_locs = {**prompt_locs, "intro": intro_node.loc}
    read = Read(top, tools, grammar, automaton)
    kind_node = get(top, "kind")
    kind = reader.string(kind_node, "kind")
    if kind is None:
        kind = implied_kind(read)
    if kind not in KINDS:
        reader.error(
            f"kind must be {kind_names()}, got '{kind}'{did_you_mean(kind, KINDS)}",
            kind_node.loc if kind_node else None,
        )
        return None
    sections = check_kind(reader, kind, read)
    folder = str(resolved.parent)
    return Domain(
        path=shown,
        name=name,
        description=description,
        kind=kind,
        modalities=modalities,
        tools=tools,
        task=task,
        grammar=grammar,
        automaton=automaton,
        vars=variables,
        limits=limits,
        prompts=prompts,
        prompt_dirs=(folder, str(Path(folder) / "prompts")),
        prompt_locs=prompt_locs,
        intro=intro,
        sections=sections,
    )


def _limits(reader: Reader, node: Node | None) -> Limits:
    m = reader.mapping(node, "limits", LIMIT_KEYS)
    if m is None:
        return Limits()
    get = Reader.get
    max_uses_node = get(m, "max_uses")
    max_uses = (
        1
        if max_uses_node is None
        else reader.integer(max_uses_node, "limits.max_uses", 1, allow_null=True)
    )
    steps = reader.integer(get(m, "max_plan_steps"), "limits.max_plan_steps", 1, allow_null=True)
    empty = reader.boolean(get(m, "allow_empty_plan"), "limits.allow_empty_plan")
    every = reader.boolean(get(m, "use_every_input"), "limits.use_every_input")
    return Limits(
        max_uses=max_uses,
        max_plan_steps=steps,
        allow_empty_plan=bool(empty),
        use_every_input=True if every is None else bool(every),
    )


def _modalities(reader: Reader, node: Node | None) -> tuple[Modality, ...]:
    out: list[Modality] = []
    if node is None:
        return ()
    if isinstance(node.value, list):
        for item in node.value:
            name = reader.string(item, "modality name", required=True)
            if name:
                out.append(Modality(name, name, "", item.loc))
        return tuple(out)
    if reader.mapping(node, "modalities") is None:
        return ()
    for name, value, loc in reader.items(node):
        phrase, description = name, ""
        if isinstance(value.value, str):
            phrase = value.value
        elif value.value is not None:
            m = reader.mapping(value, f"modality '{name}'", MODALITY_KEYS)
            phrase = reader.string(Reader.get(m, "phrase"), "phrase") or name
            description = reader.string(Reader.get(m, "description"), "description") or ""
        out.append(Modality(name, phrase, description, loc))
    return tuple(out)


def _tools(reader: Reader, node: Node | None, limits: Limits) -> tuple[Tool, ...]:
    out: list[Tool] = []
    for item in reader.sequence(node, "tools"):
        m = reader.mapping(item, "a tool", TOOL_KEYS)
        if m is None:
            continue
        name = reader.string(reader.require(m, "name", "a tool"), "tool name", required=True)
        if not name:
            continue
        what = f"tool '{name}'"
        description = reader.string(Reader.get(m, "description"), f"{what} description") or ""
        inputs_node = reader.require(m, "inputs", what)
        inputs: list[str] = []
        if inputs_node is not None and isinstance(inputs_node.value, str):
            inputs = [inputs_node.value]
        else:
            for i in reader.sequence(inputs_node, f"{what} inputs"):
                s = reader.string(i, f"{what} input", required=True)
                if s:
                    inputs.append(s)
        if inputs_node is not None and not inputs and not isinstance(inputs_node.value, str):
            reader.error(f"{what} needs at least one input modality", inputs_node.loc)
        output = reader.string(reader.require(m, "output", what), f"{what} output", required=True)
        uses_node = Reader.get(m, "max_uses")
        uses = (
            limits.max_uses
            if uses_node is None
            else reader.integer(uses_node, f"{what} max_uses", 1, allow_null=True)
        )
        loc = m.loc
        out.append(Tool(name, description, tuple(inputs), output or "", uses, loc))
    return tuple(out)


def _task(reader: Reader, node: Node | None) -> TaskInterface | None:
    m = reader.mapping(node, "task", TASK_KEYS)
    if m is None:
        return None

    def names(key: str) -> tuple[str, ...]:
        child = Reader.get(m, key)
        if child is not None and isinstance(child.value, str):
            return (child.value,)
        return tuple(
            s
            for s in (
                reader.string(i, f"task.{key} item") for i in reader.sequence(child, f"task.{key}")
            )
            if s
        )

    max_inputs = reader.integer(Reader.get(m, "max_inputs"), "task.max_inputs", 1, allow_null=True)
    return TaskInterface(names("inputs"), names("outputs"), max_inputs, m.loc)


def _prompts(reader: Reader, node: Node | None) -> tuple[dict[str, str], dict[str, Location]]:
    m = reader.mapping(node, "prompts")
    out: dict[str, str] = {}
    locs: dict[str, Location] = {}
    for key, value, loc in reader.items(m):
        text = reader.string(value, f"prompts.{key}", required=True)
        if text:
            out[key] = text
            locs[key] = loc
    return out, locs


def _symbol_infos(
    reader: Reader, node: Node | None, what: str, allow_limit: bool
) -> tuple[SymbolInfo, ...]:
    out: list[SymbolInfo] = []
    if node is None:
        return ()
    if isinstance(node.value, list):
        for item in node.value:
            name = reader.string(item, f"{what} name", required=True)
            if name:
                out.append(SymbolInfo(name, loc=item.loc))
        return tuple(out)
    if reader.mapping(node, what) is None:
        return ()
    keys = SYMBOL_KEYS if allow_limit else SYMBOL_KEYS - {"max_uses"}
    for name, value, loc in reader.items(node):
        if value.value is None or isinstance(value.value, str):
            text = value.value or ""
            out.append(SymbolInfo(name, phrase=text, description=text, loc=loc))
            continue
        m = reader.mapping(value, f"{what[:-1]} '{name}'", keys)
        get = Reader.get
        phrase = reader.string(get(m, "phrase"), "phrase") or ""
        desc = reader.string(get(m, "description"), "description") or ""
        limit = reader.integer(get(m, "max_uses"), "max_uses", 1, allow_null=True)
        out.append(SymbolInfo(name, phrase or desc, desc or phrase, limit, loc))
    return tuple(out)


def _alternatives(
    reader: Reader, lhs: str, node: Node
) -> list[tuple[tuple[str, ...], Location, str]]:
    """Accept ``"a S b | ε"``, ``["a S b", "ε"]``, ``[[a, S, b], []]`` or ``[{rhs, step}]``."""
    raw: list[tuple[object, Location, str]] = []
    if isinstance(node.value, str):
        raw = [(part, node.loc, "") for part in node.value.split("|")]
    elif isinstance(node.value, list):
        if not node.value:
            reader.error(f"'{lhs}' has no alternatives", node.loc)
        for item in node.value:
            if isinstance(item.value, dict):
                m = reader.mapping(item, f"an alternative of '{lhs}'", ALTERNATIVE_KEYS)
                rhs = reader.require(m, "rhs", f"an alternative of '{lhs}'")
                step = reader.string(Reader.get(m, "step"), "step") or ""
                if rhs is not None:
                    raw.append((rhs.value if rhs.value is not None else "ε", item.loc, step))
            else:
                raw.append((item.value, item.loc, ""))
    else:
        reader.error(
            f"productions of '{lhs}' must be a string or a list, got {node.form}", node.loc
        )
    out: list[tuple[tuple[str, ...], Location, str]] = []
    for value, loc, step in raw:
        if isinstance(value, str):
            words = value.split()
            if not words:
                reader.error(f"empty alternative in '{lhs}' (write ε for the empty word)", loc)
                continue
            symbols = () if len(words) == 1 and words[0] in EPSILON else tuple(words)
        elif isinstance(value, list):
            symbols = tuple(str(v.value) for v in value if v.value is not None)
            symbols = tuple(s for s in symbols if s not in EPSILON)
        else:
            reader.error(f"an alternative of '{lhs}' must be a string or a list", loc)
            continue
        out.append((symbols, loc, step))
    return out


def _grammar(reader: Reader, node: Node | None) -> GrammarSpec | None:
    m = reader.mapping(node, "grammar", GRAMMAR_KEYS)
    if m is None:
        return None
    get = Reader.get
    start_node = reader.require(m, "start", "grammar")
    start = reader.string(start_node, "grammar.start", required=True) or ""
    nts = _symbol_infos(reader, get(m, "nonterminals"), "nonterminals", allow_limit=False)
    terms = _symbol_infos(reader, reader.require(m, "terminals", "grammar"), "terminals", True)
    prods: list[Production] = []
    locs: list[Location] = []
    pnode = reader.mapping(reader.require(m, "productions", "grammar"), "grammar.productions")
    for lhs, value, _loc in reader.items(pnode):
        for rhs, loc, step in _alternatives(reader, lhs, value):
            prods.append(Production(lhs, rhs, step))
            locs.append(loc)
    sets = _sets(reader, get(m, "sets"))
    declared = {s.name for s in nts}
    for st in sets:
        if st.name in declared or any(p.lhs == st.name for p in prods):
            reader.error(f"set '{st.name}' also has productions or is declared as a symbol", st.loc)
        nts = (*nts, SymbolInfo(st.name, st.phrase, st.phrase, loc=st.loc))
        declared.add(st.name)
    for lhs, _value, loc in reader.items(pnode):
        if lhs not in declared:
            nts = (*nts, SymbolInfo(lhs, loc=loc))
            declared.add(lhs)
    term_names = {t.name for t in terms}
    for t in terms:
        if t.name in declared:
            reader.error(f"'{t.name}' is declared both as a terminal and a nonterminal", t.loc)
    for p, loc in zip(prods, locs):
        for sym in p.rhs:
            if sym not in declared and sym not in term_names:
                hint = did_you_mean(sym, declared | term_names)
                reader.error(f"undefined symbol '{sym}' in a production of '{p.lhs}'{hint}", loc)
    if start and start not in declared:
        hint = did_you_mean(start, declared)
        reader.error(
            f"start symbol '{start}' has no productions{hint}",
            start_node.loc if start_node else m.loc,
        )
    return GrammarSpec(start, nts, terms, tuple(prods), tuple(locs), m.loc, sets)


def _sets(reader: Reader, node: Node | None) -> tuple[SetSpec, ...]:
    out: list[SetSpec] = []
    if reader.mapping(node, "grammar.sets") is None:
        return ()
    for name, value, loc in reader.items(node):
        m = reader.mapping(value, f"set '{name}'", SET_KEYS)
        get = Reader.get
        elements_node = reader.require(m, "elements", f"set '{name}'")
        elements = [
            s
            for s in (
                reader.string(e, "element") for e in reader.sequence(elements_node, "elements")
            )
            if s
        ]
        if elements_node is not None and not elements:
            reader.error(f"set '{name}' needs at least one element", elements_node.loc)
        if len(set(elements)) != len(elements):
            reader.error(f"set '{name}' lists an element twice", elements_node.loc)  # type: ignore[union-attr]
        if len(elements) > MAX_SET_ELEMENTS:
            reader.error(
                f"set '{name}' has {len(elements)} elements; at most {MAX_SET_ELEMENTS} "
                "(each is one yes/no question to the model)",
                elements_node.loc,  # type: ignore[union-attr]
            )
            elements = elements[:MAX_SET_ELEMENTS]
        out.append(
            SetSpec(
                name,
                tuple(elements),
                reader.string(get(m, "phrase"), "phrase") or name,
                reader.string(get(m, "question"), "question") or "",
                reader.string(get(m, "step"), "step") or "",
                loc,
            )
        )
    return tuple(out)
