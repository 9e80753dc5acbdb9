"""``fllm bench`` as a library call: load, run every (task, strategy) pair, build the report."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fllm_cli.api import load_domain
from fllm_cli.bench import report as rep
from fllm_cli.bench.runner import ModelPool, OnResult, pending_pairs, run_pairs
from fllm_cli.bench.scoring import summarize
from fllm_cli.bench.strategies import STRATEGIES, BenchConfig, Outcome
from fllm_cli.bench.tasks import BenchTask, LineError, load_tasks
from fllm_cli.diagnostics import did_you_mean
from fllm_cli.domain.model import Domain
from fllm_cli.errors import UsageError
from fllm_cli.llm.base import Model
from fllm_cli.llm.registry import ModelOptions, make_model, parse_model_spec, resolve_model_name
from fllm_cli.search.planner import Budgets

SHARED_LOCKED = ("local", "scripted", "replay")


@dataclass
class BenchOptions:
    """Everything ``fllm bench`` was asked to do."""

    spec: str | Domain
    tasks_file: str
    strategies: list[str] = field(default_factory=lambda: ["formal"])
    model: str | None = None
    model_options: ModelOptions = field(default_factory=ModelOptions)
    examples_file: str | None = None
    shots: int | None = None
    limit: int | None = None
    concurrency: int = 1
    max_cost: float | None = None
    budgets: Budgets = field(default_factory=Budgets)
    strict: bool = False
    previous: dict[str, Any] | None = None


@dataclass
class BenchRun:
    """A finished (or stopped) run: the report and the choice records of formal plans."""

    report: dict[str, Any]
    records: list[dict[str, Any]]
    bad_lines: list[LineError]


def parse_strategies(text: str) -> list[str]:
    """Turn 'formal,zero-shot' into a checked list, in the given order."""
    names = [s.strip().lower().replace("_", "-") for s in text.split(",") if s.strip()]
    if not names:
        raise UsageError("--strategy is empty")
    for name in names:
        if name not in STRATEGIES:
            raise UsageError(
                f"unknown strategy '{name}'{did_you_mean(name, list(STRATEGIES))} "
                f"(choose from {', '.join(STRATEGIES)})"
            )
    return list(dict.fromkeys(names))


def make_pool(spec: str | None, options: ModelOptions) -> tuple[ModelPool, Model | None]:
    """Return the pool for a ``--model`` string and the shared model to close (if any)."""
    name = resolve_model_name(spec).strip()
    kind, arg = parse_model_spec(name)
    if kind == "random":
        make_model(name)  # validates the seed
        base = int(arg) if arg else None
        from fllm_cli.llm.simple import RandomModel

        return ModelPool(lambda i: RandomModel(None if base is None else base + i)), None
    shared = make_model(name, options)
    lock = threading.Lock() if kind in SHARED_LOCKED else None
    return ModelPool(lambda _i: shared, lock), shared


def load_inputs(
    opts: BenchOptions, domain: Domain
) -> tuple[list[BenchTask], list[BenchTask], list[LineError]]:
    """Load the tasks and few-shot examples; return (tasks, examples, bad lines)."""
    tasks, bad = load_tasks(opts.tasks_file, domain)
    if bad and opts.strict:
        more = f" (and {len(bad) - 1} more bad line(s))" if len(bad) > 1 else ""
        raise UsageError(f"{bad[0]}{more}")
    if not tasks:
        why = f" (first problem: {bad[0]})" if bad else ""
        raise UsageError(f"'{opts.tasks_file}' holds no usable task{why}")
    if opts.limit is not None:
        tasks = tasks[: opts.limit]
    examples: list[BenchTask] = []
    if "few-shot" in opts.strategies:
        if not opts.examples_file:
            raise UsageError("few-shot needs examples: give --examples FILE.jsonl")
        loaded, ex_bad = load_tasks(opts.examples_file, domain)
        bad += ex_bad
        examples = [e for e in loaded if e.reference][: opts.shots]
        if not examples:
            raise UsageError(f"'{opts.examples_file}' holds no example with a reference")
    return tasks, examples, bad


def run_bench(
    opts: BenchOptions,
    pool: ModelPool | None = None,
    on_result: OnResult | None = None,
    on_start: Callable[[int], None] | None = None,
) -> BenchRun:
    """Run the benchmark; a stop (Ctrl-C, --max-cost) returns a partial report."""
    domain = load_domain(opts.spec) if isinstance(opts.spec, str) else opts.spec
    tasks, examples, bad = load_inputs(opts, domain)
    previous = _previous_results(opts.previous, domain)
    done = rep.done_pairs(previous)
    kept = [r for r in previous if (str(r["id"]), r["strategy"]) in done]
    model_name = resolve_model_name(opts.model)
    config = BenchConfig(domain, model_name, opts.strategies, examples, opts.budgets)
    shared = None
    if pool is None:
        pool, shared = make_pool(opts.model, opts.model_options)
    pairs = pending_pairs(tasks, opts.strategies, done)
    if on_start is not None:
        on_start(len(pairs))
    start = time.perf_counter()
    try:
        state = run_pairs(
            config,
            pairs,
            pool,
            concurrency=opts.concurrency,
            max_cost=opts.max_cost,
            on_result=on_result,
        )
    finally:
        if shared is not None:
            shared.close()
    wall = time.perf_counter() - start
    results = _merge(kept, [o.result for o in state.outcomes], opts.strategies)
    finished = {(str(r["id"]), r["strategy"]) for r in results}
    missing = pending_pairs(tasks, opts.strategies, finished)
    report = _report(opts, domain, model_name, results, bad, wall)
    report["partial"] = bool(missing) or state.stopped is not None
    report["stopped"] = state.stopped
    return BenchRun(report, _records(state.outcomes), bad)


def _previous_results(previous: dict[str, Any] | None, domain: Domain) -> list[dict[str, Any]]:
    """Return the results of a report being resumed, checking it is for this domain."""
    if previous is None:
        return []
    if previous.get("domain") != domain.name:
        raise UsageError(
            f"the report to resume is for domain '{previous.get('domain')}', not '{domain.name}'"
        )
    return [r for r in previous["results"] if isinstance(r, dict) and "strategy" in r]


def _merge(
    kept: list[dict[str, Any]], new: list[dict[str, Any]], strategies: list[str]
) -> list[dict[str, Any]]:
    """Combine resumed and new results in task order, then strategy order."""
    order = {s: i for i, s in enumerate(strategies)}
    rows = kept + new
    return sorted(rows, key=lambda r: (r.get("index", 0), order.get(r["strategy"], len(order))))


def _report(
    opts: BenchOptions,
    domain: Domain,
    model_name: str,
    results: list[dict[str, Any]],
    bad: list[LineError],
    wall: float,
) -> dict[str, Any]:
    """Assemble the report document."""
    strategies = list(dict.fromkeys([*opts.strategies, *(r["strategy"] for r in results)]))
    return {
        "fllm_bench": rep.REPORT_VERSION,
        "domain": domain.name,
        "domain_path": domain.path,
        "tasks_file": opts.tasks_file,
        "model": model_name,
        "strategies": strategies,
        "concurrency": opts.concurrency,
        "wall_seconds": round(wall, 3),
        "skipped_lines": [{"file": e.path, "line": e.line, "error": e.message} for e in bad],
        "summary": summarize(results, strategies),
        "results": results,
    }


def _records(outcomes: list[Outcome]) -> list[dict[str, Any]]:
    """Return one record per choice point of each formal plan, with the plan's score."""
    out = []
    for outcome in outcomes:
        row = outcome.result
        scores = row.get("scores")
        reward = scores["f1"] if scores else (1.0 if row["valid"] else 0.0)
        for entry in outcome.trace:
            if entry.get("type") != "choice":
                continue
            out.append(
                {
                    "id": row["id"],
                    "strategy": row["strategy"],
                    "task": row["task"],
                    "choice_point": entry["choice_point"],
                    "kind": entry["kind"],
                    "prompt": entry["prompt"],
                    "options": entry["options"],
                    "choice": entry["choice"],
                    "chosen": entry["chosen"],
                    "reply": entry["reply"],
                    "fallback": entry["fallback"],
                    "valid": row["valid"],
                    "scores": scores,
                    "reward": reward,
                }
            )
    return out
