"""Semantic checks of a loaded domain: names, symbols, analyses, prompt templates."""

from __future__ import annotations

from collections import Counter

import jinja2
from jinja2 import meta

from fllm_cli.automaton.lookahead import GrammarLookahead
from fllm_cli.automaton.pda import pda_from_grammar
from fllm_cli.diagnostics import Diagnostic, Location, Severity, did_you_mean
from fllm_cli.diagnostics import article as _a
from fllm_cli.grammar.cfg import Grammar
from fllm_cli.grammar.compile import explicit_grammar, tool_grammar
from fllm_cli.prompts import environment
from fllm_cli.domain.automaton_check import check_automaton
from fllm_cli.domain.model import Domain, Task

# Variables each prompt template may use (documented in docs/spec.md).
TEMPLATE_VARIABLES: dict[str, frozenset[str]] = {
    "choice": frozenset(
        {
            "task",
            "domain",
            "intro",
            "progress",
            "target",
            "symbol",
            "phrase",
            "parent",
            "slot",
            "choices",
            "first",
            "inputs",
            "output",
            "question",
            "state",
            "steps",
            "parent_step",
            "vars",
        }
    ),
    "interface": frozenset({"task", "domain", "intro", "question", "choices", "chosen"}),
}
DEFAULT_TEMPLATES = {"choice": "plan/choice.j2", "interface": "plan/interface.j2"}


def check_domain(domain: Domain) -> list[Diagnostic]:
    """Return every semantic problem of ``domain``."""
    out: list[Diagnostic] = []
    if domain.kind == "tools":
        out += _check_tools(domain)
    elif domain.kind == "automaton":
        out += _check_automaton(domain)
    else:
        out += _check_grammar(domain, explicit_grammar(domain))
        out += _check_sets(domain)
    out += check_templates(domain)
    return out


def _check_automaton(domain: Domain) -> list[Diagnostic]:
    """Structure of an explicit automaton, then: does it accept any word at all?"""
    from fllm_cli.automaton.explicit import ExplicitLookahead, pda_from_spec

    spec = domain.automaton
    if spec is None:
        return []
    out: list[Diagnostic] = []
    check_automaton(
        spec,
        domain.vars,
        lambda m, loc: out.append(Diagnostic("error", m, loc)),
        lambda m, loc: out.append(Diagnostic("warning", m, loc)),
    )
    if any(d.severity == "error" for d in out):
        return out
    pda = pda_from_spec(spec)
    look = ExplicitLookahead(pda)
    if not look.word_exists():
        out.append(Diagnostic("error", "the automaton accepts no word", spec.loc))
    reached = {pda.start} | {t.target for t in pda.transitions}
    for s in spec.states:
        if s.name not in reached:
            out.append(Diagnostic("warning", f"state '{s.name}' is unreachable", s.loc))
    for s in spec.states:
        if s.template is not None:
            out += _check_one_template(domain, "choice", s.template, s.loc)
    return out


def _check_sets(domain: Domain) -> list[Diagnostic]:
    spec = domain.grammar
    assert spec is not None
    out: list[Diagnostic] = []
    env = environment(())
    names = {"element", "chosen", "parent_step", "phrase"} | {v.name for v in domain.vars}
    for s in spec.sets:
        for what, source in (("question", s.question), ("step", s.step)):
            if not source:
                continue
            try:
                used = meta.find_undeclared_variables(env.parse(source))
            except jinja2.TemplateSyntaxError as exc:
                out.append(Diagnostic("error", f"set '{s.name}' {what}: {exc.message}", s.loc))
                continue
            for var in sorted(used - names):
                hint = did_you_mean(var, names)
                out.append(
                    Diagnostic(
                        "error", f"set '{s.name}' {what} uses undefined '{var}'{hint}", s.loc
                    )
                )
    return out


def _dups(names: list[tuple[str, Location]], what: str) -> list[Diagnostic]:
    seen: Counter[str] = Counter()
    out = []
    for name, loc in names:
        seen[name] += 1
        if seen[name] == 2:
            out.append(Diagnostic("error", f"duplicate {what} '{name}'", loc))
    return out


def _check_tools(domain: Domain) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    mods = [m.name for m in domain.modalities]
    if not mods:
        out.append(
            Diagnostic("error", "a tool domain needs 'modalities'", Location(domain.path, 1, 1))
        )
        return out
    out += _dups([(m.name, m.loc) for m in domain.modalities], "modality")
    out += _dups([(t.name, t.loc) for t in domain.tools], "tool")
    for tool in domain.tools:
        if tool.name.startswith("input:"):
            out.append(
                Diagnostic(
                    "error", f"tool name '{tool.name}' must not start with 'input:'", tool.loc
                )
            )
        for m in (*tool.inputs, tool.output):
            if m and m not in mods:
                out.append(
                    Diagnostic(
                        "error",
                        f"tool '{tool.name}' uses unknown modality '{m}'{did_you_mean(m, mods)}",
                        tool.loc,
                    )
                )
    iface = domain.task
    if iface is not None:
        for m in (*iface.inputs, *iface.outputs):
            if m not in mods:
                out.append(
                    Diagnostic(
                        "error",
                        f"task interface uses unknown modality '{m}'{did_you_mean(m, mods)}",
                        iface.loc,
                    )
                )
    if any(d.severity == "error" for d in out):
        return out
    return out + _check_tool_plans(domain)


