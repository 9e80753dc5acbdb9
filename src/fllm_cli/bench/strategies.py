"""Run one task with one strategy: ``formal`` (automaton-guided) or a free-text baseline.

Domains whose kind takes data (TravelPlanner) run through :mod:`.databench` instead, with the
strategies of :data:`~fllm_cli.bench.databench.DATA_STRATEGIES`; their plans are scored by the
benchmark's metrics when the domain's plans are that benchmark's (:mod:`.metrics`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from fllm_cli import api
from fllm_cli.bench.databench import TaskDataError, run_data
from fllm_cli.bench.metrics import SCORERS
from fllm_cli.bench.parse import ParseError, parse_plan
from fllm_cli.bench.scoring import plan_tools, score
from fllm_cli.bench.tasks import BenchTask, reference_tools
from fllm_cli.domain.model import Domain
from fllm_cli.errors import BackendError, FllmError
from fllm_cli.kinds import kind_of
from fllm_cli.llm.base import GenerateRequest, Model
from fllm_cli.llm.meter import RunMeter
from fllm_cli.prompts import render
from fllm_cli.search.planner import Budgets
from fllm_cli.search.strategy import DEFAULT as DEFAULT_SEARCH

STRATEGIES = ("formal", "zero-shot", "few-shot", "formal-given", "gold")
TOOL_STRATEGIES = ("formal", "zero-shot", "few-shot")
TEMPLATES = {"zero-shot": "bench/zero_shot.j2", "few-shot": "bench/few_shot.j2"}
STOP = ("\nProblem:",)


@dataclass
class BenchConfig:
    """What every task of a run shares."""

    domain: Domain
    model_name: str
    strategies: list[str]
    examples: list[BenchTask] = field(default_factory=list)
    budgets: Budgets = field(default_factory=Budgets)
    max_tokens: int = 512
    seed_base: int | None = None
    scorer: str | None = None  # the benchmark metrics of a data domain (metrics.SCORERS)
    search: str = DEFAULT_SEARCH  # how the formal strategy plans (search/strategy.py)

    def seed(self, index: int) -> int | None:
        """Return the seed of task ``index``'s model (random chooser), else None."""
        return None if self.seed_base is None else self.seed_base + index

    @property
    def takes_data(self) -> bool:
        """Whether the domain's tasks bring their own data (a data-bound domain)."""
        return kind_of(self.domain).takes_data


class _TaskError(FllmError):
    """The task itself cannot be compiled."""


@dataclass
class Outcome:
    """One (task, strategy) result and the choice trace of a formal plan."""

    result: dict[str, Any]
    trace: list[dict[str, Any]] = field(default_factory=list)


def run_pair(
    config: BenchConfig, task: BenchTask, index: int, strategy: str, model: Model
) -> Outcome:
    """Run ``task`` with ``strategy``; failures become invalid results, never exceptions."""
    meter = RunMeter(model)
    start = time.perf_counter()
    row = _row(task, index, strategy)
    row.update(model=config.model_name, seed=config.seed(index), level=task.group())
    trace: list[dict[str, Any]] = []
    try:
        if config.takes_data:
            trace = run_data(
                config.domain, task, strategy, meter, row, config.budgets, config.model_name
            )
        else:
            problem = _problem(config.domain, task)
            if strategy == "formal":
                trace = _formal(config, problem, meter, row)
            else:
                _baseline(config, problem, task, strategy, meter, row)
    except BackendError as exc:
        _fail(row, "backend", exc.one_line())
    except (_TaskError, TaskDataError) as exc:
        _fail(row, "task", exc.one_line())
    except FllmError as exc:
        _fail(row, "plan", exc.one_line())
    except Exception as exc:  # a bug must not cost the rest of a long run
        _fail(row, "internal", f"internal error: {type(exc).__name__}: {exc}")
    row["stats"] = _stats(row.get("stats"), meter, time.perf_counter() - start)
    score_row(config, task, row)
    return Outcome(row, trace)


def score_row(config: BenchConfig, task: BenchTask, row: dict[str, Any]) -> None:
    """Set the row's scores: the benchmark's metrics, or tool-set scores against a reference."""
    if config.scorer is not None and task.scored:
        scorer = SCORERS[config.scorer]
        plan = row["plan"].get("plan") if isinstance(row.get("plan"), dict) else None
        try:
            row["scores"] = scorer.score(task.fields, task.data, plan)
        except Exception as exc:  # an evaluator bug: count the plan as not delivered, say why
            row["scores"] = scorer.score(task.fields, task.data, None)
            row["scores"]["error"] = f"scoring failed: {type(exc).__name__}: {exc}"
    elif task.reference is not None:
        row["scores"] = score(plan_tools(row["plan"]), task.reference, row["valid"])


