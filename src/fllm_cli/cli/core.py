"""``fllm validate``, ``fllm render-pda``, ``fllm verify``."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import typer
from rich.tree import Tree

from fllm_cli import api
from fllm_cli.automaton import render as pda_render
from fllm_cli.automaton.explicit import ExplicitPDA
from fllm_cli.automaton.pda import pda_from_grammar
from fllm_cli.cli.common import read_text_arg, stderr_console, stdout_console
from fllm_cli.diagnostics import Diagnostic, sort_key
from fllm_cli.errors import UsageError
from fllm_cli.grammar.compile import domain_grammar
from fllm_cli.plan.document import build_document, step_lines
from fllm_cli.plan.model import Derivation, TreeNode
from fllm_cli.resources import resolve_spec_path
from fllm_cli.search.automaton_prompting import parse_var_options, plan_steps
from fllm_cli.spec.check import check_domain
from fllm_cli.spec.load import load_domain, read_domain

INPUT_HELP = (
    "A task input: MODALITY or NAME=MODALITY (repeatable), e.g. --input image --input query=text."
)
OUTPUT_HELP = "The modality the task must produce, e.g. --output text."


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
    domain, diags = read_domain(path)
    if domain is not None and not any(d.severity == "error" for d in diags):
        diags = diags + check_domain(domain)
    summary = "domain"
    if domain is not None:
        if domain.kind == "tools":
            summary = (
                f"tool domain '{domain.name}': {len(domain.tools)} tools, "
                f"{len(domain.modalities)} modalities"
            )
        elif domain.automaton is not None:
            summary = (
                f"automaton domain '{domain.name}': {len(domain.automaton.states)} states, "
                f"{len(domain.automaton.transitions)} transitions"
            )
        elif domain.grammar is not None:
            summary = (
                f"grammar domain '{domain.name}': {len(domain.grammar.productions)} productions, "
                f"{len(domain.grammar.terminals)} terminals"
            )
    return diags, summary


def validate(
    specs: list[str] = typer.Argument(..., metavar="SPEC...", help="Spec files to check."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only errors and warnings."),
) -> None:
    """Check spec files without calling any model; report every problem with its location.

    Exit 0 when no file has an error (warnings allowed), 1 otherwise.
    """
    out = stdout_console()
    failed = False
    for spec in specs:
        diags, summary = diagnose(spec)
        for d in sorted(diags, key=sort_key):
            style = "red" if d.severity == "error" else "yellow"
            out.print(f"[{style}]{d.header()}[/]", soft_wrap=True, markup=True, highlight=False)
            excerpt = d.excerpt()
            if excerpt:
                out.print(excerpt, markup=False, highlight=False, soft_wrap=True)
        errors = sum(d.severity == "error" for d in diags)
        warnings = len(diags) - errors
        failed = failed or errors > 0
        if not quiet or errors:
            verdict = "[red]invalid[/]" if errors else "[green]ok[/]"
            out.print(
                f"{spec}: {verdict} — {summary}; {errors} error(s), {warnings} warning(s)",
                markup=True,
                highlight=False,
                soft_wrap=True,
            )
    raise typer.Exit(1 if failed else 0)


def render_pda(
    spec: str = typer.Argument(..., help="Domain or agent spec."),
    inputs: list[str] = typer.Option([], "--input", "-i", help=INPUT_HELP),
    output: str | None = typer.Option(None, "--output", help=OUTPUT_HELP),
    fmt: str = typer.Option("table", "--format", "-f", help="table, dot, mermaid or json."),
    var: list[str] = typer.Option([], "--var", help="A scenario variable: NAME=VALUE."),
) -> None:
    """Print the pushdown automaton compiled from a spec.

    Transitions are written as in the paper: (input, pop; push). Without --input/--output a tool
    domain is shown for one input of each allowed modality and a start symbol S over the outputs.
    """
    if fmt not in ("table", "dot", "mermaid", "json"):
        raise UsageError(f"unknown --format '{fmt}' (choose table, dot, mermaid or json)")
    out = stdout_console()
    if _spec_kind(str(resolve_spec_path(spec))) == "agent":
        ltl = _module("fllm_cli.ltl")
        path = str(resolve_spec_path(spec))
        if fmt == "table":
            out.print(ltl.agent_automaton_table(path))  # type: ignore[union-attr]
        else:
            typer.echo(ltl.render_agent_automaton(path, fmt), nl=False)  # type: ignore[union-attr]
        return
    domain = load_domain(spec)
    if domain.kind == "tools" and output is None and not inputs:
        pda = pda_from_grammar(domain_grammar(domain))  # the default task: every interface
    else:
        pda = api.compile_problem(
            domain,
            inputs=inputs,
            output=output,
            variables=parse_var_options(var),
            require_vars=False,
        ).pda
    if fmt == "table":
        out.print(pda_render.to_table(pda, f"PDA of {domain.name}"))
    else:
        text = {
            "dot": pda_render.to_dot,
            "mermaid": pda_render.to_mermaid,
            "json": pda_render.to_json,
        }[fmt](pda)
        typer.echo(text, nl=False)


def _rich_tree(derivation: Derivation) -> Tree:
    g = derivation.grammar

    def label(node: TreeNode) -> str:
        head = derivation.head(node)
        if head is not None and g.terminal[head].kind == "input":
            return f"[cyan]{head}[/]"
        if head is not None:
            return f"[bold]{head}[/] [dim]→ {g.phrase(node.lhs)}[/]"
        return f"{node.lhs}"

    def add(parent: Tree, node: TreeNode) -> None:
        branch = parent.add(label(node))
        for child in node.children:
            if isinstance(child, TreeNode):
                add(branch, child)
            elif derivation.head(node) != child:
                branch.add(f"[green]{child}[/]")

    if derivation.root is None:
        return Tree("(empty)")
    root = Tree(label(derivation.root))
    for child in derivation.root.children:
        if isinstance(child, TreeNode):
            add(root, child)
        elif derivation.head(derivation.root) != child:
            root.add(f"[green]{child}[/]")
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
    var: list[str] = typer.Option(
        [], "--var", help="A scenario variable: NAME=VALUE. Default: from a plan JSON."
    ),
) -> None:
    """Decide whether a plan satisfies a domain's grammar and limits.

    Exit 0 and print the derivation tree if it does; exit 1 and name the first failing position
    and the rule or limit it breaks if it does not.
    """
    text = read_text_arg(plan_file)
    shown = "<stdin>" if plan_file == "-" else plan_file
    word, doc = api.read_plan_file(text, shown)
    if doc is not None:
        if not inputs and isinstance(doc.get("inputs"), dict):
            inputs = [f"{k}={v}" for k, v in doc["inputs"].items()]
        output = output or doc.get("output") or None
    variables = parse_var_options(var)
    if doc is not None and isinstance(doc.get("vars"), dict):
        variables = {**{str(k): str(v) for k, v in doc["vars"].items()}, **variables}
    domain_problem = api.compile_problem(
        spec,
        inputs=inputs,
        output=output,
        task=(doc or {}).get("task", ""),
        variables=variables,
        require_vars=False,
    )
    verdict = api.verify(domain_problem, word)
    out = stdout_console()
    if not verdict.valid:
        if doc is None:
            lines = api.word_line_numbers(text)
            line = (
                lines[verdict.position - 1]
                if 0 < verdict.position <= len(lines)
                else len(text.splitlines())
            )
            where = f"{shown}:{line}:1"
        else:
            where = f"{shown}: word position {verdict.position}"
        stderr_console().print(
            f"[bold red]invalid plan:[/] {where}: {verdict.reason}", soft_wrap=True
        )
        raise typer.Exit(1)
    if quiet:
        return
    if verdict.config is not None and isinstance(domain_problem.pda, ExplicitPDA):
        out.print(f"[green]valid plan[/] ({len(word)} symbols) for {Path(spec).name}")
        steps = plan_steps(
            domain_problem.domain.automaton,  # type: ignore[arg-type]
            domain_problem.pda,
            verdict.config,
            domain_problem.vars,
        )
        for step in step_lines({"steps": steps}, domain_problem.task):
            out.print(step, highlight=False)
        return
    assert verdict.derivation is not None
    out.print(f"[green]valid plan[/] ({len(word)} symbols) for {Path(spec).name}")
    out.print(_rich_tree(verdict.derivation))
    document = build_document(domain_problem.domain, domain_problem.task, verdict.derivation, "")
    for step in step_lines(document, domain_problem.task):
        out.print(step, highlight=False)


def register(app: typer.Typer) -> None:
    """Add the commands to the app."""
    app.command("validate")(validate)
    app.command("render-pda")(render_pda)
    app.command("verify")(verify)
