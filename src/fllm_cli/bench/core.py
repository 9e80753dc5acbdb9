"""``fllm bench`` as a library call: load, run every (task, strategy) pair, build the report."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fllm_cli.api import load_domain
from fllm_cli.bench import report as rep
from fllm_cli.bench.databench import DATA_STRATEGIES, check_data
from fllm_cli.bench.datatasks import attach
from fllm_cli.bench.limiter import Limiter
from fllm_cli.bench.metrics import Scorer, reward, scorer_for
from fllm_cli.bench.results import ResultsWriter, read_results
from fllm_cli.bench.runner import (
    ModelPool,
    OnResult,
    RunState,
    make_pool,
    pending_pairs,
    run_pairs,
    seed_base,
)
from fllm_cli.bench.scoring import summarize
from fllm_cli.bench.strategies import STRATEGIES, TOOL_STRATEGIES, BenchConfig, Outcome
from fllm_cli.bench.tasks import BenchTask, LineError, load_tasks
from fllm_cli.diagnostics import did_you_mean
from fllm_cli.domain.model import Domain
from fllm_cli.errors import UsageError
from fllm_cli.kinds import kind_of
from fllm_cli.llm.registry import ModelOptions, resolve_model_name
from fllm_cli.resources import exists
from fllm_cli.search.planner import Budgets
from fllm_cli.search.strategy import DEFAULT as DEFAULT_SEARCH
from fllm_cli.search.strategy import strategy
from fllm_cli.textio import shown

EXECUTORS = ("local", "ray")


@dataclass
class BenchOptions:
    """Everything ``fllm bench`` was asked to do."""

    spec: str | Domain
    tasks_file: str
    strategies: list[str] = field(default_factory=lambda: ["formal"])
    data_file: str | None = None  # data domains: the tasks' data (JSON Lines, by idx or line)
    gold_file: str | None = None  # data domains: the tasks' gold plans (the gold strategy)
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
    executor: str = "local"
    ray_address: str | None = None
    workers: int | None = None
    rate_limit: float | None = None
    results_file: str | None = None
    resume_results: bool = False
    ray_init: dict[str, Any] = field(default_factory=dict)
    search: str = DEFAULT_SEARCH  # how the formal strategy plans (as `fllm plan` by default)


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


def check_strategies(opts: BenchOptions, domain: Domain) -> None:
    """Refuse strategies and options that do not apply to the domain's kind."""
    takes_data = kind_of(domain).takes_data
    allowed = DATA_STRATEGIES if takes_data else TOOL_STRATEGIES
    wrong = [s for s in opts.strategies if s not in allowed]
    what = "data domains" if takes_data else f"{kind_of(domain).name_with_article} domain"
    if wrong:
        raise UsageError(
            f"strategy '{wrong[0]}' does not apply to '{domain.name}' "
            f"({what}: choose from {', '.join(allowed)})"
        )
    if not takes_data:
        for value, flag in ((opts.data_file, "--data"), (opts.gold_file, "--gold")):
            if value:
                raise UsageError(
                    f"{flag} applies to data domains (kind: data); '{domain.name}' is not one"
                )


def load_inputs(
    opts: BenchOptions, domain: Domain
) -> tuple[list[BenchTask], list[BenchTask], list[LineError]]:
    """Load the tasks and few-shot examples; return (tasks, examples, bad lines)."""
    check_strategies(opts, domain)
    tasks, bad = load_tasks(opts.tasks_file, domain)
    if kind_of(domain).takes_data:
        tasks, unusable = _data_tasks(opts, domain, tasks)
        bad = sorted(bad + unusable, key=lambda e: e.line)
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


