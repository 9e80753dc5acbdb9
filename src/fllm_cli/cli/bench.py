"""``fllm bench``: run a task file with several strategies and report validity, cost and scores."""

from __future__ import annotations

import json
import sys
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from fllm_cli import api
from fllm_cli.bench import report as rep
from fllm_cli.bench.core import EXECUTORS, BenchOptions, BenchRun, parse_strategies, run_bench
from fllm_cli.bench.html import render_html
from fllm_cli.bench.results import is_results_file
from fllm_cli.cli import views
from fllm_cli.cli.common import stderr_console, stdout_console, write_atomic
from fllm_cli.cli.manhelp import examples
from fllm_cli.cli.options import (
    MaxCostOpt,
    ModelFlags,
    ModelOpt,
    OutOpt,
    QuietOpt,
    check_format,
    flag_groups,
    format_option,
)
from fllm_cli.cli.safe import plain
from fllm_cli.errors import UsageError
from fllm_cli.resources import is_dir, is_file

FORMATS = ("rich", "markdown", "json", "html")


@flag_groups
def bench(
    spec: str = typer.Argument(..., help="Domain spec, e.g. domains/openagi.yaml."),
    tasks_file: str = typer.Argument(
        ...,
        help="Tasks, JSON Lines: task, inputs, output, id, reference, vars (data domains: "
        "docs/bench.md).",
    ),
    strategy: str = typer.Option(
        "formal",
        "--strategy",
        "-s",
        help="formal, zero-shot, few-shot (comma-separated); data domains: formal, "
        "formal-given, zero-shot, gold.",
    ),
    search: str = typer.Option(
        api.DEFAULT_SEARCH,
        "--search",
        help="How the formal strategy plans, as `fllm plan --search`.",
    ),
    data: str | None = typer.Option(
        None,
        "--data",
        metavar="FILE.jsonl",
        help="Data domains: each task's data, one JSON object a line, matched by idx (else by "
        "line).",
    ),
    gold: str | None = typer.Option(
        None,
        "--gold",
        metavar="FILE.jsonl",
        help='Data domains: gold plans ({"idx", "plan"} lines) for the gold strategy.',
    ),
    model: ModelOpt = None,
    examples: str | None = typer.Option(
        None, "--examples", help="Few-shot examples (JSONL with references)."
    ),
    shots: int | None = typer.Option(
        None, "--shots", min=1, help="Use at most N few-shot examples."
    ),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Run only the first N tasks."),
    concurrency: int | None = typer.Option(
        None,
        "--concurrency",
        "-j",
        min=1,
        max=1024,
        help="Units run at once: threads (local, default 1) or Ray actors (default: cluster CPUs).",
    ),
    executor: str = typer.Option(
        "local", "--executor", help="local (threads) or ray (a Ray cluster)."
    ),
    ray_address: str | None = typer.Option(
        None,
        "--ray-address",
        metavar="ADDRESS",
        help="auto (a `ray start` cluster) or ray://HOST:PORT.",
    ),
    results: str | None = typer.Option(
        None,
        "--results",
        metavar="FILE.jsonl",
        help="Append each finished unit to FILE.jsonl (resumable; read by `fllm report`).",
    ),
    rate_limit: float | None = typer.Option(
        None,
        "--rate-limit",
        min=0.001,
        metavar="RATE",
        help="Model requests per second, all workers together.",
    ),
    out_file: OutOpt = None,
    fmt: str = format_option(FORMATS),
    resume: str | None = typer.Option(
        None,
        "--resume",
        help="Continue REPORT.json or RESULTS.jsonl, skipping finished units.",
    ),
    record: str | None = typer.Option(
        None, "--record", metavar="FILE", help="Write formal choice points, scored (JSONL)."
    ),
    strict: bool = typer.Option(False, "--strict", help="A bad task line is fatal."),
    flags: ModelFlags = ModelFlags(),
    max_llm_calls: int | None = typer.Option(
        None, "--max-llm-calls", min=0, help="Model calls per plan."
    ),
    max_backtracks: int = typer.Option(100, "--max-backtracks", min=0, help="Backtracks per plan."),
    max_cost: MaxCostOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Benchmark formal (automaton-guided) planning against zero- and few-shot free-text plans.

    Every plan is checked as by `fllm verify`. Data domains (TravelPlanner) take each task's
    data with --data and report the benchmark's own metrics (docs/bench.md). Ctrl-C or
    --max-cost keep what is done: the report is marked partial, and --resume continues it.
    --executor ray runs the units on a Ray cluster (docs/scale.md).
    """
    fmt = check_format(fmt, FORMATS)
    executor = executor.strip().lower()
    if executor not in EXECUTORS:
        raise UsageError(f"unknown executor '{executor}' (choose from {', '.join(EXECUTORS)})")
    if ray_address and executor != "ray":
        raise UsageError("--ray-address needs --executor ray")
    resume_results = bool(resume) and is_results_file(resume or "")
    if resume_results:
        if results and Path(results).resolve() != Path(resume or "").resolve():
            raise UsageError("--resume RESULTS.jsonl continues that file; drop --results")
        results = resume
    previous = rep.load_previous(resume) if resume and not resume_results else None
    out_path = out_file or (resume if previous is not None else None)
    opts = BenchOptions(
        spec=spec,
        tasks_file=tasks_file,
        strategies=parse_strategies(strategy),
        search=search,
        data_file=data,
        gold_file=gold,
        model=model,
        model_options=flags.options(max_cost),
        examples_file=examples,
        shots=shots,
        limit=limit,
        concurrency=concurrency or 1,
        max_cost=max_cost,
        budgets=api.Budgets(max_llm_calls, max_backtracks, 10_000),
        strict=strict,
        previous=previous,
        executor=executor,
        ray_address=ray_address,
        workers=concurrency,
        rate_limit=rate_limit,
        results_file=results,
        resume_results=resume_results,
    )
    for path, what in ((record, "--record"), (results, "--results")):
        if path and not is_dir(Path(path).resolve().parent):
            raise UsageError(f"cannot write '{path}' ({what}): its folder does not exist")
    progress, on_result, on_start = _progress(not quiet)
    with progress:
        run = run_bench(opts, on_result=on_result, on_start=on_start)
    if not quiet:
        _warn_bad_lines(run)
    if fmt == "html":
        page = render_html(run.report)
        if out_path:
            write_atomic(out_path, page)
        else:
            sys.stdout.write(page)
    elif out_path:
        write_atomic(out_path, rep.dumps(run.report))
    if record:
        _write_records(record, run.records, keep=bool(resume))
    if not quiet and fmt != "html":
        _emit(run, fmt)
    _finish_note(run, out_path, quiet, results)


def _progress(enabled: bool) -> tuple[AbstractContextManager[Any], Any, Any]:
    """Return (context, on_result, on_start) for a progress bar on stderr, silent off a tty."""
    console = stderr_console()
    if not enabled or not console.is_terminal:
        return nullcontext(), None, None
    bar = Progress(
        TextColumn("bench"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(
            "{task.fields[valid]} valid, {task.fields[calls]} model calls, "
            "{task.fields[tokens]} tokens, ${task.fields[spend]:.4f}"
        ),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    job = bar.add_task("bench", total=None, valid=0, calls=0, tokens=0, spend=0.0)
    counts = {"valid": 0, "calls": 0, "tokens": 0, "spend": 0.0}

    def on_result(row: dict[str, Any]) -> None:
        stats = row["stats"]
        counts["valid"] += int(row["valid"])
        counts["calls"] += stats.get("llm_calls", 0)
        counts["tokens"] += stats.get("prompt_tokens", 0) + stats.get("completion_tokens", 0)
        counts["spend"] += stats.get("cost_usd", 0.0)
        bar.update(
            job,
            advance=1,
            valid=counts["valid"],
            calls=counts["calls"],
            tokens=counts["tokens"],
            spend=counts["spend"],
        )

    def on_start(total: int) -> None:
        bar.update(job, total=total)

    return bar, on_result, on_start


def _warn_bad_lines(run: BenchRun) -> None:
    console = stderr_console()
    for error in run.bad_lines:
        console.print(
            Text.assemble(("warning:", "yellow"), plain(f" {error} (line skipped)")),
            highlight=False,
            soft_wrap=True,
        )


def _write_records(path: str, records: list[dict[str, Any]], keep: bool) -> None:
    """Write the choice records; when resuming, keep the lines already in the file."""
    old = ""
    if keep and is_file(path):
        old = Path(path).read_text(encoding="utf-8")
        if old and not old.endswith("\n"):
            old += "\n"
    write_atomic(path, old + "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))


def _emit(run: BenchRun, fmt: str, console: Console | None = None) -> None:
    """Print the summary in the chosen format."""
    if fmt == "markdown":
        sys.stdout.write(rep.markdown_table(run.report))
    elif fmt == "json":
        sys.stdout.write(json.dumps(run.report["summary"], indent=2) + "\n")
    else:
        out = console or stdout_console()
        table = views.bench_table(run.report)
        if views.table_width(table) > out.width:
            # Too narrow for the table: one block per strategy, nothing cut.
            out.print(views.bench_blocks(run.report))
        else:
            out.print(table)
        for title, cols, rows in rep.breakdowns(run.report):
            out.print(_group_table(title, cols, rows))


def _group_table(title: str, cols: list[tuple[str, str]], rows: list[list[str]]) -> Table:
    """Return one breakdown of the benchmark metrics (by level, by trip length) as a table."""
    table = Table(title=title)
    for index, (_key, label) in enumerate(cols):
        table.add_column(label, justify="left" if index < 2 else "right", no_wrap=True)
    for cells in rows:
        table.add_row(*(Text(c) for c in cells))
    return table


def _finish_note(run: BenchRun, out_path: str | None, quiet: bool, results: str | None) -> None:
    """Say where the report went, whether it is partial, and what was retried."""
    console = stderr_console()
    report = run.report
    if quiet:
        if report.get("stopped") == "interrupted":
            raise typer.Exit(130)
        return
    if out_path:
        console.print(plain(f"report written to {out_path}"), highlight=False)
    retried = (report.get("executor") or {}).get("retried") or []
    if retried:
        console.print(
            f"[yellow]{len(retried)} unit(s) ran again[/] after their worker died",
            highlight=False,
        )
    if report["partial"]:
        why = {"interrupted": "interrupted", "max_cost": "--max-cost reached"}.get(
            report.get("stopped") or "", "not every pair ran"
        )
        source = results or (out_path if out_path and not out_path.endswith(".html") else None)
        again = f"; continue with --resume {source}" if source else ""
        console.print(Text.assemble(("partial report", "yellow"), plain(f" ({why}){again}")))
    if report.get("stopped") == "interrupted":
        raise typer.Exit(130)


EXAMPLES = examples(
    "fllm bench domains/openagi.yaml tasks.jsonl --model random:1 --limit 50",
    "fllm bench domains/openagi.yaml tasks.jsonl -s formal,zero-shot -f html -o report.html",
)


def register(app: typer.Typer) -> None:
    """Add the command to the app."""
    app.command("bench", epilog=EXAMPLES)(bench)
