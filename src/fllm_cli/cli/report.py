"""``fllm report``: rebuild the bench report page from a results file (or a JSON report)."""

from __future__ import annotations

import sys

import typer

from fllm_cli.bench import report as rep
from fllm_cli.bench.html import render_html
from fllm_cli.bench.results import is_results_file, read_results, report_from_results
from fllm_cli.cli.common import stderr_console, write_atomic
from fllm_cli.cli.manhelp import examples
from fllm_cli.cli.options import OutOpt, QuietOpt, check_format, format_option
from fllm_cli.cli.safe import plain
from fllm_cli.errors import UsageError
from fllm_cli.resources import is_file
from fllm_cli.textio import shown

FORMATS = ("html", "json", "markdown")


def report(
    results: str = typer.Argument(
        ...,
        metavar="RESULTS",
        help="A results file (fllm bench --results FILE.jsonl) or a JSON report (fllm bench -o).",
    ),
    out_file: OutOpt = None,
    fmt: str = format_option(FORMATS, default="html"),
    quiet: QuietOpt = False,
) -> None:
    """Build the bench report from what a run wrote: one self-contained HTML page by default.

    A results file may hold several runs (other models, strategies, resumed runs); the page
    compares all of them. The page needs no network to open.
    """
    fmt = check_format(fmt, FORMATS)
    if not is_file(results):
        raise UsageError(f"no such results file or report: '{shown(results)}'")
    if is_results_file(results):
        log = read_results(results)
        if not log.rows:
            raise UsageError(f"'{results}' holds no result yet")
        doc = report_from_results(log, results)
    else:
        doc = rep.load_previous(results)
    if fmt == "html":
        text = render_html(doc)
    elif fmt == "json":
        text = rep.dumps(doc)
    else:
        text = rep.markdown_table(doc)
    if out_file:
        write_atomic(out_file, text)
        if not quiet:
            stderr_console().print(plain(f"report written to {out_file}"), highlight=False)
    else:
        sys.stdout.write(text)


EXAMPLES = examples(
    "fllm report runs/openagi.jsonl -o report.html",
    "fllm report report.json -f markdown",
)


def register(app: typer.Typer) -> None:
    """Add the command to the app."""
    app.command("report", epilog=EXAMPLES)(report)