def _data_tasks(
    opts: BenchOptions, domain: Domain, tasks: list[BenchTask]
) -> tuple[list[BenchTask], list[LineError]]:
    """Give data-bound tasks their data, gold plans and request; mark those the metrics score."""
    tasks, bad = attach(tasks, opts.data_file, opts.gold_file, opts.tasks_file)
    if tasks and all(t.data is None for t in tasks):
        raise UsageError(
            f"'{domain.name}' is a data domain: give the tasks' data with --data FILE.jsonl "
            "(or a 'data' object on each task line)"
        )
    if "gold" in opts.strategies and tasks and all(t.gold is None for t in tasks):
        raise UsageError("the gold strategy needs the tasks' gold plans: give --gold FILE.jsonl")
    scorer = scorer_for(domain)
    out = []
    for task in tasks:
        try:
            out.append(_prepared(task, scorer, domain))
        except (ValueError, UsageError) as exc:
            message = exc.message if isinstance(exc, UsageError) else str(exc)
            bad.append(LineError(opts.tasks_file, task.line, message))
    return out, bad


def _prepared(task: BenchTask, scorer: Scorer | None, domain: Domain) -> BenchTask:
    """Check a data task's data against the domain's tables and the scorer's fields."""
    if task.data is None:
        raise ValueError("no data for this task (give --data FILE.jsonl or a 'data' object)")
    check_data(domain, task.data)
    scored = scorer.check_task(task.fields, task.data) if scorer is not None else False
    request = task.request
    if request is None and scorer is not None and scored:
        request = scorer.request(task.fields)
    return replace(task, scored=scored, request=request)


def run_bench(
    opts: BenchOptions,
    pool: ModelPool | None = None,
    on_result: OnResult | None = None,
    on_start: Callable[[int], None] | None = None,
) -> BenchRun:
    """Run the benchmark; a stop (Ctrl-C, --max-cost) returns a partial report."""
    if opts.executor not in EXECUTORS:
        raise UsageError(f"unknown executor '{opts.executor}' (choose from {', '.join(EXECUTORS)})")
    if opts.executor == "ray":
        from fllm_cli.bench.ray_executor import import_ray

        import_ray()  # says how to install it before any work is done
    domain = load_domain(opts.spec) if isinstance(opts.spec, str) else opts.spec
    tasks, examples, bad = load_inputs(opts, domain)
    model_name = resolve_model_name(opts.model)
    scorer = scorer_for(domain) if kind_of(domain).takes_data else None
    config = BenchConfig(
        domain,
        model_name,
        opts.strategies,
        examples,
        opts.budgets,
        seed_base=seed_base(opts.model),
        scorer=scorer.name if scorer is not None else None,
        search=strategy(opts.search).name,
    )
    previous = _previous_results(opts.previous, domain)
    previous += _results_file_rows(opts, domain, model_name, tasks, config)
    done = rep.done_pairs(previous)
    kept = _dedup([r for r in previous if (str(r["id"]), r["strategy"]) in done])
    pairs = pending_pairs(tasks, opts.strategies, done)
    writer = _writer(opts, domain, model_name)
    on_result = _chain(writer.append if writer else None, on_result)
    if on_start is not None:
        on_start(len(pairs))
    start = time.perf_counter()
    try:
        state, facts = _execute(opts, config, pairs, pool, on_result)
    finally:
        if writer is not None:
            writer.close()
    wall = time.perf_counter() - start
    results = _merge(kept, [o.result for o in state.outcomes], opts.strategies)
    finished = {(str(r["id"]), r["strategy"]) for r in results}
    missing = pending_pairs(tasks, opts.strategies, finished)
    report = _report(opts, domain, model_name, results, bad, wall)
    if config.scorer is not None:
        report["metrics"] = config.scorer
    facts["resumed"] = len(kept)
    report["executor"] = facts
    if opts.results_file:
        report["results_file"] = opts.results_file
    report["partial"] = bool(missing) or state.stopped is not None
    report["stopped"] = state.stopped
    return BenchRun(report, _records(state.outcomes), bad)


