"""The library entry points: everything the command line does, as functions.

The command line (``fllm_cli.cli``) calls this module and nothing below it, so every name it
uses is here, grouped by what it is for:

* domains and specs: ``load_domain``, ``diagnose``, ``compile_problem``, ``automaton``,
  ``render_pda``, ``parse_vars``;
* models: ``model_options``, ``make_model``, ``metered_model``, ``model_name``;
* planning: ``plan``, ``plan_task``, ``export_plan``, ``plan_steps``, ``shown_value``, ``money``;
* verifying: ``read_plan_file``, ``verify``, ``verify_plan``, ``verify_data``;
* tools: ``import_tools``, ``list_mcp_tools``, ``input_values``, ``run_plan``;
* agents: ``load_agent``, ``run_agent``, ``AgentOptions``, ``check_trace`` and the run's views;
* LLMFP solving: ``load_problem``, ``solve``, ``solve_settings``, ``SolveSettings``.

Agents and solving are imported on first use (``fllm plan`` does not pay for them).

from fllm_cli import api
problem = api.compile_problem("domains/openagi.yaml", inputs=["image"], output="text",
                              task="Given a noisy image, how to return its caption?")
result = api.plan(problem, model="random:1")
print(result.document["steps"])
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fllm_cli.automaton import render as pda_render
from fllm_cli.automaton.pda import PDA
from fllm_cli.diagnostics import Diagnostic
from fllm_cli.domain.load import load_domain as parse_domain
from fllm_cli.domain.load import read_domain
from fllm_cli.domain.model import Domain
from fllm_cli.domain.variables import parse_var_options, placeholder_vars, resolve_vars
from fllm_cli.errors import BackendError, PlanFileError, SpecError, UsageError
from fllm_cli.kinds import Compiled, PlanJob, PlanResult, check_domain, kind_of
from fllm_cli.llm.base import Model
from fllm_cli.llm.meter import CallTally, RunMeter
from fllm_cli.llm.options import CHOICE_MODES
from fllm_cli.llm.registry import ModelOptions, make_model, model_help, resolve_model_name
from fllm_cli.plan.document import _task_from_doc, step_lines
from fllm_cli.plan.export import EXPORTERS
from fllm_cli.plan.export import FORMATS as PLAN_FORMATS
from fllm_cli.plan.model import MAX_TREE_DEPTH, Derivation, TreeNode
from fllm_cli.resources import resolve_spec_path
from fllm_cli.search.planner import Budgets, Event
from fllm_cli.search.strategy import ALIASES, DEFAULT, STRATEGIES, Strategy, strategy
from fllm_cli.textio import load_json
from fllm_cli.verify import Verdict

DEFAULT_SEARCH = DEFAULT  # what `fllm plan`, `fllm bench` and this API plan with by default
SEARCHES = (*STRATEGIES, *ALIASES)  # every name --search accepts

if TYPE_CHECKING:
    from fllm_cli.ltl.api import AgentOptions, answer_language, load_agent, run_agent
    from fllm_cli.ltl.automaton import Automaton
    from fllm_cli.ltl.output import bare_transcript as agent_transcript
    from fllm_cli.ltl.output import stats_line as agent_stats_line
    from fllm_cli.ltl.output import to_json as agent_json
    from fllm_cli.ltl.runtime import Budget as AgentBudget
    from fllm_cli.ltl.runtime import Observer as AgentObserver
    from fllm_cli.ltl.runtime import Step as AgentStep
    from fllm_cli.ltl.spec import AgentSpec
    from fllm_cli.ltl.trace import ExampleResult
    from fllm_cli.solve.bench import load_bench as load_solve_bench
    from fllm_cli.solve.bench import run_bench as run_solve_bench
    from fllm_cli.solve.pipeline import Settings as SolveSettings
    from fllm_cli.solve.pipeline import solve
    from fllm_cli.solve.problem import Problem as SolveProblem
    from fllm_cli.toolset import ImportReport

# The agent and solver names are imported on first use: `fllm plan` does not need them, and
# they cost start-up time. Name here -> (module, name there).
_LAZY = {
    "AgentOptions": ("fllm_cli.ltl.api", "AgentOptions"),
    "AgentBudget": ("fllm_cli.ltl.runtime", "Budget"),
    "AgentObserver": ("fllm_cli.ltl.runtime", "Observer"),
    "AgentStep": ("fllm_cli.ltl.runtime", "Step"),
    "answer_language": ("fllm_cli.ltl.api", "answer_language"),
    "load_agent": ("fllm_cli.ltl.api", "load_agent"),
    "run_agent": ("fllm_cli.ltl.api", "run_agent"),
    "agent_json": ("fllm_cli.ltl.output", "to_json"),
    "agent_stats_line": ("fllm_cli.ltl.output", "stats_line"),
    "agent_transcript": ("fllm_cli.ltl.output", "bare_transcript"),
    "SolveSettings": ("fllm_cli.solve.pipeline", "Settings"),
    "solve": ("fllm_cli.solve.pipeline", "solve"),
    "load_solve_bench": ("fllm_cli.solve.bench", "load_bench"),
    "run_solve_bench": ("fllm_cli.solve.bench", "run_bench"),
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
    "CHOICE_MODES",
    "DEFAULT_SEARCH",
    "MAX_TREE_DEPTH",
    "PDA",
    "PDA_FORMATS",
    "PLAN_FORMATS",
    "SEARCHES",
    "AgentBudget",
    "AgentObserver",
    "AgentOptions",
    "AgentStep",
    "Budgets",
    "CallTally",
    "Derivation",
    "Model",
    "ModelOptions",
    "PlanResult",
    "Problem",
    "RunMeter",
    "SolveSettings",
    "ToolImport",
    "TreeNode",
    "agent_automaton",
    "agent_json",
    "agent_stats_line",
    "agent_transcript",
    "answer_language",
    "automaton",
    "check_trace",
    "compile_problem",
    "diagnose",
    "diagnose_domain",
    "export_plan",
    "import_tools",
    "input_values",
    "list_mcp_tools",
    "load_agent",
    "load_domain",
    "load_problem",
    "load_solve_bench",
    "make_model",
    "metered_model",
    "model_help",
    "model_name",
    "model_options",
    "money",
    "overview",
    "parse_tool_mapping",
    "parse_vars",
    "pda_table",
    "plan",
    "plan_steps",
    "plan_task",
    "read_plan_file",
    "render_agent_automaton",
    "render_pda",
    "run_agent",
    "run_plan",
    "run_solve_bench",
    "shown_value",
    "solve",
    "solve_settings",
    "spec_kind",
    "verify",
    "verify_data",
    "verify_plan",
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


def _is_agent_spec(path: str) -> bool:
    from fllm_cli.ltl import is_agent_spec

    return is_agent_spec(path)


def _is_problem_spec(path: str) -> bool:
    from fllm_cli.solve import is_problem_spec

    return is_problem_spec(path)


def _diagnose_agent(path: str) -> tuple[list[Diagnostic], str]:
    from fllm_cli.ltl import validate_agent_spec

    return validate_agent_spec(path), "agent spec"


def _diagnose_problem(path: str) -> tuple[list[Diagnostic], str]:
    from fllm_cli.solve import validate_problem_spec

    return validate_problem_spec(path), "problem"


# The spec files fllm reads besides domains, in the order they are recognised: kind -> (is it
# one, its diagnostics and summary). Anything else is a domain.
SPEC_KINDS: dict[str, tuple[Callable[[str], bool], Callable[[str], tuple[list[Diagnostic], str]]]]
SPEC_KINDS = {
    "agent": (_is_agent_spec, _diagnose_agent),
    "problem": (_is_problem_spec, _diagnose_problem),
}


def spec_kind(path: str) -> str:
    """Return 'agent', 'problem' or 'domain' for a spec file (a shipped name is found too)."""
    resolved = str(resolve_spec_path(path))
    return next((kind for kind, (test, _) in SPEC_KINDS.items() if test(resolved)), "domain")


def diagnose(path: str) -> tuple[list[Diagnostic], str]:
    """Return every diagnostic of any spec file and a one-line summary (``fllm validate``)."""
    kind = spec_kind(path)
    if kind in SPEC_KINDS:
        return SPEC_KINDS[kind][1](str(resolve_spec_path(path)))
    return diagnose_domain(path)


def parse_vars(options: list[str]) -> dict[str, str]:
    """Read ``--var NAME=VALUE`` options as a mapping of scenario variables."""
    return parse_var_options(options)


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


def automaton(
    spec: str | Path | Domain,
    *,
    inputs: list[str] | None = None,
    output: str | None = None,
    variables: dict[str, str] | None = None,
) -> PDA:
    """Return the automaton ``fllm render-pda`` shows: the task's, or without an interface the
    domain's overview; a missing variable is shown as ``{name}``."""
    domain = load_domain(spec)
    if output is None and not inputs:
        return kind_of(domain).overview(domain, placeholder_vars(domain, variables))
    problem = compile_problem(
        domain, inputs=inputs, output=output, variables=variables, require_vars=False
    )
    return problem.pda


