"""``fllm solve`` and ``fllm solve-bench``: LLM-formulated optimisation with Z3 (LLMFP)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from fllm_cli.cli.common import stderr_console, stdout_console, write_atomic
from fllm_cli.cli.options import (
    ApiBaseOpt,
    ModelOpt,
    NoCacheOpt,
    RetriesOpt,
    TemperatureOpt,
    TimeoutOpt,
    model_options,
)
from fllm_cli.errors import UsageError

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
    "--max-steps",
    min=1,
    help="Largest plan length tried (multi-step; default from the problem file).",
)


def _settings(attempts: int, rounds: int, timeout: float, memory: int, horizon: int | None) -> Any:
    from fllm_cli.solve.pipeline import Settings
    from fllm_cli.solve.sandbox import Limits

    return Settings(
        max_attempts=attempts,
        max_rounds=rounds,
        max_horizon=horizon,
        limits=Limits(timeout=timeout, memory_mb=memory),
    )


def _problem(path: str) -> Any:
    from fllm_cli.resources import resolve_spec_path
    from fllm_cli.solve.problem import load_problem

    return load_problem(resolve_spec_path(path))


def _trace_lines(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def solve_command(
    problem: str = typer.Argument(..., help="Problem file (YAML with a top-level 'problem:')."),
    query: str = typer.Argument(..., help="The query; '-' reads it from standard input."),
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    temperature: TemperatureOpt = 0.0,
    request_timeout: TimeoutOpt = 60.0,
    retries: RetriesOpt = 4,
    no_cache: NoCacheOpt = False,
    output: str | None = typer.Option(None, "--output", "-o", help="Write the JSON result here."),
    as_json: bool = typer.Option(False, "--json", help="Print the JSON result."),
    trace: str | None = typer.Option(
        None, "--trace", help="Record every stage's prompt and reply (JSONL)."
    ),
    max_attempts: int = _ATTEMPTS,
    max_rounds: int = _ROUNDS,
    timeout: float = _CODE_TIMEOUT,
    memory_mb: int = _MEMORY,
    max_steps: int | None = _HORIZON,
) -> None:
    """Solve a planning query: the model formulates it, Z3 solves it in a sandbox."""
    import sys

    from fllm_cli.llm.registry import make_model
    from fllm_cli.solve.pipeline import Session, solve

    spec = _problem(problem)
    text = sys.stdin.read() if query == "-" else query
    if not text.strip():
        raise UsageError("the query is empty")
    settings = _settings(max_attempts, max_rounds, timeout, memory_mb, max_steps)
    backend = make_model(
        model, model_options(api_base, temperature, request_timeout, retries, no_cache)
    )
    session = Session(backend, spec, text, settings)
    try:
        result = solve(spec, text, backend, settings, session)
    finally:
        backend.close()
        if trace:
            write_atomic(trace, _trace_lines(session.trace))
    data = result.to_json()
    if output:
        write_atomic(output, json.dumps(data, indent=2) + "\n")
    if as_json:
        stdout_console().print_json(json.dumps(data))
    else:
        _render(data)


def _render(data: dict[str, Any]) -> None:
    out = stdout_console()
    out.print(
        f"status: {data['status']}  objective: {data['objective']}  "
        f"accepted: {data['accepted']}  rounds: {data['rounds']}  runs: {data['runs']}"
    )
    if data.get("error"):
        out.print(f"last error: {data['error']}")
    if data.get("plan") is not None:
        check = data.get("plan_check") or {}
        out.print(f"plan ({check.get('length')} steps, {check.get('reason')}):")
        for number, step in enumerate(data["plan"], 1):
            out.print(f"  {number}. {step}")
    elif data.get("solution") is not None:
        out.print(json.dumps(data["solution"], indent=2))
    stats = data.get("stats") or {}
    parts = [f"{k} {v['calls']} call(s) {v['seconds']:.1f}s" for k, v in stats.items()]
    stderr_console().print("stats: " + "; ".join(parts), highlight=False)


def bench_command(
    problem: str = typer.Argument(..., help="Problem file."),
    benchmark: str = typer.Argument(..., help="OptiGuide JSON or PlanBench JSONL file."),
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    temperature: TemperatureOpt = 0.0,
    request_timeout: TimeoutOpt = 60.0,
    retries: RetriesOpt = 4,
    no_cache: NoCacheOpt = False,
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N queries."),
    concurrency: int = typer.Option(
        1, "--concurrency", "-j", min=1, max=32, help="Queries solved in parallel (threads)."
    ),
    output: str | None = typer.Option(None, "--output", "-o", help="Per-query JSON report."),
    trace: str | None = typer.Option(None, "--trace", help="All prompts and replies (JSONL)."),
    tolerance: float = typer.Option(
        1e-4, "--tolerance", min=0.0, help="Relative tolerance on the objective."
    ),
    max_attempts: int = _ATTEMPTS,
    max_rounds: int = _ROUNDS,
    timeout: float = _CODE_TIMEOUT,
    memory_mb: int = _MEMORY,
    max_steps: int | None = _HORIZON,
) -> None:
    """Score the pipeline on a benchmark: optimal rate and success rate."""
    from fllm_cli.llm.registry import make_model
    from fllm_cli.solve.bench import load_bench, run_bench

    spec = _problem(problem)
    items = load_bench(benchmark)[:limit] if limit else load_bench(benchmark)
    settings = _settings(max_attempts, max_rounds, timeout, memory_mb, max_steps)
    options = model_options(api_base, temperature, request_timeout, retries, no_cache)
    make_model(model, options).close()  # fail fast on a bad --model before starting threads
    err = stderr_console()

    def progress(row: dict[str, Any]) -> None:
        mark = "optimal" if row["optimal"] else ("ok" if row["success"] else "wrong")
        err.print(f"[{row['index'] + 1}/{len(items)}] {mark} ({row['seconds']}s)", highlight=False)

    report = run_bench(
        spec, items, lambda: make_model(model, options), settings, concurrency, tolerance, progress
    )
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
    n = report["queries"]
    stdout_console().print(
        f"{report['problem']}: {n} queries  optimal {report['optimal']}/{n} "
        f"({100 * report['optimal_rate']:.1f}%)  success {report['success']}/{n} "
        f"({100 * report['success_rate']:.1f}%)  LLM calls {report['llm_calls']}  "
        f"cost ${report['cost_usd']:.4f}  {report['seconds']:.1f}s"
    )
    if output:
        err.print(f"report written to {Path(output)}")


def register(app: typer.Typer) -> None:
    """Add ``solve`` and ``solve-bench`` to the app."""
    app.command("solve")(solve_command)
    app.command("solve-bench")(bench_command)