def _execute(
    opts: BenchOptions,
    config: BenchConfig,
    pairs: list[Any],
    pool: ModelPool | None,
    on_result: OnResult | None,
) -> tuple[RunState, dict[str, Any]]:
    """Run the pending pairs on the chosen executor; return the state and executor facts."""
    if opts.executor == "ray":
        from fllm_cli.bench.ray_executor import RayOptions, run_pairs_ray

        ray_opts = RayOptions(
            opts.ray_address, opts.workers, opts.rate_limit, init_args=opts.ray_init
        )
        return run_pairs_ray(
            config,
            pairs,
            opts.model,
            opts.model_options,
            ray_opts,
            max_cost=opts.max_cost,
            on_result=on_result,
        )
    shared = None
    if pool is None:
        pool, shared = make_pool(opts.model, opts.model_options)
    limiter = Limiter(opts.rate_limit) if opts.rate_limit else None
    if limiter is not None:
        pool = ModelPool(pool.make, pool.lock, limiter.reserve)
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
    facts: dict[str, Any] = {"name": "local", "workers": opts.concurrency, "retried": []}
    if limiter is not None:
        facts["rate_limit"] = {"per_second": opts.rate_limit, "granted": limiter.count()}
    return state, facts


def _chain(*calls: OnResult | None) -> OnResult | None:
    """Return one callback calling each given one in turn (None when none is given)."""
    real = [c for c in calls if c is not None]
    if not real:
        return None

    def both(row: dict[str, Any]) -> None:
        for call in real:
            call(row)

    return both


def _writer(opts: BenchOptions, domain: Domain, model_name: str) -> ResultsWriter | None:
    if not opts.results_file:
        return None
    header = {
        "domain": domain.name,
        "domain_path": domain.path,
        "tasks_file": opts.tasks_file,
        "model": model_name,
        "strategies": opts.strategies,
    }
    if opts.data_file:
        header["data_file"] = opts.data_file
    return ResultsWriter(opts.results_file, header)


def _results_file_rows(
    opts: BenchOptions,
    domain: Domain,
    model_name: str,
    tasks: list[BenchTask],
    config: BenchConfig,
) -> list[dict[str, Any]]:
    """Return the finished units of this run already in the results file."""
    path = opts.results_file
    if not path or not exists(path) or Path(path).stat().st_size == 0:
        if opts.resume_results and path:
            raise UsageError(f"no such results file to resume: '{shown(path)}'")
        return []
    log = read_results(path)
    if log.header.get("domain") != domain.name:
        raise UsageError(
            f"'{path}' holds results for domain '{log.header.get('domain')}', not '{domain.name}'"
        )
    seeds = {str(t.id): config.seed(i) for i, t in enumerate(tasks)}
    wanted = set(opts.strategies)
    rows = [
        r
        for r in log.for_model(model_name)
        if str(r["id"]) in seeds
        and r["strategy"] in wanted
        and r.get("seed") == seeds[str(r["id"])]
    ]
    if rows and not opts.resume_results:
        raise UsageError(
            f"'{path}' already holds {len(rows)} result(s) of this run; add --resume to continue "
            "it, or give another --results file"
        )
    return rows


def _dedup(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Keep the last row of each (id, strategy): a results file overrides a resumed report."""
    last: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        last[(str(row["id"]), row["strategy"])] = row
    return list(last.values())


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
        **({"data_file": opts.data_file} if opts.data_file else {}),
        "model": model_name,
        "strategies": strategies,
        "search": strategy(opts.search).name,
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
        value = reward(scores, row["valid"])
        for entry in outcome.trace:
            if entry.get("type") != "choice":
                continue
            out.append(
                {
                    "id": row["id"],
                    "strategy": row["strategy"],
                    "task": row["task"],
                    "choice_point": entry.get("choice_point"),
                    "kind": entry["kind"],
                    "prompt": entry["prompt"],
                    "options": entry["options"],
                    "choice": entry["choice"],
                    "chosen": entry["chosen"],
                    "reply": entry["reply"],
                    "fallback": entry["fallback"],
                    "valid": row["valid"],
                    "scores": scores,
                    "reward": value,
                }
            )
    return out