def _row(task: BenchTask, index: int, strategy: str) -> dict[str, Any]:
    return {
        "id": task.id,
        "index": index,
        "strategy": strategy,
        "task": task.text,
        "valid": False,
        "plan": None,
        "word": None,
        "error": None,
        "error_kind": None,
        "scores": None,
    }


def _fail(row: dict[str, Any], kind: str, message: str) -> None:
    row.update(valid=False, plan=None, error=message, error_kind=kind)


def _problem(domain: Domain, task: BenchTask) -> api.Problem:
    """Compile the task; a bad interface is the task's fault."""
    try:
        return api.compile_problem(
            domain, inputs=list(task.inputs), output=task.output, task=task.text
        )
    except FllmError as exc:
        raise _TaskError(exc.one_line()) from None


def _formal(
    config: BenchConfig, problem: api.Problem, meter: RunMeter, row: dict[str, Any]
) -> list[dict[str, Any]]:
    """Plan inside the automaton."""
    result = api.plan(problem, meter, budgets=config.budgets, search=config.search)
    row["stats"] = result.stats.as_dict()
    row["search"] = result.document.get("search", config.search)
    result.document["model"] = config.model_name
    row.update(valid=True, plan=result.document, word=result.document["word"])
    return result.trace


def _baseline(
    config: BenchConfig,
    problem: api.Problem,
    task: BenchTask,
    strategy: str,
    meter: RunMeter,
    row: dict[str, Any],
) -> None:
    """Ask for a free-text plan, parse it, and verify it."""
    prompt = render(TEMPLATES[strategy], prompt_vars(config, task, strategy))
    gen = meter.generate(
        GenerateRequest(prompt, stop=STOP, max_tokens=config.max_tokens, kind="bench")
    )
    row["reply"] = gen.text
    try:
        word = parse_plan(gen.text, config.domain, problem.task)
    except ParseError as exc:
        _fail(row, "parse", str(exc))
        return
    row["word"] = word
    verdict = api.verify(problem, word)
    if not verdict.valid:
        _fail(row, "verify", f"position {verdict.position}: {verdict.reason}")
        return
    row.update(valid=True, plan=problem.verified_document(verdict, config.model_name))


def prompt_vars(config: BenchConfig, task: BenchTask, strategy: str) -> dict[str, Any]:
    """Return the template variables of a baseline prompt."""
    domain = config.domain
    phrases = {m.name: m.phrase for m in domain.modalities}
    tools = [
        {
            "name": t.name,
            "description": t.description,
            "inputs": [phrases.get(m, m) for m in t.inputs],
            "output": phrases.get(t.output, t.output),
        }
        for t in domain.tools
    ]
    terminals = []
    if domain.grammar is not None:
        terminals = [
            {"name": t.name, "description": t.description} for t in domain.grammar.terminals
        ]
    inputs = [
        spec.partition("=")[0] if "=" in spec else phrases.get(spec, spec) for spec in task.inputs
    ]
    examples = []
    if strategy == "few-shot":
        examples = [
            {"task": e.text, "steps": reference_tools(e.reference or ())}
            for e in config.examples
            if e.text != task.text
        ]
    return {
        "task": task.text,
        "domain": domain.name,
        "tools": tools,
        "terminals": terminals,
        "each_once": bool(domain.tools) and all(t.max_uses == 1 for t in domain.tools),
        "inputs": inputs,
        "output": phrases.get(task.output or "", task.output or ""),
        "examples": examples,
        "vars": task.vars,
    }


def _stats(stats: dict[str, Any] | None, meter: RunMeter, seconds: float) -> dict[str, Any]:
    """Return the row's stats: the planner's when it finished, else what the meter saw."""
    out = (
        dict(stats)
        if stats
        else {
            "llm_calls": 0,
            "choice_points": 0,
            "forced_moves": 0,
            "backtracks": 0,
            "fallbacks": 0,
            "cached": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cost_usd": 0.0,
            "steps": 0,
        }
    )
    if not stats:
        out.update(meter.summary())
    out["seconds"] = round(seconds, 4)
    return out