# Text renderings of an automaton, by --format name.
PDA_RENDERERS: dict[str, Callable[[PDA], str]] = {
    "dot": pda_render.to_dot,
    "mermaid": pda_render.to_mermaid,
    "json": pda_render.to_json,
}
PDA_FORMATS = tuple(PDA_RENDERERS)


def render_pda(pda: PDA, fmt: str) -> str:
    """Return an automaton as text in one of :data:`PDA_FORMATS`."""
    return PDA_RENDERERS[fmt](pda)


def pda_table(pda: PDA) -> tuple[tuple[str, ...], list[tuple[str, ...]], str]:
    """Return an automaton's transitions as (headers, rows, facts) for a table view."""
    return pda_render.TABLE_HEADERS, list(pda_render.table_rows(pda)), pda_render.facts(pda)


def agent_automaton(spec: str) -> tuple[str, tuple[str, ...], list[tuple[str, ...]]]:
    """Return an agent spec's automaton as (title, headers, rows): one row a node."""
    from fllm_cli.ltl import agent_automaton as rows_of

    return rows_of(str(resolve_spec_path(spec)))


def render_agent_automaton(spec: str, fmt: str) -> str:
    """Return an agent spec's automaton as text (dot, mermaid or json)."""
    from fllm_cli.ltl import render_agent_automaton as render

    return render(str(resolve_spec_path(spec)), fmt)


