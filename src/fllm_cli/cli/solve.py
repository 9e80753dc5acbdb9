"""``fllm solve`` and ``fllm solve-bench``: LLM-formulated optimisation with Z3 (LLMFP)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from fllm_cli import api
from fllm_cli.cli.common import stderr_console, stdout_console, write_atomic
from fllm_cli.cli.options import (
    DEFAULT_RETRIES,
    DEFAULT_TEMPERATURE,
    DEFAULT_TIMEOUT,
    ApiBaseOpt,
    ChoiceModeOpt,
    MaxCostOpt,
    ModelOpt,
    NoCacheOpt,
    OutOpt,
    QuietOpt,
    RetriesOpt,
    TemperatureOpt,
    TimeoutOpt,
    check_format,
    format_option,
    model_options,
    renamed,
)
from fllm_cli.cli.progress import LiveStatus
from fllm_cli.cli.safe import safe_json
from fllm_cli.errors import IncompleteRun, UsageError

_ATTEMPTS = typer.Option(
    5,
    "--max-attempts",
    min=1,
    help="Runs of generated code per round (a runtime error sends the traceback back).",
)
_ROUNDS = typer.Option(5, "--max-rounds", min=1, help="Self-assessment rounds.")
_CODE_TIMEOUT = typer.Option(
    30.0, "--code-timeout", min=0.5, help="Wall-clock seconds per run of generated code."
)
_MEMORY = typer.Option(1024, "--memory-mb", min=64, help="Memory limit of the sandbox (MB).")
_HORIZON = typer.Option(
    None,
    "--max-horizon",
    min=1,
    max=1000,
    help="Largest plan length tried (multi-step; default from the problem file).",
)
_OLD_HORIZON = typer.Option(None, "--max-steps", min=1, max=1000, hidden=True)
_OLD_OUT = typer.Option(None, "--output", hidden=True)
_OLD_JSON = typer.Option(False, "--json", hidden=True)
DEFAULT_SOLVE_SECONDS = 300.0
_SECONDS = typer.Option(
    DEFAULT_SOLVE_SECONDS,
    "--max-seconds",
    min=1.0,
    help="Wall-clock budget of one query; no stage starts after it (exit 3).",
)
SOLVE_FORMATS = ("rich", "json")
_UNISOLATED = typer.Option(
    False,
    "--unisolated",
    help="Run generated code even where the kernel cannot isolate it (see docs/security.md).",
)


def _settings(
    attempts: int,
    rounds: int,
    timeout: float,
    memory: int,
    horizon: int | None,
    seconds: float,
    unisolated: bool,
) -> Any:
    from fllm_cli.solve.sandbox import Limits

    return api.SolveSettings(
        max_attempts=attempts,
        max_rounds=rounds,
        max_horizon=horizon,
        limits=Limits(timeout=timeout, memory_mb=memory),
        max_seconds=seconds,
        allow_unisolated=unisolated,
    )


def _common(
    fmt: str,
    as_json: bool,
    out: str | None,
    old_out: str | None,
    horizon: Any,
    old: Any,
    quiet: bool,
) -> tuple[str, str | None, int | None]:
    """Resolve the format, output file and horizon, old spellings included."""
    fmt = check_format("json" if as_json else fmt, SOLVE_FORMATS)
    out_file = renamed(out, old_out, "--out", "--output", quiet)
    max_horizon = renamed(horizon, old, "--max-horizon", "--max-steps", quiet)
    return fmt, out_file, max_horizon


def _problem(path: str) -> Any:
    from fllm_cli.resources import resolve_spec_path

    return api.load_problem(resolve_spec_path(path))


def _trace_lines(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def solve_command(
    problem: str = typer.Argument(..., help="Problem file (YAML with a top-level 'problem:')."),
    query: str = typer.Argument(..., help="The query; '-' reads it from standard input."),
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    temperature: TemperatureOpt = DEFAULT_TEMPERATURE,
    request_timeout: TimeoutOpt = DEFAULT_TIMEOUT,
    retries: RetriesOpt = DEFAULT_RETRIES,
    no_cache: NoCacheOpt = False,
    choice_mode: ChoiceModeOpt = None,
    max_cost: MaxCostOpt = None,
    fmt: str = format_option(SOLVE_FORMATS),
    out_file: OutOpt = None,
    output: str | None = _OLD_OUT,
    as_json: bool = _OLD_JSON,
    trace: str | None = typer.Option(
        None, "--trace", help="Record every stage's prompt and reply (JSONL)."
    ),
    max_attempts: int = _ATTEMPTS,
    max_rounds: int = _ROUNDS,
    timeout: float = _CODE_TIMEOUT,
    memory_mb: int = _MEMORY,
    max_horizon: int | None = _HORIZON,
    max_steps: int | None = _OLD_HORIZON,
    max_seconds: float = _SECONDS,
    unisolated: bool = _UNISOLATED,
    quiet: QuietOpt = False,
) -> None:
    """Solve a planning query: the model formulates it, Z3 solves it in a sandbox."""
    import sys

    from fllm_cli.llm.registry import make_model
    from fllm_cli.solve.pipeline import Session

    fmt, out, horizon = _common(fmt, as_json, out_file, output, max_horizon, max_steps, quiet)
    spec = _problem(problem)
    text = sys.stdin.read() if query == "-" else query
    if not text.strip():
        raise UsageError("the query is empty")
    settings = _settings(
        max_attempts, max_rounds, timeout, memory_mb, horizon, max_seconds, unisolated
    )
    status = LiveStatus("solving", enabled=not quiet)
    backend = status.observe(
        make_model(
            model,
            model_options(
                api_base, temperature, request_timeout, retries, no_cache, choice_mode=choice_mode
            ),
        ),
        max_cost=max_cost,
    )
    session = Session(backend, spec, text, settings)
    try:
        with status:
            result = api.solve(spec, text, backend, settings, session)
    finally:
        backend.close()
        if trace:
            write_atomic(trace, _trace_lines(backend.records))
    data = result.to_json()
    answered = data["status"] in ("sat", "unsat") and data["accepted"]
    data["partial"] = not answered
    if out:
        write_atomic(out, json.dumps(data, indent=2) + "\n")
    if not quiet:
        if fmt == "json":
            sys.stdout.write(safe_json(json.dumps(data, indent=2, ensure_ascii=False) + "\n"))
        else:
            _render(data)
    if not answered:
        raise IncompleteRun(
            f"solve ended without an accepted solver result (status {data['status']} after "
            f"{data['rounds']} round(s), {data['runs']} run(s))",
            hint="try a stronger --model, or raise --max-rounds / --max-attempts",
        )


def _render(data: dict[str, Any]) -> None:
    out = stdout_console()
    out.print(
        f"status: {data['status']}  objective: {data['objective']}  "
        f"accepted: {data['accepted']}  rounds: {data['rounds']}  runs: {data['runs']}",
        markup=False,
    )
    if data.get("isolation"):
        out.print(f"sandbox: {data['isolation']}", markup=False)
    if data.get("error"):
        out.print(f"last error: {data['error']}", markup=False)
    if data.get("plan") is not None:
        check = data.get("plan_check") or {}
        out.print(f"plan ({check.get('length')} steps, {check.get('reason')}):", markup=False)
        for number, step in enumerate(data["plan"], 1):
            out.print(f"  {number}. {step}", markup=False)
    elif data.get("solution") is not None:
        out.print(json.dumps(data["solution"], indent=2), markup=False)
    stats = data.get("stats") or {}
    parts = [
        f"{k} {v['runs']} run(s) {v['seconds']:.1f}s"
        if "runs" in v
        else f"{k} {v['llm_calls']} call(s) {v['model_seconds']:.1f}s"
        for k, v in stats.items()
    ]
    stderr_console().print("stats: " + "; ".join(parts), highlight=False)


def bench_command(
    problem: str = typer.Argument(..., help="Problem file."),
    benchmark: str = typer.Argument(..., help="OptiGuide JSON or PlanBench JSONL file."),
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    temperature: TemperatureOpt = DEFAULT_TEMPERATURE,
    request_timeout: TimeoutOpt = DEFAULT_TIMEOUT,
    retries: RetriesOpt = DEFAULT_RETRIES,
    no_cache: NoCacheOpt = False,
    choice_mode: ChoiceModeOpt = None,
    max_cost: MaxCostOpt = None,
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N queries."),
    concurrency: int = typer.Option(
        1, "--concurrency", "-j", min=1, max=32, help="Queries solved in parallel (threads)."
    ),
    fmt: str = format_option(SOLVE_FORMATS),
    out_file: OutOpt = None,
    output: str | None = _OLD_OUT,
    trace: str | None = typer.Option(None, "--trace", help="All prompts and replies (JSONL)."),
    tolerance: float = typer.Option(
        1e-4, "--tolerance", min=0.0, help="Relative tolerance on the objective."
    ),
    max_attempts: int = _ATTEMPTS,
    max_rounds: int = _ROUNDS,
    timeout: float = _CODE_TIMEOUT,
    memory_mb: int = _MEMORY,
    max_horizon: int | None = _HORIZON,
    max_steps: int | None = _OLD_HORIZON,
    max_seconds: float = _SECONDS,
    unisolated: bool = _UNISOLATED,
    quiet: QuietOpt = False,
) -> None:
    """Score the pipeline on a benchmark: optimal rate and success rate."""
    from fllm_cli.llm.registry import make_model
    from fllm_cli.solve.bench import load_bench, run_bench

    fmt, output, horizon = _common(fmt, False, out_file, output, max_horizon, max_steps, quiet)
    spec = _problem(problem)
    items = load_bench(benchmark)[:limit] if limit else load_bench(benchmark)
    settings = _settings(
        max_attempts, max_rounds, timeout, memory_mb, horizon, max_seconds, unisolated
    )
    options = model_options(
        api_base, temperature, request_timeout, retries, no_cache, choice_mode=choice_mode
    )
    err = stderr_console()
    status = LiveStatus("solve-bench", enabled=not quiet)
    # The run's meter (built now: a bad --model fails before any thread starts) counts and
    # caps the spend of every query; each thread's model is a fork of it.
    meter = status.observe(make_model(model, options), max_cost=max_cost)
    done = {"n": 0, "optimal": 0}

    def progress(row: dict[str, Any]) -> None:
        done["n"] += 1
        done["optimal"] += int(row["optimal"])
        status.stage(f"{done['n']}/{len(items)} queries, {done['optimal']} optimal")

    try:
        with status:
            report = run_bench(
                spec,
                items,
                lambda: meter.fork(make_model(model, options)),
                settings,
                concurrency,
                tolerance,
                progress,
            )
    finally:
        meter.close()
    if trace:
        records = [
            {**r, "query_index": row["index"]} for row in report["rows"] for r in row["trace"]
        ]
        write_atomic(trace, _trace_lines(records))
    if output:
        slim = {
            **report,
            "rows": [{k: v for k, v in r.items() if k != "trace"} for r in report["rows"]],
        }
        write_atomic(output, json.dumps(slim, indent=2) + "\n")
    if quiet:
        return
    if fmt == "json":
        summary = {k: v for k, v in report.items() if k != "rows"}
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return
    n = report["queries"]
    stdout_console().print(
        f"{report['problem']}: {n} queries  optimal {report['optimal']}/{n} "
        f"({100 * report['optimal_rate']:.1f}%)  success {report['success']}/{n} "
        f"({100 * report['success_rate']:.1f}%)  LLM calls {report['llm_calls']}  "
        f"cost ${report['cost_usd']:.4f}  {report['seconds']:.1f}s",
        markup=False,
    )
    if report.get("stopped") == "max_cost":
        err.print(
            f"stopped: --max-cost reached after {n} of {len(items)} queries",
            highlight=False,
            markup=False,
        )
    if output:
        err.print(f"report written to {Path(output)}", highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    """Add ``solve`` and ``solve-bench`` to the app."""
    app.command("solve")(solve_command)
    app.command("solve-bench")(bench_command)
