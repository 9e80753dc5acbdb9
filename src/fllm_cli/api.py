"""The library entry points: load a domain, compile a task, plan, verify.

from fllm_cli import api
problem = api.compile_problem("domains/openagi.yaml", inputs=["image"], output="text",
                              task="Given a noisy image, how to return its caption?")
result = api.plan(problem, model="random:1")
print(result.document["steps"])
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from fllm_cli.automaton.explicit import (
    ExplicitLookahead,
    ExplicitPDA,
    pda_from_spec,
    verify_explicit,
)
from fllm_cli.automaton.lookahead import GrammarLookahead
from fllm_cli.automaton.pda import PDA, pda_from_grammar
from fllm_cli.diagnostics import article as _a
from fllm_cli.errors import NoPlanError, PlanFileError, UsageError
from fllm_cli.grammar.cfg import Grammar
from fllm_cli.grammar.compile import domain_grammar, make_task
from fllm_cli.llm.base import Model
from fllm_cli.llm.registry import ModelOptions, make_model
from fllm_cli.plan.document import build_document
from fllm_cli.plan.model import Derivation
from fllm_cli.search.automaton_prompting import (
    AutomatonPrompter,
    automaton_document,
    resolve_vars,
)
from fllm_cli.search.planner import Budgets, Event, Planner, PlanStats
from fllm_cli.search.prompting import Prompter
from fllm_cli.domain.load import load_domain

__all__ = ["Problem", "compile_problem", "load_domain", "plan", "verify"]
from fllm_cli.domain.model import Domain, Task
from fllm_cli.verify import Verdict, verify_word


@dataclass
class Problem:
    """A domain compiled for a task: grammar (None for explicit automata), PDA, look-ahead."""

    domain: Domain
    task: Task
    grammar: Grammar | None
    pda: PDA
    lookahead: GrammarLookahead | ExplicitLookahead
    vars: dict[str, str] = field(default_factory=dict)


def compile_problem(
    spec: str | Domain,
    *,
    inputs: list[str] | None = None,
    output: str | None = None,
    task: str = "",
    variables: dict[str, str] | None = None,
    require_vars: bool = True,
) -> Problem:
    """Load (if needed) and compile a domain for a task and its scenario variables.

    ``require_vars=False`` shows a missing variable as ``{name}`` instead of failing (for
    commands that only print the automaton).
    """
    domain = load_domain(spec) if isinstance(spec, str) else spec
    if require_vars:
        values = resolve_vars(domain, variables)
    else:
        given = {**{v.name: v.default or f"{{{v.name}}}" for v in domain.vars}, **(variables or {})}
        values = resolve_vars(domain, given)
    if domain.kind == "automaton":
        if inputs or output:
            raise UsageError(
                f"'{domain.name}' is an automaton domain: --input/--output do not apply"
            )
        assert domain.automaton is not None
        epda = pda_from_spec(domain.automaton)
        return Problem(domain, Task(task, (), ""), None, epda, ExplicitLookahead(epda), values)
    if domain.kind == "tools":
        the_task = make_task(domain, task, list(inputs or []), output)
    else:
        if inputs or output:
            raise UsageError(f"'{domain.name}' is a grammar domain: --input/--output do not apply")
        the_task = Task(task, (), "")
    grammar = domain_grammar(domain, the_task)
    pda = pda_from_grammar(grammar)
    return Problem(domain, the_task, grammar, pda, GrammarLookahead(pda), values)


def check_solvable(problem: Problem) -> None:
    """Refuse a task with no valid plan before any model call, saying why."""
    if problem.lookahead.word_exists():
        return
    t = problem.task
    if problem.domain.kind == "tools":
        given = ", ".join(f"{n} ({m})" for n, m in t.inputs)
        raise NoPlanError(
            f"no valid plan can produce {_a(t.output)} {t.output} output from {given} "
            f"with the tools of '{problem.domain.name}' and their use limits",
            hint="check --input/--output, or the tools' max_uses",
        )
    what = "automaton" if problem.domain.kind == "automaton" else "grammar"
    raise NoPlanError(f"the {what} of '{problem.domain.name}' accepts no plan under its limits")


@dataclass
class PlanResult:
    """A plan and how it was made."""

    document: dict[str, Any]
    derivation: Derivation | None
    stats: PlanStats
    trace: list[dict[str, Any]] = field(default_factory=list)


def plan(
    problem: Problem,
    model: str | Model | None = None,
    *,
    budgets: Budgets | None = None,
    options: ModelOptions | None = None,
    on_event: Event | None = None,
    trace: list[dict[str, Any]] | None = None,
) -> PlanResult:
    """Plan with a model (a back end or a ``--model`` string) inside the automaton.

    Choice records go to ``trace`` as they happen, so a caller keeps them even when planning
    fails part-way (a budget, a provider error).
    """
    check_solvable(problem)
    backend = model if isinstance(model, Model) else make_model(model, options)
    records: list[dict[str, Any]] = [] if trace is None else trace
    if isinstance(problem.pda, ExplicitPDA):
        return _plan_automaton(problem, problem.pda, backend, budgets, on_event, records)
    assert problem.grammar is not None
    prompter = Prompter(problem.domain, problem.grammar, problem.pda, problem.task, problem.vars)
    planner = Planner(
        problem.pda,
        problem.lookahead,
        backend,
        prompter,
        budgets or Budgets(),
        on_event,
        trace=records,
    )
    final = planner.run()
    derivation = Derivation.from_config(problem.grammar, final)
    verdict = verify_word(problem.pda, derivation.word)
    if not verdict.valid:  # a bug, never a user's problem: refuse to present it as valid
        raise NoPlanError(f"internal error: planned word failed verification: {verdict.reason}")
    stats = planner.stats.as_dict()
    doc = build_document(problem.domain, problem.task, derivation, backend.name, stats)
    if problem.vars:
        doc["vars"] = dict(problem.vars)
    return PlanResult(doc, derivation, planner.stats, planner.trace)


def _plan_automaton(
    problem: Problem,
    pda: ExplicitPDA,
    backend: Model,
    budgets: Budgets | None,
    on_event: Event | None,
    records: list[dict[str, Any]],
) -> PlanResult:
    prompter = AutomatonPrompter(problem.domain, pda, problem.task.text, problem.vars)
    planner = Planner(
        pda, problem.lookahead, backend, prompter, budgets or Budgets(), on_event, trace=records
    )
    final = planner.run()
    verdict = verify_explicit(pda, final.word_list())
    if not verdict.valid:  # a bug, never a user's problem
        raise NoPlanError(f"internal error: planned word failed verification: {verdict.reason}")
    doc = automaton_document(
        problem.domain,
        pda,
        final,
        problem.task.text,
        problem.vars,
        backend.name,
        planner.stats.as_dict(),
    )
    return PlanResult(doc, None, planner.stats, planner.trace)


def read_plan_file(text: str, path: str) -> tuple[list[str], dict[str, Any] | None]:
    """Parse a plan file: a plan JSON document, or one terminal per line (# comments)."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PlanFileError(
                f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})"
            ) from None
        word = doc.get("word") if isinstance(doc, dict) else None
        if not isinstance(word, list) or not all(isinstance(w, str) for w in word):
            raise PlanFileError(f"{path}: the plan JSON has no 'word' list of strings")
        return word, doc
    word = []
    for line in text.splitlines():
        item = line.split("#", 1)[0].strip().rstrip(",")
        if item:
            word.append(item)
    if not word:
        raise PlanFileError(f"{path}: the plan is empty")
    return word, None


def word_line_numbers(text: str) -> list[int]:
    """Return the file line of each word item of a text plan."""
    lines = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.split("#", 1)[0].strip():
            lines.append(number)
    return lines


def verify(problem: Problem, word: list[str]) -> Verdict:
    """Decide whether ``word`` is a valid plan for the problem."""
    if isinstance(problem.pda, ExplicitPDA):
        v = verify_explicit(problem.pda, word)
        return Verdict(v.valid, None, v.position, v.reason, v.config)
    return verify_word(problem.pda, word)
