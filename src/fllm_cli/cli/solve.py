"""``fllm solve`` and ``fllm solve-bench``: LLM-formulated optimisation with Z3 (LLMFP)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from fllm_cli import api
from fllm_cli.cli.common import stderr_console, stdout_console, write_atomic
from fllm_cli.cli.manhelp import examples
from fllm_cli.cli.options import (
    MaxCostOpt,
    ModelFlags,
    ModelOpt,
    OutOpt,
    QuietOpt,
    SolveFlags,
    check_format,
    flag_groups,
    format_option,
    renamed,
)
from fllm_cli.cli.progress import LiveStatus
from fllm_cli.cli.safe import safe_json
from fllm_cli.errors import IncompleteRun, UsageError

# Old spellings, hidden, kept for one release.
_OLD_OUT = typer.Option(None, "--output", hidden=True)
_OLD_JSON = typer.Option(False, "--json", hidden=True)
SOLVE_FORMATS = ("rich", "json")


def _common(
    fmt: str, as_json: bool, out: str | None, old_out: str | None, quiet: bool
) -> tuple[str, str | None]:
    """Resolve the format and the output file, old spellings included."""
    fmt = check_format("json" if as_json else fmt, SOLVE_FORMATS)
    return fmt, renamed(out, old_out, "--out", "--output", quiet)


def _trace_lines(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


@flag_groups
def solve_command(
    problem: str = typer.Argument(..., help="Problem file (YAML with a top-level 'problem:')."),
    query: str = typer.Argument(..., help="The query; '-' reads it from standard input."),
    model: ModelOpt = None,
    flags: ModelFlags = ModelFlags(),
    max_cost: MaxCostOpt = None,
    fmt: str = format_option(SOLVE_FORMATS),
    out_file: OutOpt = None,
    output: str | None = _OLD_OUT,
    as_json: bool = _OLD_JSON,
    trace: str | None = typer.Option(
        None, "--trace", help="Record every stage's prompt and reply (JSONL)."
    ),
    budgets: SolveFlags = SolveFlags(),
    quiet: QuietOpt = False,
) -> None:
    """Solve a planning query: the model formulates it, Z3 solves it in a sandbox."""
    import sys

    fmt, out = _common(fmt, as_json, out_file, output, quiet)
    settings = budgets.settings(quiet)
    spec = api.load_problem(problem)
    text = sys.stdin.read() if query == "-" else query
    if not text.strip():
        raise UsageError("the query is empty")
    status = LiveStatus("solving", enabled=not quiet)
    backend = status.observe(model, flags.options(), max_cost=max_cost)
    try:
        with status:
            result = api.solve(spec, text, backend, settings)
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


@flag_groups
def bench_command(
    problem: str = typer.Argument(..., help="Problem file."),
    benchmark: str = typer.Argument(..., help="OptiGuide JSON or PlanBench JSONL file."),
    model: ModelOpt = None,
    flags: ModelFlags = ModelFlags(),
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
    budgets: SolveFlags = SolveFlags(),
    quiet: QuietOpt = False,
) -> None:
    """Score the pipeline on a benchmark: optimal rate and success rate."""
    fmt, output = _common(fmt, False, out_file, output, quiet)
    settings = budgets.settings(quiet)
    spec = api.load_problem(problem)
    items = api.load_solve_bench(benchmark)
    items = items[:limit] if limit else items
    options = flags.options()
    err = stderr_console()
    status = LiveStatus("solve-bench", enabled=not quiet)
    # The run's meter (built now: a bad --model fails before any thread starts) counts and
    # caps the spend of every query; each thread's model is a fork of it.
    meter = status.observe(model, options, max_cost=max_cost)
    done = {"n": 0, "optimal": 0}

    def progress(row: dict[str, Any]) -> None:
        done["n"] += 1
        done["optimal"] += int(row["optimal"])
        status.stage(f"{done['n']}/{len(items)} queries, {done['optimal']} optimal")

    try:
        with status:
            report = api.run_solve_bench(
                spec,
                items,
                lambda: meter.fork(api.make_model(model, options)),
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


SOLVE_EXAMPLES = examples(
    'fllm solve domains/problems/coffee.yaml "What if demand at cafe1 rose by 23%?" -m gpt-4o',
    "fllm solve domains/problems/blocksworld.yaml - -m gpt-4o < instance.txt",
)
BENCH_EXAMPLES = examples(
    "fllm solve-bench domains/problems/coffee.yaml domains/problems/data/coffee.benchmark.json"
    " -m gpt-4o --limit 50",
)


def register(app: typer.Typer) -> None:
    """Add ``solve`` and ``solve-bench`` to the app."""
    app.command("solve", epilog=SOLVE_EXAMPLES)(solve_command)
    app.command("solve-bench", epilog=BENCH_EXAMPLES)(bench_command)