def _check_tool_plans(domain: Domain) -> list[Diagnostic]:
    """Under the task interface: which outputs have plans, which tools can ever be used."""
    iface = domain.task
    mods = tuple(m.name for m in domain.modalities)
    ins = iface.inputs if iface and iface.inputs else mods
    outs = iface.outputs if iface and iface.outputs else mods
    where = iface.loc if iface else Location(domain.path, 1, 1)
    out: list[Diagnostic] = []
    usable: set[str] = set()
    any_plan = False
    for output in outs:
        task = Task("", tuple((m, m) for m in ins), output)
        # A smaller budget keeps validate quick; an exhausted search only suppresses a warning.
        look = GrammarLookahead(pda_from_grammar(tool_grammar(domain, task)), node_budget=20_000)
        if not look.word_exists():
            out.append(
                Diagnostic(
                    "warning",
                    f"no plan can produce {_a(output)} {output} output "
                    f"from {', '.join(ins)} inputs",
                    where,
                )
            )
            continue
        any_plan = True
        for tool in domain.tools:
            if tool.name in usable:
                continue
            if look.word_exists(frozenset({tool.name})) or look.exhausted_last:
                usable.add(tool.name)  # an exhausted search proves nothing: no warning
    if not any_plan:
        out.append(Diagnostic("error", "no plan exists for any task of the task interface", where))
        return out
    for tool in domain.tools:
        if tool.name not in usable:
            out.append(
                Diagnostic(
                    "warning",
                    f"tool '{tool.name}' can never occur in a plan of the task interface",
                    tool.loc,
                )
            )
    return out


def _check_grammar(domain: Domain, grammar: Grammar) -> list[Diagnostic]:
    spec = domain.grammar
    assert spec is not None
    out: list[Diagnostic] = []
    out += _dups([(s.name, s.loc) for s in spec.terminals], "terminal")
    locs = {s.name: s.loc for s in (*spec.nonterminals, *spec.terminals)}
    for n in grammar.nonterminals:
        if n not in grammar.productive:
            sev: Severity = "error" if n == grammar.start else "warning"
            out.append(
                Diagnostic(
                    sev,
                    f"nonterminal '{n}' derives no terminal word (unproductive)",
                    locs.get(n, spec.loc),
                )
            )
    used = {s for p in grammar.productions for s in p.rhs}
    for name in (*grammar.nonterminals, *(t.name for t in grammar.terminals)):
        if name not in grammar.reachable:
            kind = "terminal" if grammar.is_terminal(name) else "nonterminal"
            detail = (
                "is never used"
                if name not in used and name != grammar.start
                else "is unreachable from the start symbol"
            )
            out.append(Diagnostic("warning", f"{kind} '{name}' {detail}", locs.get(name, spec.loc)))
    if grammar.start in grammar.productive:
        look = GrammarLookahead(pda_from_grammar(grammar))
        if not look.word_exists():
            out.append(Diagnostic("error", "no word satisfies the use limits", spec.loc))
    return out


def check_templates(domain: Domain) -> list[Diagnostic]:
    """Check that every prompt template exists, parses, and uses only known variables."""
    out: list[Diagnostic] = []
    for key in sorted(set(DEFAULT_TEMPLATES) | set(domain.prompts)):
        name = domain.prompts.get(key, default_template(domain, key))
        loc = domain.prompt_locs.get(key, Location(domain.path))
        out += _check_one_template(domain, key, name, loc)
    return out


def default_template(domain: Domain, key: str) -> str:
    """Return the shipped template for prompt ``key`` of this kind of domain."""
    if key == "choice" and domain.kind == "automaton":
        return "plan/automaton.j2"
    return DEFAULT_TEMPLATES.get(key, "")


def _check_one_template(domain: Domain, key: str, name: str, loc: Location) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    env = environment(tuple(domain.prompt_dirs))
    if key not in TEMPLATE_VARIABLES:
        out.append(
            Diagnostic(
                "error",
                f"unknown prompt kind '{key}'{did_you_mean(key, TEMPLATE_VARIABLES)}",
                loc,
            )
        )
        return out
    try:
        source, filename, _ = env.loader.get_source(env, name)  # type: ignore[union-attr]
    except jinja2.TemplateNotFound:
        out.append(Diagnostic("error", f"prompt template '{name}' ({key}) not found", loc))
        return out
    try:
        ast = env.parse(source)
    except jinja2.TemplateSyntaxError as exc:
        out.append(
            Diagnostic(
                "error",
                f"template syntax: {exc.message}",
                Location(filename or name, exc.lineno or 0, 1),
            )
        )
        return out
    unknown = meta.find_undeclared_variables(ast) - TEMPLATE_VARIABLES[key]
    for var in sorted(unknown):
        hint = did_you_mean(var, TEMPLATE_VARIABLES[key])
        out.append(
            Diagnostic(
                "error",
                f"template uses undefined variable '{var}'{hint}",
                Location(filename or name, _line_of(source, var), 1),
            )
        )
    return out


def _line_of(source: str, var: str) -> int:
    for i, line in enumerate(source.splitlines(), 1):
        if var in line:
            return i
    return 1
