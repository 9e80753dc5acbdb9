"""Semantic checks of an explicit automaton: state names, stack symbols, counters, texts."""

from __future__ import annotations

from typing import Any

import jinja2
from jinja2 import meta

from fllm_cli.diagnostics import Location, did_you_mean
from fllm_cli.domain.automaton import ANY, TEXT_NAMES
from fllm_cli.domain.model import AutomatonSpec, Text, VarSpec
from fllm_cli.prompts import environment


def _env() -> jinja2.Environment:
    return environment(())


def text_names(text: Text) -> set[str]:
    """Return the undeclared names a text template uses (raises TemplateSyntaxError)."""
    return set(meta.find_undeclared_variables(_env().parse(text.source)))


def check_automaton(
    spec: AutomatonSpec, variables: tuple[VarSpec, ...], error: Any, warning: Any
) -> None:
    """Report bad state names, undefined stack symbols and counters, and bad text templates."""
    states = [s.name for s in spec.states]
    known = set(states)
    seen: set[str] = set()
    for s in spec.states:
        if s.name in seen:
            error(f"duplicate state '{s.name}'", s.loc)
        seen.add(s.name)

    def state(name: str, what: str, loc: Location) -> None:
        if name not in known:
            error(f"{what} '{name}' is not a declared state{did_you_mean(name, known)}", loc)

    state(spec.start, "start state", spec.loc)
    for a in spec.accept:
        state(a, "accept state", spec.loc)
    alphabet = set(spec.stack_alphabet)
    if not spec.stack_alphabet:
        error("automaton.stack.alphabet must list at least one stack symbol", spec.loc)
    for sym in (*spec.initial_stack, *spec.accept_stack):
        if alphabet and sym not in alphabet:
            error(f"undefined stack symbol '{sym}'{did_you_mean(sym, alphabet)}", spec.loc)
    counters = {c.name for c in spec.counters}
    names = {v.name for v in variables}
    for t in spec.transitions:
        state(t.source, "transition source", t.loc)
        state(t.target, "transition target", t.loc)
        for sym in ((t.pop,) if t.pop else ()) + (t.push or ()):
            if sym != ANY and sym not in alphabet:
                error(f"undefined stack symbol '{sym}'{did_you_mean(sym, alphabet)}", t.loc)
        if t.push and ANY in t.push and t.pop not in (None, ANY):
            error("'∀' in push needs pop '∀' (or no pop)", t.loc)
        if t.count is not None and t.count not in counters:
            error(f"undefined counter '{t.count}'{did_you_mean(t.count, counters)}", t.loc)
        if t.read is not None and t.read.startswith("input:"):
            error(f"input symbol '{t.read}' must not start with 'input:'", t.loc)
        texts = [("option", t.option)] + [(f"step.{k}", v) for k, v in t.step]
        if t.note is not None:
            texts.append(("note.ask", t.note.ask))
        for what, text in texts:
            _check_text(text, names, what, error)
    for s in spec.states:
        _check_text(s.question, names, "question", error)
        for name in set(dict(s.question.binding) if s.question else ()) & names:
            error(f"loop variable '{name}' hides the scenario variable of that name", s.loc)
    if not spec.transitions:
        warning("the automaton has no transitions", spec.loc)


def _check_text(text: Text | None, names: set[str], what: str, error: Any) -> None:
    if text is None:
        return
    try:
        used = text_names(text)
    except jinja2.TemplateSyntaxError as exc:
        error(f"{what}: template syntax: {exc.message}", text.loc)
        return
    allowed = names | set(dict(text.binding)) | TEXT_NAMES
    for name in sorted(used - allowed):
        error(f"{what} uses undefined variable '{name}'{did_you_mean(name, allowed)}", text.loc)
