"""``fllm validate``, ``fllm render-pda``, ``fllm verify``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.text import Text

from fllm_cli import api
from fllm_cli.api import diagnose  # where `fllm validate` has always found it
from fllm_cli.cli import views
from fllm_cli.cli.common import (
    plain_text,
    read_json_arg,
    read_text_arg,
    stderr_console,
    stdout_console,
    write_atomic,
)
from fllm_cli.cli.manhelp import examples
from fllm_cli.cli.options import (
    INPUT_HELP,
    OUTPUT_HELP,
    ConstraintsOpt,
    DataOpt,
    OutOpt,
    check_format,
    format_option,
)
from fllm_cli.cli.safe import plain, safe_json
from fllm_cli.diagnostics import Diagnostic, sort_key, source_of
from fllm_cli.errors import UsageError
from fllm_cli.resources import resolve_spec_path
from fllm_cli.textio import load_json, read_text

PDA_FORMATS = ("rich", *api.PDA_FORMATS)
VERIFY_FORMATS = ("rich", "text", "json")

VALIDATE_FORMATS = ("rich", "json")


def _diag_json(d: Diagnostic) -> dict[str, Any]:
    loc = d.location
    return {
        "severity": d.severity,
        "message": d.message,
        "path": loc.path if loc else None,
        "line": loc.line if loc else None,
        "col": loc.col if loc else None,
    }


def validate(
    specs: list[str] = typer.Argument(..., metavar="SPEC...", help="Spec files to check."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only errors and warnings."),
    fmt: str = format_option(VALIDATE_FORMATS),
    out_file: OutOpt = None,
) -> None:
    """Check spec files without calling any model; report every problem with its location.

    Exit 0 when no file has an error (warnings allowed), 1 otherwise.
    """
    fmt = check_format(fmt, VALIDATE_FORMATS)
    for spec in specs:
        read_text(resolve_spec_path(spec), "spec file")  # unreadable: a misuse (exit 2)
    checked = [(spec, *diagnose(spec)) for spec in specs]
    failed = any(d.severity == "error" for _, diags, _ in checked for d in diags)
    if fmt == "json" or out_file:
        data = [
            {
                "file": spec,
                "ok": not any(d.severity == "error" for d in diags),
                "summary": summary,
                "diagnostics": [_diag_json(d) for d in sorted(diags, key=sort_key)],
            }
            for spec, diags, summary in checked
        ]
        text = json.dumps({"files": data, "ok": not failed}, indent=2, ensure_ascii=False) + "\n"
        if out_file:
            write_atomic(out_file, text)
        if fmt == "json":
            sys.stdout.write(safe_json(text))
            raise typer.Exit(1 if failed else 0)
    _print_diagnostics(checked, quiet)
    raise typer.Exit(1 if failed else 0)


# Diagnostics drawn per file; the rest are counted (a file of repeated mistakes would otherwise
# print thousands of excerpts). `--format json` lists every one.
MAX_DRAWN = 50


def _print_diagnostics(checked: list[tuple[str, list[Diagnostic], str]], quiet: bool) -> None:
    out = stdout_console()
    sources: dict[str, str | None] = {}  # each file is read once, not once per excerpt
    for spec, diags, summary in checked:
        ordered = sorted(diags, key=sort_key)
        for d in ordered[:MAX_DRAWN]:
            style = "red" if d.severity == "error" else "yellow"
            out.print(plain(d.header(), style), soft_wrap=True, highlight=False)
            path = d.location.path if d.location else ""
            if path not in sources:
                sources[path] = source_of(path)
            excerpt = d.excerpt(sources[path]) if sources[path] is not None else ""
            if excerpt:
                out.print(excerpt, markup=False, highlight=False, soft_wrap=True)
        if len(ordered) > MAX_DRAWN:
            more = len(ordered) - MAX_DRAWN
            out.print(
                plain(f"... and {more:,} more (--format json lists them all)", "dim"),
                soft_wrap=True,
            )
        errors = sum(d.severity == "error" for d in diags)
        warnings = len(diags) - errors
        if not quiet or errors:
            verdict = "[red]invalid[/]" if errors else "[green]ok[/]"
            out.print(
                f"{spec}: {verdict} — {summary}; {errors} error(s), {warnings} warning(s)",
                markup=True,
                highlight=False,
                soft_wrap=True,
            )


def render_pda(
    spec: str = typer.Argument(..., help="Domain or agent spec."),
    inputs: list[str] = typer.Option([], "--input", "-i", help=INPUT_HELP),
    output: str | None = typer.Option(None, "--output", help=OUTPUT_HELP),
    fmt: str = format_option(PDA_FORMATS),
    out_file: OutOpt = None,
    var: list[str] = typer.Option([], "--var", help="A scenario variable: NAME=VALUE."),
) -> None:
    """Print the pushdown automaton compiled from a spec.

    Transitions are written as in the paper: (input, pop; push). Without --input/--output a tool
    domain is shown for one input of each allowed modality and a start symbol S over the outputs.
    """
    fmt = check_format(fmt, PDA_FORMATS, {"table": "rich"})
    if api.spec_kind(spec) == "agent":
        if fmt == "rich":
            _show(views.agent_table(*api.agent_automaton(spec)), out_file)
        else:
            _write_text(api.render_agent_automaton(spec, fmt), out_file)
        return
    domain = api.load_domain(spec)
    pda = api.automaton(domain, inputs=inputs, output=output, variables=api.parse_vars(var))
    if fmt == "rich":
        _show(views.pda_table(pda, f"PDA of {domain.name}"), out_file)
    else:
        _write_text(api.render_pda(pda, fmt), out_file)


def _show(renderable: Any, out_file: str | None) -> None:
    """Print a rich renderable; with ``-o`` write its plain text to the file as well."""
    stdout_console().print(renderable)
    if out_file:
        write_atomic(out_file, plain_text(renderable))


def _write_text(text: str, out_file: str | None) -> None:
    """Print text as it is; with ``-o`` write it to the file instead."""
    if out_file:
        write_atomic(out_file, text)
    else:
        sys.stdout.write(text)


def verify(
    spec: str = typer.Argument(..., help="Domain spec."),
    plan_file: str = typer.Argument(
        ..., metavar="PLAN", help="Plan: one step per line, a plan JSON, or - for stdin."
    ),
    inputs: list[str] = typer.Option(
        [], "--input", "-i", help=INPUT_HELP + " Default: from a plan JSON."
    ),
    output: str | None = typer.Option(
        None, "--output", help=OUTPUT_HELP + " Default: from a plan JSON."
    ),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="Print nothing; the exit code says it."
    ),
    fmt: str = format_option(VERIFY_FORMATS),
    out_file: OutOpt = None,
    var: list[str] = typer.Option(
        [], "--var", help="A scenario variable: NAME=VALUE. Default: from a plan JSON."
    ),
    data_file: DataOpt = None,
    constraints_file: ConstraintsOpt = None,
) -> None:
    """Decide whether a plan satisfies a domain's grammar and limits.

    Exit 0 and print the derivation tree if it does; exit 1 and name the first failing position
    and the rule or limit it breaks if it does not.
    """
    fmt = check_format(fmt, VERIFY_FORMATS)
    text = read_text_arg(plan_file)
    shown = "<stdin>" if plan_file == "-" else plan_file
    if data_file is not None or constraints_file is not None:
        _verify_data(spec, text, shown, data_file, constraints_file, quiet, fmt, out_file)
    word, doc = api.read_plan_file(text, shown)
    problem, verdict = api.verify_plan(
        spec, word, doc, inputs=inputs, output=output, variables=api.parse_vars(var)
    )
    where = _failure_place(verdict, text, shown, doc) if not verdict.valid else None
    steps = problem.steps(verdict) if verdict.valid else []
    report = {
        "valid": verdict.valid,
        "symbols": len(word),
        "where": where,
        "reason": None if verdict.valid else verdict.reason,
        "steps": steps,
    }
    if out_file:
        write_atomic(out_file, json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    if not verdict.valid and not quiet:
        stderr_console().print(
            f"[bold red]invalid plan:[/] {escape(f'{where}: {verdict.reason}')}", soft_wrap=True
        )
    if not quiet:
        _print_verdict(report, fmt, verdict, spec)
    raise typer.Exit(0 if verdict.valid else 1)


def _verify_data(
    spec: str,
    text: str,
    shown: str,
    data_file: str | None,
    constraints_file: str | None,
    quiet: bool,
    fmt: str,
    out_file: str | None,
) -> None:
    """Check a data-bound plan and name every rule it breaks (day and slot); exit 0 or 1."""
    if data_file is None:
        raise UsageError("give the task's data with --data FILE")
    plan = load_json(text, shown)
    data = read_json_arg(data_file)
    given = read_json_arg(constraints_file) if constraints_file else None
    report = api.verify_data(spec, plan, data, given)
    if out_file:
        write_atomic(out_file, json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    if not quiet:
        if fmt == "json":
            sys.stdout.write(safe_json(json.dumps(report, indent=2, ensure_ascii=False) + "\n"))
        elif report["valid"]:
            stdout_console().print(
                Text.assemble(
                    ("valid plan", "green"),
                    f" ({report['days']} days, total cost {_shown_total(report)}) for ",
                    plain(Path(spec).name),
                )
            )
        else:
            err = stderr_console()
            err.print(
                Text.assemble(
                    ("invalid plan: ", "bold red"),
                    plain(f"{shown}: {len(report['violations'])} rule(s) broken"),
                )
            )
            for line in report["violations"]:
                err.print(plain("  " + line))
    raise typer.Exit(0 if report["valid"] else 1)


def _failure_place(verdict: Any, text: str, shown: str, doc: dict[str, Any] | None) -> str:
    """Return ``file:line:1`` (text plans) or ``file: word position N`` (plan JSON)."""
    if doc is not None:
        return f"{shown}: word position {verdict.position}"
    lines = api.word_line_numbers(text)
    line = (
        lines[verdict.position - 1]
        if 0 < verdict.position <= len(lines)
        else len(text.splitlines())
    )
    return f"{shown}:{line}:1"


def _print_verdict(report: dict[str, Any], fmt: str, verdict: Any, spec: str) -> None:
    if fmt == "json":
        sys.stdout.write(safe_json(json.dumps(report, indent=2, ensure_ascii=False) + "\n"))
        return
    if not verdict.valid:
        return
    out = stdout_console()
    if fmt == "rich":
        out.print(
            Text.assemble(
                ("valid plan", "green"),
                f" ({report['symbols']} symbols) for ",
                plain(Path(spec).name),
            )
        )
        if verdict.derivation is not None:
            out.print(views.derivation_tree(verdict.derivation))
    for step in report["steps"]:
        out.print(step, highlight=False, markup=False)


VALIDATE_EXAMPLES = examples(
    "fllm validate domains/daily_plan.yaml",
    "fllm validate domains/*.yaml -f json -o checks.json",
)
RENDER_EXAMPLES = examples(
    "fllm render-pda domains/openagi.yaml --input image --output text",
    "fllm render-pda domains/agents/react.sexp --format mermaid -o react.mmd",
)
VERIFY_EXAMPLES = examples(
    'fllm verify domains/daily_plan.yaml plan.txt; echo "exit $?"',
    "fllm plan domains/openagi.yaml TASK -f json | fllm verify domains/openagi.yaml -",
)


def register(app: typer.Typer) -> None:
    """Add the commands to the app."""
    app.command("validate", epilog=VALIDATE_EXAMPLES)(validate)
    app.command("render-pda", epilog=RENDER_EXAMPLES)(render_pda)
    app.command("verify", epilog=VERIFY_EXAMPLES)(verify)


def _shown_total(report: dict[str, Any]) -> str:
    return api.money(report.get("currency"))(round(report["total_cost"], 2))
