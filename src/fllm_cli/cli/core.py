"""``fllm validate``, ``fllm render-pda``, ``fllm verify``."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.text import Text
from rich.tree import Tree

from fllm_cli import api
from fllm_cli.automaton import render as pda_render
from fllm_cli.cli import views
from fllm_cli.cli.common import (
    plain_text,
    read_json_arg,
    read_text_arg,
    stderr_console,
    stdout_console,
    write_atomic,
)
from fllm_cli.cli.options import ConstraintsOpt, DataOpt, OutOpt, check_format, format_option
from fllm_cli.cli.safe import plain, safe_json
from fllm_cli.diagnostics import Diagnostic, sort_key, source_of
from fllm_cli.domain.variables import parse_var_options
from fllm_cli.errors import UsageError
from fllm_cli.plan.model import MAX_TREE_DEPTH, Derivation, TreeNode
from fllm_cli.resources import resolve_spec_path
from fllm_cli.textio import load_json, read_text

INPUT_HELP = (
    "A task input: MODALITY or NAME=MODALITY (repeatable), e.g. --input image --input query=text."
)
OUTPUT_HELP = "The modality the task must produce, e.g. --output text."
PDA_FORMATS = ("rich", "dot", "mermaid", "json")
VERIFY_FORMATS = ("rich", "text", "json")


def _module(name: str) -> Any | None:
    if importlib.util.find_spec(name) is None:
        return None
    return importlib.import_module(name)


def _spec_kind(path: str) -> str:
    """Return 'agent', 'problem' or 'domain' for a spec file."""
    is_agent = getattr(_module("fllm_cli.ltl"), "is_agent_spec", None)
    if is_agent is not None and is_agent(path):
        return "agent"
    is_problem = getattr(_module("fllm_cli.solve"), "is_problem_spec", None)
    if is_problem is not None and is_problem(path):
        return "problem"
    return "domain"


def diagnose(path: str) -> tuple[list[Diagnostic], str]:
    """Return every diagnostic of a spec file and a one-line summary."""
    kind = _spec_kind(str(resolve_spec_path(path)))
    resolved = str(resolve_spec_path(path))
    if kind == "agent":
        ltl: Any = _module("fllm_cli.ltl")
        return ltl.validate_agent_spec(resolved), "agent spec"
    if kind == "problem":
        solve: Any = _module("fllm_cli.solve")
        return solve.validate_problem_spec(resolved), "problem"
    return api.diagnose_domain(path)


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
    if _spec_kind(str(resolve_spec_path(spec))) == "agent":
        ltl: Any = _module("fllm_cli.ltl")
        path = str(resolve_spec_path(spec))
        if fmt == "rich":
            _show(views.agent_table(*ltl.agent_automaton(path)), out_file)
        else:
            _write_text(ltl.render_agent_automaton(path, fmt), out_file)
        return
    domain = api.load_domain(spec)
    if output is None and not inputs:
        pda = api.overview(domain, parse_var_options(var))
    else:
        pda = api.compile_problem(
            domain,
            inputs=inputs,
            output=output,
            variables=parse_var_options(var),
            require_vars=False,
        ).pda
    if fmt == "rich":
        _show(views.pda_table(pda, f"PDA of {domain.name}"), out_file)
    else:
        text = {
            "dot": pda_render.to_dot,
            "mermaid": pda_render.to_mermaid,
            "json": pda_render.to_json,
        }[fmt](pda)
        _write_text(text, out_file)


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


def _rich_tree(derivation: Derivation) -> Tree:
    """Return a derivation as a tree; every label is plain text, never markup."""
    g = derivation.grammar

    def label(node: TreeNode) -> Text:
        head = derivation.head(node)
        if head is not None and g.terminal[head].kind == "input":
            return plain(head, style="cyan")
        if head is not None:
            return Text.assemble(plain(head, "bold"), " ", plain(f"→ {g.phrase(node.lhs)}", "dim"))
        return plain(node.lhs)

    def add(parent: Tree, node: TreeNode) -> None:
        branch = parent.add(label(node))
        for child in node.children:
            if isinstance(child, TreeNode):
                add(branch, child)
            elif derivation.head(node) != child:
                branch.add(plain(child, style="green"))

    if derivation.root is None:
        return Tree("(empty)")
    if derivation.depth() > MAX_TREE_DEPTH:
        return Tree(plain(f"(a derivation {derivation.depth()} levels deep: not drawn)"))
    root = Tree(label(derivation.root))
    for child in derivation.root.children:
        if isinstance(child, TreeNode):
            add(root, child)
        elif derivation.head(derivation.root) != child:
            root.add(plain(child, style="green"))
    return root


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
    if doc is not None:
        if not inputs and isinstance(doc.get("inputs"), dict):
            inputs = [f"{k}={v}" for k, v in doc["inputs"].items()]
        output = output or doc.get("output") or None
    variables = parse_var_options(var)
    if doc is not None and isinstance(doc.get("vars"), dict):
        variables = {**{str(k): str(v) for k, v in doc["vars"].items()}, **variables}
    problem = api.compile_problem(
        spec,
        inputs=inputs,
        output=output,
        task=(doc or {}).get("task", ""),
        variables=variables,
        require_vars=False,
    )
    verdict = api.verify(problem, word, doc)
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
            out.print(_rich_tree(verdict.derivation))
    for step in report["steps"]:
        out.print(step, highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    """Add the commands to the app."""
    app.command("validate")(validate)
    app.command("render-pda")(render_pda)
    app.command("verify")(verify)


def _shown_total(report: dict[str, Any]) -> str:
    from fllm_cli.databound.spec import Currency  # only data plans need it

    return Currency.from_dict(report.get("currency")).show(round(report["total_cost"], 2))
