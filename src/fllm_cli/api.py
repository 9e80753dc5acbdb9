"""The library entry points: everything the command line does, as functions.

Planning: load a domain, compile a task, plan (asking for the interface when needed), verify.
Agents (``load_agent``, ``run_agent``, ``AgentOptions``) and LLMFP solving (``load_problem``,
``solve``, ``SolveSettings``) are re-exported from their packages, so a program needs only this
module.

from fllm_cli import api
problem = api.compile_problem("domains/openagi.yaml", inputs=["image"], output="text",
                              task="Given a noisy image, how to return its caption?")
result = api.plan(problem, model="random:1")
print(result.document["steps"])
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fllm_cli.automaton.pda import PDA
from fllm_cli.diagnostics import Diagnostic
from fllm_cli.domain.load import load_domain as parse_domain
from fllm_cli.domain.load import read_domain
from fllm_cli.domain.model import Domain
from fllm_cli.domain.variables import placeholder_vars, resolve_vars
from fllm_cli.errors import BackendError, PlanFileError, SpecError, UsageError
from fllm_cli.kinds import Compiled, PlanJob, PlanResult, check_domain, kind_of
from fllm_cli.llm.base import Model
from fllm_cli.llm.registry import ModelOptions, make_model
from fllm_cli.search.planner import Budgets, Event
from fllm_cli.search.strategy import ALIASES, DEFAULT, STRATEGIES, Strategy, strategy
from fllm_cli.textio import load_json
from fllm_cli.verify import Verdict

DEFAULT_SEARCH = DEFAULT  # what `fllm plan`, `fllm bench` and this API plan with by default
SEARCHES = (*STRATEGIES, *ALIASES)  # every name --search accepts

if TYPE_CHECKING:
    from fllm_cli.ltl.api import AgentOptions, load_agent, run_agent
    from fllm_cli.solve.pipeline import Settings as SolveSettings
    from fllm_cli.solve.pipeline import solve
    from fllm_cli.solve.problem import load_problem

# The agent and solver re-exports are imported on first use: `fllm plan` does not need them, and
# they cost start-up time.
_LAZY = {
    "AgentOptions": ("fllm_cli.ltl.api", "AgentOptions"),
    "load_agent": ("fllm_cli.ltl.api", "load_agent"),
    "run_agent": ("fllm_cli.ltl.api", "run_agent"),
    "SolveSettings": ("fllm_cli.solve.pipeline", "Settings"),
    "solve": ("fllm_cli.solve.pipeline", "solve"),
    "load_problem": ("fllm_cli.solve.problem", "load_problem"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    module, attribute = _LAZY[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


__all__ = [
    "AgentOptions",
    "PlanResult",
    "Problem",
    "SolveSettings",
    "compile_problem",
    "load_agent",
    "load_domain",
    "load_problem",
    "overview",
    "plan",
    "plan_task",
    "read_plan_file",
    "run_agent",
    "solve",
    "verify",
]

# A domain compiled for a task; every kind implements the same interface (fllm_cli.kinds).
Problem = Compiled


def load_domain(spec: str | Path | Domain) -> Domain:
    """Read a domain file and run every check of its kind; raise SpecError on any error.

    A ``Domain`` is returned as it is: it was checked when it was loaded, and the checks (which
    run look-ahead queries) are too costly to repeat at every call that accepts either.
    """
    if isinstance(spec, Domain):
        return spec
    domain = parse_domain(spec)
    diagnostics = check_domain(domain)
    if any(d.severity == "error" for d in diagnostics):
        raise SpecError(diagnostics)
    return domain


def diagnose_domain(path: str) -> tuple[list[Diagnostic], str]:
    """Return every diagnostic of a domain file and a one-line summary (``fllm validate``)."""
    domain, diagnostics = read_domain(path)
    if domain is None:
        return diagnostics, "domain"
    if not any(d.severity == "error" for d in diagnostics):
        diagnostics = diagnostics + check_domain(domain)
    return diagnostics, kind_of(domain).summary(domain)


def compile_problem(
    spec: str | Path | Domain,
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
    domain = load_domain(spec)
    values = (
        resolve_vars(domain, variables) if require_vars else placeholder_vars(domain, variables)
    )
    return kind_of(domain).compile(domain, task, list(inputs or []), output, values)


def overview(spec: str | Domain, variables: dict[str, str] | None = None) -> PDA:
    """Return the automaton of a domain when no task is given (what ``render-pda`` shows)."""
    domain = load_domain(spec)
    return kind_of(domain).overview(domain, placeholder_vars(domain, variables))


def check_solvable(problem: Problem) -> None:
    """Refuse a task with no valid plan before any model call, saying why."""
    problem.check_solvable()


def plan(
    problem: Problem,
    model: str | Model | None = None,
    *,
    budgets: Budgets | None = None,
    options: ModelOptions | None = None,
    on_event: Event | None = None,
    trace: list[dict[str, Any]] | None = None,
    search: str = DEFAULT_SEARCH,
) -> PlanResult:
    """Plan with a model (a back end or a ``--model`` string) inside the automaton.

    Choice records go to ``trace`` as they happen, so a caller keeps them even when planning
    fails part-way (a budget, a provider error). ``search`` names a strategy of
    :data:`fllm_cli.search.strategy.STRATEGIES` (the same default as ``fllm plan``).
    """
    backend = model if isinstance(model, Model) else make_model(model, options)
    return problem.plan(backend, budgets, on_event, trace, _search(search))


def _search(name: str) -> Strategy:
    return strategy(name)


def plan_task(
    spec: str | Domain,
    task: str,
    model: str | Model | None = None,
    *,
    inputs: list[str] | None = None,
    output: str | None = None,
    variables: dict[str, str] | None = None,
    budgets: Budgets | None = None,
    options: ModelOptions | None = None,
    on_event: Event | None = None,
    trace: list[dict[str, Any]] | None = None,
    data: Any = None,
    request: dict[str, Any] | None = None,
    search: str = DEFAULT_SEARCH,
    allow_fallbacks: bool = False,
) -> PlanResult:
    """Plan a task from its text, whatever the domain's kind.

    ``search`` names a strategy (:data:`fllm_cli.search.strategy.STRATEGIES`): ``"meaning"``
    (the default) scores whole plans by what the request means where the kind can (tool
    domains) and asks the model only among ties; ``"words"`` does so by shared words;
    ``"greedy"`` asks at every choice point, as the paper does.

    Kinds with a task interface ask the model for it when neither ``inputs`` nor ``output`` is
    given (its calls count in the plan's stats). A data-bound domain takes the task's ``data``
    (the parsed ``--data`` JSON); ``request`` gives the request's values instead of reading them
    from the text (``--constraints``).

    A plan is the model's only when the model's replies could be read: when more than a
    quarter of the choices put to it took a default because no reply named an option, this
    raises :class:`BackendError` unless ``allow_fallbacks``.
    """
    domain = load_domain(spec)
    backend = model if isinstance(model, Model) else make_model(model, options)
    job = PlanJob(
        task, list(inputs or []), output, variables, data, request, budgets, on_event,
        [] if trace is None else trace, _search(search),
    )  # fmt: skip
    begin = time.perf_counter()
    result = kind_of(domain).plan_task(domain, job, backend)
    stats = result.document.get("stats")
    if isinstance(stats, dict):  # the whole call: model loading and the interface included
        stats["search_seconds"] = stats.get("seconds", 0.0)
        stats["seconds"] = round(time.perf_counter() - begin, 3)
        if not allow_fallbacks:
            refuse_unread(stats)
    return result


UNREAD_SHARE = 0.25  # more unread replies than this share of the model's choices: not its plan


def refuse_unread(stats: dict[str, Any]) -> None:
    """Raise when too many of the model's replies could not be read (see :func:`plan_task`)."""
    unread, asked = int(stats.get("unread_replies", 0)), int(stats.get("choices_asked", 0))
    if unread and unread > UNREAD_SHARE * asked:
        raise BackendError(
            f"the model's replies could not be read: {unread} of {asked} choices took a default"
            " option, so the plan would be fllm's defaults, not the model's",
            hint="try the model on a short prompt, use another model, or pass"
            " --allow-fallbacks to accept such a plan",
        )


def verify_data(
    spec: str | Domain, plan: Any, data: Any, request: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Check a data-bound plan (day dicts, or an fllm plan document) against the task's data.

    The request comes from ``request``, else from the plan document's own ``request``.
    """
    domain = load_domain(spec)
    return kind_of(domain).check_with_data(domain, plan, data, request)


# In a text plan "#" starts a comment at the start of a line or after a space, so a tool may
# be called "C# Compiler"; a plan that is the empty word is written as one line "ε" (or "eps").
_COMMENT = re.compile(r"(?:^|\s)#.*$")
EMPTY_WORD = frozenset({"ε", "eps", "epsilon"})


def _plan_item(line: str) -> str:
    return _COMMENT.sub("", line).strip().rstrip(",").strip()


def read_plan_file(text: str, path: str) -> tuple[list[str], dict[str, Any] | None]:
    """Parse a plan file: a plan JSON document, or one terminal per line (# comments)."""
    stripped = text.lstrip("\ufeff").lstrip()
    if stripped.startswith("{"):
        try:
            doc = load_json(stripped, path)
        except UsageError as exc:
            raise PlanFileError(exc.message) from None
        if isinstance(doc, dict) and doc.get("partial") is True:
            why = str(doc.get("error") or "the run failed")[:200]
            raise PlanFileError(f"{path}: a partial record of a failed run ({why}), not a plan")
        word = doc.get("word") if isinstance(doc, dict) else None
        if not isinstance(word, list) or not all(isinstance(w, str) for w in word):
            raise PlanFileError(f"{path}: the plan JSON has no 'word' list of strings")
        _check_plan_fields(doc, path)
        return word, doc
    word = [item for item in map(_plan_item, text.splitlines()) if item]
    if word and all(item in EMPTY_WORD for item in word) and len(word) == 1:
        return [], None
    if not word:
        raise PlanFileError(f"{path}: the plan is empty (write ε for the empty plan)")
    return word, None


_PLAN_FIELDS: dict[str, tuple[type, str]] = {
    "task": (str, "a string"),
    "output": (str, "a modality name"),
    "inputs": (dict, "a mapping of input names to modalities"),
    "vars": (dict, "a mapping of variable names to values"),
}


def _check_plan_fields(doc: dict[str, Any], path: str) -> None:
    """Refuse plan JSON fields of the wrong type with a message naming the field."""
    for key, (kind, what) in _PLAN_FIELDS.items():
        value = doc.get(key)
        if value is not None and not isinstance(value, kind):
            raise PlanFileError(f"{path}: '{key}' must be {what}, got {type(value).__name__}")
    for key in ("inputs", "vars"):
        for name, value in (doc.get(key) or {}).items():
            if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                raise PlanFileError(f"{path}: {key}.{name} must be a string")


def word_line_numbers(text: str) -> list[int]:
    """Return the file line of each word item of a text plan."""
    return [n for n, line in enumerate(text.splitlines(), 1) if _plan_item(line)]


def verify(problem: Problem, word: list[str], doc: dict[str, Any] | None = None) -> Verdict:
    """Decide whether ``word`` is a valid plan for the problem.

    With the plan's document, what the model wrote in it (notes) is checked too.
    """
    verdict = problem.verify(word)
    if verdict.valid and doc is not None:
        return problem.check_document(doc, verdict)
    return verdict


# ------------------------------------------------------------------ carrying plans out


def run_plan(
    plan_doc: dict[str, Any],
    bindings: str | dict[str, Any],
    inputs: dict[str, Any],
    *,
    spec: str | Domain | None = None,
    model: str | Model | None = None,
    workers: int = 4,
    max_replans: int = 2,
    on_event: Any = None,
    options: ModelOptions | None = None,
) -> Any:
    """Carry out a plan of a tool domain with ``bindings`` (a bindings file, or its parsed
    :class:`fllm_cli.execute.Binding` map) and the task's input values.

    Independent branches run at the same time (at most ``workers`` calls). When a tool fails or
    returns a value of the wrong type, the task is planned again without the tools that failed
    (``model`` decides, as in ``plan_task``), at most ``max_replans`` times; results of the
    sub-plans the new plan shares with the old are reused. Returns a
    :class:`fllm_cli.execute.RunResult` (``ok`` False when no valid plan remains; every value
    produced so far is in it).
    """
    from dataclasses import replace

    from fllm_cli.errors import NoPlanError
    from fllm_cli.execute import Runner, read_bindings

    path = spec if spec is not None else plan_doc.get("domain_path")
    if not isinstance(path, (str, Domain)):
        raise UsageError("the plan file names no domain_path: give the domain with --domain")
    domain = load_domain(path)
    if kind_of(domain).name != "tools":
        raise UsageError(f"fllm run carries out plans of tool domains; '{domain.name}' is not one")
    table = read_bindings(bindings) if isinstance(bindings, str) else bindings
    types = {t.name: (t.inputs, t.output) for t in domain.tools}
    wanted = dict(plan_doc.get("inputs") or {})
    output = plan_doc.get("output")
    backend = model  # made into a back end only when a re-plan needs one

    def replan(failed: set[str]) -> dict[str, Any] | None:
        nonlocal backend
        if not isinstance(backend, Model):
            backend = make_model(backend, options)
        smaller = replace(domain, tools=tuple(t for t in domain.tools if t.name not in failed))
        given = [n if n == m else f"{n}={m}" for n, m in wanted.items()]
        try:
            again = plan_task(
                smaller, str(plan_doc.get("task", "")), backend, inputs=given,
                output=str(output), allow_fallbacks=True,
            )  # fmt: skip
        except NoPlanError:
            return None
        return again.document

    runner = Runner(table, types, inputs, workers, on_event)
    return runner.run(plan_doc, replan, max_replans)
