"""Compile a domain (and a concrete task) into a CFG.

A tool domain becomes the paper's grammar (Eq. 3 + 4) with one production per tool,
``output → tool input1 … inputK``, one production ``M → input:NAME`` per task input of
modality M, and the task's output modality as the start symbol. Tools are terminals limited to
their ``max_uses``; task inputs are unlimited terminals.
"""

from __future__ import annotations

from collections import Counter

from fllm_cli.diagnostics import did_you_mean
from fllm_cli.domain.model import Domain, GrammarSpec, SetSpec, Task
from fllm_cli.errors import UsageError
from fllm_cli.grammar.cfg import Grammar, Production, Terminal

GENERIC_START = "S"


def parse_inputs(specs: list[str] | tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """Turn ``--input`` values (``image``, ``query=text``) into unique (name, modality) pairs."""
    seen: Counter[str] = Counter()
    named: set[str] = set()
    out: list[tuple[str, str]] = []
    for spec in specs:
        name, sep, modality = spec.partition("=")
        if not sep:
            name, modality = "", spec
        name, modality = name.strip(), modality.strip()
        if not modality or (sep and not name):
            raise UsageError(f"bad --input '{spec}': write MODALITY or NAME=MODALITY")
        if not name:
            seen[modality] += 1
            name = modality if seen[modality] == 1 else f"{modality}_{seen[modality]}"
        if name in named:
            raise UsageError(f"two task inputs are named '{name}'")
        if any(c in name for c in " \t\n,"):
            raise UsageError(f"task input name '{name}' must not contain spaces or commas")
        named.add(name)
        out.append((name, modality))
    return tuple(out)


def make_task(domain: Domain, text: str, inputs: list[str], output: str | None) -> Task:
    """Build a Task for a tool domain, checking it against the domain's task interface."""
    if output is None:
        raise UsageError("--output is required for this command")
    pairs = parse_inputs(inputs)
    known = [m.name for m in domain.modalities]
    iface = domain.task
    for _name, modality in pairs:
        if modality not in known:
            raise UsageError(f"unknown modality '{modality}'{did_you_mean(modality, known)}")
        if iface is not None and iface.inputs and modality not in iface.inputs:
            raise UsageError(
                f"the task interface of '{domain.name}' does not accept {modality} inputs "
                f"(it accepts: {', '.join(iface.inputs)})"
            )
    if iface is not None and iface.max_inputs is not None and len(pairs) > iface.max_inputs:
        raise UsageError(f"at most {iface.max_inputs} task inputs are allowed, got {len(pairs)}")
    if output not in known:
        raise UsageError(f"unknown output modality '{output}'{did_you_mean(output, known)}")
    if iface is not None and iface.outputs and output not in iface.outputs:
        raise UsageError(
            f"the task interface of '{domain.name}' does not produce {output} "
            f"(it produces: {', '.join(iface.outputs)})"
        )
    if not pairs:
        raise UsageError("a tool task needs at least one --input")
    return Task(text=text, inputs=pairs, output=output)


def default_task(domain: Domain) -> Task:
    """A task with one input per allowed input modality and a generic start over the outputs."""
    iface = domain.task
    modalities = [m.name for m in domain.modalities]
    ins = iface.inputs if iface and iface.inputs else tuple(modalities)
    return Task(text="", inputs=tuple((m, m) for m in ins), output="")


def tool_grammar(domain: Domain, task: Task) -> Grammar:
    """Compile a tool domain and task into the planning grammar."""
    terminals: list[Terminal] = []
    productions: list[Production] = []
    for tool in domain.tools:
        terminals.append(Terminal(tool.name, tool.description, tool.max_uses, "tool", tool.name))
        productions.append(Production(tool.output, (tool.name, *tool.inputs), tool.description))
    phrases = {m.name: m.phrase for m in domain.modalities}
    required = []
    for name, modality in task.inputs:
        term = task.input_terminal(name)
        required.append(term)
        shown = phrases.get(modality, modality)
        label = f"input {shown}" if name == modality else f"input {name} ({shown})"
        terminals.append(Terminal(term, f"the task's {label}", None, "input", label))
        productions.append(Production(modality, (term,), f"the task's {label}"))
    nonterminals = [m.name for m in domain.modalities]
    start = task.output
    if not start:
        start = GENERIC_START
        while start in nonterminals:
            start += "'"
        outs = domain.task.outputs if domain.task and domain.task.outputs else tuple(nonterminals)
        productions.extend(Production(start, (m,)) for m in outs)
        nonterminals.insert(0, start)
        phrases[start] = "final output"
    return Grammar(
        start=start,
        nonterminals=tuple(nonterminals),
        terminals=tuple(terminals),
        productions=tuple(productions),
        require_tool=not domain.limits.allow_empty_plan,
        max_tools=domain.limits.max_plan_steps,
        phrases=phrases,
        required=frozenset(required) if domain.limits.use_every_input else frozenset(),
    )


def set_terminal(s: SetSpec, element: str) -> str:
    """Return the terminal that puts ``element`` into set ``s`` ("A:ginger")."""
    return f"{s.name}:{element}"


def set_links(spec: GrammarSpec) -> dict[str, tuple[SetSpec, int]]:
    """Map each nonterminal of a set's yes/no chain to (its set, the element it decides)."""
    out: dict[str, tuple[SetSpec, int]] = {}
    for s in spec.sets:
        for k, element in enumerate(s.elements):
            out[s.name if k == 0 else f"{s.name}/{element}"] = (s, k)
    return out


def _set_chain(s: SetSpec) -> tuple[list[str], list[Terminal], list[Production]]:
    """``X_k → x_k X_k+1 | X_k+1``: one yes/no decision per element, in the declared order."""
    names = [s.name if k == 0 else f"{s.name}/{e}" for k, e in enumerate(s.elements)]
    terms = [Terminal(set_terminal(s, e), e, None, "symbol", e) for e in s.elements]
    prods: list[Production] = []
    for k, name in enumerate(names):
        rest = (names[k + 1],) if k + 1 < len(names) else ()
        prods.append(Production(name, (terms[k].name, *rest)))
        prods.append(Production(name, rest))
    return names[1:], terms, prods


def explicit_grammar(domain: Domain) -> Grammar:
    """Compile an explicit grammar section (set-valued nonterminals become yes/no chains)."""
    spec = domain.grammar
    assert spec is not None
    terminals = tuple(
        Terminal(t.name, t.description, t.max_uses, "symbol", t.phrase or t.description or t.name)
        for t in spec.terminals
    )
    phrases = {n.name: (n.phrase or n.description or n.name) for n in spec.nonterminals}
    nonterminals = [n.name for n in spec.nonterminals]
    productions = list(spec.productions)
    for s in spec.sets:
        names, terms, prods = _set_chain(s)
        nonterminals += names
        terminals += tuple(terms)
        productions += prods
        phrases.update({n: s.phrase for n in names})
    return Grammar(
        start=spec.start,
        nonterminals=tuple(nonterminals),
        terminals=terminals,
        productions=tuple(productions),
        require_tool=False,
        max_tools=domain.limits.max_plan_steps,
        phrases=phrases,
    )