# ------------------------------------------------------------------ models


def model_options(
    api_base: str | None,
    temperature: float,
    timeout: float,
    retries: int,
    no_cache: bool,
    max_cost: float | None = None,
    choice_mode: str | None = None,
) -> ModelOptions:
    """Bundle the model flags; ``choice_mode`` unset is ``$FLLM_CHOICE_MODE``, else auto."""
    if api_base is not None and not api_base.strip():
        raise UsageError("--api-base is empty")
    mode = (choice_mode or os.environ.get("FLLM_CHOICE_MODE") or "auto").strip().lower()
    if mode not in CHOICE_MODES:
        where = "--choice-mode" if choice_mode else "$FLLM_CHOICE_MODE"
        raise UsageError(f"unknown {where} '{mode}' (choose {', '.join(CHOICE_MODES)})")
    return ModelOptions(
        api_base=api_base,
        temperature=temperature,
        timeout=timeout,
        retries=retries,
        cache=not no_cache,
        max_cost=max_cost,
        choice_mode=mode,
    )


def metered_model(
    model: str | Model | None,
    options: ModelOptions | None = None,
    *,
    on_call: Callable[[CallTally], None] | None = None,
    max_seconds: float | None = None,
    max_cost: float | None = None,
    budget_flag: str = "--max-seconds",
) -> RunMeter:
    """Return a run's meter around a model (a back end or a ``--model`` string): it counts
    every call (``on_call`` sees the tally), keeps the records and enforces the budgets."""
    backend = model if isinstance(model, Model) else make_model(model, options)
    return RunMeter(
        backend,
        on_call=on_call,
        max_seconds=max_seconds,
        budget_flag=budget_flag,
        max_cost=max_cost,
    )


def model_name(model: str | None) -> str:
    """Return the model string in force: ``model``, then ``$FLLM_MODEL``, then the default."""
    return resolve_model_name(model)


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


def export_plan(doc: dict[str, Any], fmt: str) -> str:
    """Return a plan document as text in one of :data:`PLAN_FORMATS` ("rich" is JSON here)."""
    return EXPORTERS["json" if fmt == "rich" else fmt](doc)


def plan_steps(doc: dict[str, Any]) -> list[str]:
    """Return a plan document's steps in execution order, one line each."""
    return step_lines(doc, _task_from_doc(doc))


def shown_value(value: Any) -> str:
    """Return a request value as data plans show it: a list joined with commas."""
    from fllm_cli.databound.csp import _shown_value  # only data plans need it

    return _shown_value(value)


def money(currency: dict[str, Any] | None) -> Callable[[float], str]:
    """Return how a data plan writes an amount in its currency (a plan document's "currency")."""
    from fllm_cli.databound.spec import Currency  # only data plans need it

    return Currency.from_dict(currency).show


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


