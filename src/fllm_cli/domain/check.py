"""Checks of a loaded domain that need no compiling: names, modalities, sets, prompt templates.

Checks that compile the domain (can a plan exist, is a symbol productive) belong to each domain
kind (``fllm_cli.kinds``), which runs these first.
"""

from __future__ import annotations

from collections import Counter

import jinja2
from jinja2 import meta

from fllm_cli.diagnostics import Diagnostic, Location, did_you_mean
from fllm_cli.domain.automaton_check import check_automaton
from fllm_cli.domain.model import Domain
from fllm_cli.domain.templates import DEFAULT_TEMPLATES, default_template
from fllm_cli.domain.variables import placeholder_vars
from fllm_cli.errors import FllmError
from fllm_cli.prompts import environment, render_string

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
    "candidates": frozenset({"task", "domain", "intro", "question", "choices", "chosen"}),
    "propose": frozenset({"task", "domain", "intro", "modalities", "tools"}),
}


def has_errors(diagnostics: list[Diagnostic]) -> bool:
    """Return True when any diagnostic is an error."""
    return any(d.severity == "error" for d in diagnostics)


def check_automaton_structure(domain: Domain) -> list[Diagnostic]:
    """Structure of an explicit automaton and its per-state templates."""
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
    for s in spec.states:
        if s.template is not None:
            out += _check_one_template(domain, "choice", s.template, s.loc)
    return out


def check_grammar_structure(domain: Domain) -> list[Diagnostic]:
    """Duplicate terminals and the templates of set-valued symbols."""
    spec = domain.grammar
    if spec is None:
        return []
    return _dups([(s.name, s.loc) for s in spec.terminals], "terminal") + _check_sets(domain)


def _check_sets(domain: Domain) -> list[Diagnostic]:
    spec = domain.grammar
    if spec is None:
        return []
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


def check_tool_structure(domain: Domain) -> list[Diagnostic]:
    """Modalities, tool names and the task interface of a tool domain."""
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
    return out


def check_templates(domain: Domain) -> list[Diagnostic]:
    """Check that every prompt template exists, parses, and uses only known variables."""
    out: list[Diagnostic] = []
    for key in sorted(set(DEFAULT_TEMPLATES) | set(domain.prompts)):
        name = domain.prompts.get(key) or default_template(domain, key)
        loc = domain.prompt_locs.get(key, Location(domain.path))
        out += _check_one_template(domain, key, name, loc)
    return out + _check_intro(domain)


def _check_intro(domain: Domain) -> list[Diagnostic]:
    """Render a templated intro once with the variables' defaults (or placeholders), so an
    intro that fails or runs past the render bounds is an error here, not at planning."""
    templated = "{{" in domain.intro or "{%" in domain.intro
    rendered = bool(domain.vars) or domain.automaton is not None  # as the planners do
    if not (templated and rendered):
        return []
    try:
        render_string(domain.intro, placeholder_vars(domain, None), "intro")
    except FllmError as exc:
        loc = domain.prompt_locs.get("intro", Location(domain.path))
        return [Diagnostic("error", exc.message, loc)]
    return []


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