def verify_plan(
    spec: str | Path | Domain,
    word: list[str],
    doc: dict[str, Any] | None = None,
    *,
    inputs: list[str] | None = None,
    output: str | None = None,
    variables: dict[str, str] | None = None,
) -> tuple[Problem, Verdict]:
    """Verify a plan as :func:`read_plan_file` returns it (``fllm verify`` and ``fllm mcp``).

    The task's inputs, output, text and variables come from the plan's document where the call
    does not give them (given variables win); a missing variable is shown, never required.
    """
    if doc is not None:
        found = doc.get("inputs")
        if not inputs and isinstance(found, dict):
            inputs = [f"{k}={v}" for k, v in found.items()]
        output = output or doc.get("output") or None
    given = dict(variables or {})
    if doc is not None and isinstance(doc.get("vars"), dict):
        given = {**{str(k): str(v) for k, v in doc["vars"].items()}, **given}
    problem = compile_problem(
        spec,
        inputs=inputs,
        output=output,
        task=str((doc or {}).get("task", "")),
        variables=given,
        require_vars=False,
    )
    return problem, verify(problem, word, doc)


# ------------------------------------------------------------------ importing tools


@dataclass
class ToolImport:
    """A tool list read as a tool domain: what was read, the domain file and a bindings file."""

    report: ImportReport
    domain: str  # the domain file's text
    bindings: str  # the bindings skeleton's text, for ``fllm run``


def list_mcp_tools(server: list[str]) -> list[dict[str, Any]]:
    """Start an MCP server (its command's words; never a shell) and return its tool list."""
    from fllm_cli.execute.mcp_client import list_tools

    return list_tools(tuple(server), Path.cwd())


def parse_tool_mapping(text: str, path: str) -> Any:
    """Read an import mapping file (YAML: per tool, input types, output, settings)."""
    import yaml

    try:
        return yaml.safe_load(text) or {}
    except yaml.YAMLError:
        raise UsageError(f"{path}: the mapping file is not valid YAML") from None


def import_tools(
    doc: Any,
    where: str,
    *,
    name: str,
    domain_file: str,
    mapping: Any = None,
    server: list[str] | None = None,
) -> ToolImport:
    """Turn a parsed tool list (OpenAI-style, or an MCP server's from ``where``) into a tool
    domain called ``name``; the bindings call ``server`` when the tools came from one."""
    from fllm_cli.toolset import read_tool_list, write_bindings, write_domain

    report = read_tool_list(doc, where, mapping)
    return ToolImport(
        report, write_domain(report, name, where), write_bindings(report, domain_file, server)
    )


def input_values(items: list[str], doc: dict[str, Any], flag: str) -> dict[str, Any]:
    """Read NAME=VALUE options as a plan's input values (numbers and JSON by declared type)."""
    from fllm_cli.execute import coerce

    given: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"bad {flag} {item!r}: write NAME=VALUE")
        given[key] = coerce(value, str((doc.get("inputs") or {}).get(key, "text")))
    return given


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


# ------------------------------------------------------------------ agents


def check_trace(
    agent: tuple[AgentSpec, Automaton],
    text: str,
    *,
    split: str | None,
    tools: tuple[str, ...] | None = None,
    tool_modules: list[str] | None = None,
    answer: str | None = None,
) -> list[ExampleResult]:
    """Check transcripts against an agent (as :func:`load_agent` returns it): one result per
    example, split where a line matches ``split``; the named tools' input languages and the
    ``answer`` language apply."""
    from fllm_cli.ltl.api import answer_language
    from fllm_cli.ltl.languages import content_rules
    from fllm_cli.ltl.tools import declared_input_languages
    from fllm_cli.ltl.trace import check_transcript

    agent_spec, machine = agent
    languages = declared_input_languages(tools or (), tool_modules or [])
    rules = content_rules(agent_spec, languages, answer_language(answer))
    return check_transcript(agent_spec, machine, text, split, tools, rules)


# ------------------------------------------------------------------ LLMFP solving


def load_problem(spec: str | Path) -> SolveProblem:
    """Read a problem file (a shipped name is found too)."""
    from fllm_cli.solve.problem import load_problem as read_problem

    return read_problem(resolve_spec_path(spec))


def solve_settings(
    *,
    attempts: int,
    rounds: int,
    code_timeout: float,
    memory_mb: int,
    horizon: int | None,
    seconds: float,
    unisolated: bool,
) -> SolveSettings:
    """Return the budgets of one solve, its sandbox's limits included."""
    from fllm_cli.solve.pipeline import Settings
    from fllm_cli.solve.sandbox import Limits

    return Settings(
        max_attempts=attempts,
        max_rounds=rounds,
        max_horizon=horizon,
        limits=Limits(timeout=code_timeout, memory_mb=memory_mb),
        max_seconds=seconds,
        allow_unisolated=unisolated,
    )
