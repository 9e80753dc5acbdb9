"""``fllm import-tools`` (tool lists to a domain) and ``fllm run`` (carry a plan out)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import typer

from fllm_cli import api
from fllm_cli.cli.common import (
    read_json_arg,
    read_text_arg,
    stderr_console,
    stdout_console,
    write_atomic,
)
from fllm_cli.cli.manhelp import examples
from fllm_cli.cli.options import ModelOpt, QuietOpt, check_format
from fllm_cli.cli.safe import plain, safe, safe_json
from fllm_cli.errors import FllmError, IncompleteRun, UsageError

RUN_FORMATS = ("text", "json")


def import_tools_command(
    source: str | None = typer.Argument(
        None, metavar="[TOOLS.json]", help="An OpenAI-style tool list (JSON), '-' for stdin."
    ),
    mcp: str | None = typer.Option(
        None,
        "--mcp",
        metavar="COMMAND",
        help="Import the tools of the MCP server this command starts (stdio; split into words, "
        "never run by a shell), e.g. --mcp 'python my_server.py'.",
    ),
    out: str = typer.Option(..., "--out", "-o", metavar="FILE", help="The domain file to write."),
    name: str | None = typer.Option(None, "--name", help="The domain's name (default: FILE's)."),
    mapping: str | None = typer.Option(
        None, "--mapping", metavar="FILE", help="YAML: per tool, input types, output, settings."
    ),
    bindings: str | None = typer.Option(
        None, "--bindings", metavar="FILE", help="Also write a bindings skeleton for fllm run."
    ),
    quiet: QuietOpt = False,
) -> None:
    """Turn a tool list into a tool domain; each decision is a comment in the file."""
    if (source is None) == (mcp is None):
        raise UsageError("give a tool list file or --mcp COMMAND (one of them)")
    server: list[str] | None = None
    if mcp is not None:
        server = _words(mcp)
        doc: Any = api.list_mcp_tools(server)
        where = f"the MCP server {mcp!r}"
    else:
        assert source is not None
        doc = read_json_arg(source)
        where = "<stdin>" if source == "-" else source
    table = api.parse_tool_mapping(read_text_arg(mapping), mapping) if mapping else None
    made = api.import_tools(
        doc, where, name=name or Path(out).stem, domain_file=out, mapping=table, server=server
    )
    report = made.report
    write_atomic(out, made.domain)
    diagnostics, _ = api.diagnose_domain(out)
    errors = [d for d in diagnostics if d.severity == "error"]
    if errors:  # a bug of the importer, never the user's: say it, keep the file for a report
        raise FllmError(f"internal error: the imported domain does not validate: {errors[0]}")
    if bindings:
        write_atomic(bindings, made.bindings)
    if quiet:
        return
    err = stderr_console()
    for line in report.skipped:
        err.print(plain(f"not imported: {line}", style="yellow"))
    for line in report.problems:
        err.print(plain(f"note: {line}", style="yellow"))
    kinds = {m for t in report.tools for _, m in t.inputs} | {t.output for t in report.tools}
    also = f"; bindings skeleton in {bindings}" if bindings else ""
    line = f"{out}: {len(report.tools)} tool(s), {len(kinds)} type(s); it validates{also}"
    stdout_console().print(plain(line))


def _words(command: str) -> list[str]:
    """Split a server command into words as a shell would, without running one."""
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"--mcp {command!r}: {exc}") from None
    if not words:
        raise UsageError("--mcp needs a command, e.g. --mcp 'python my_server.py'")
    return words


def run_command(
    plan_file: str = typer.Argument(
        ..., metavar="PLAN.json", help="A plan from fllm plan -f json."
    ),
    bind: str = typer.Option(..., "--bind", metavar="FILE", help="How each tool is called."),
    inputs: list[str] = typer.Option(
        [], "--input", "-i", metavar="NAME=VALUE", help="A task input's value (repeatable)."
    ),
    inputs_file: str | None = typer.Option(
        None, "--inputs", metavar="FILE", help="The task inputs' values as one JSON object."
    ),
    domain: str | None = typer.Option(None, "--domain", help="The domain (default: the plan's)."),
    model: ModelOpt = None,
    workers: int = typer.Option(4, "--workers", min=1, max=64, help="Tool calls at once."),
    max_replans: int = typer.Option(
        2, "--max-replans", min=0, max=20, help="Re-plans after failed tools (0: none)."
    ),
    fmt: str = typer.Option("text", "--format", "-f", help=" | ".join(RUN_FORMATS) + "."),
    out_file: str | None = typer.Option(
        None, "--out", "-o", metavar="FILE", help="Also write the run (JSON) to FILE."
    ),
    quiet: QuietOpt = False,
) -> None:
    """Carry out a plan: each tool called through its binding, a re-plan when a tool fails.

    Independent branches run at once, every value is checked against its type, and a re-plan
    stays inside the same rules.
    """
    fmt = check_format(fmt, RUN_FORMATS)
    doc = read_json_arg(plan_file)
    if not isinstance(doc, dict):
        raise UsageError(f"{plan_file}: a plan file is a JSON object (fllm plan -f json)")
    given: dict[str, Any] = {}
    if inputs_file:
        values = read_json_arg(inputs_file)
        if not isinstance(values, dict):
            raise UsageError(f"{inputs_file}: the inputs file must be a JSON object")
        given.update(values)
    given.update(api.input_values(inputs, doc, "--input"))
    result = execute(doc, bind, given, domain, model, workers, max_replans, quiet or fmt == "json")
    body = result.as_dict()
    if out_file:
        write_atomic(out_file, json.dumps(body, indent=2, ensure_ascii=False) + "\n")
    if fmt == "json" and not quiet:
        print(safe_json(json.dumps(body, indent=2, ensure_ascii=False)))
    elif not quiet and result.ok:
        shown = result.output if isinstance(result.output, str) else json.dumps(result.output)
        print(safe(shown))
    if not result.ok:
        kept = f"; the values made so far are in {out_file}" if out_file else ""
        raise IncompleteRun(result.message + kept)


def execute(
    doc: dict[str, Any],
    bind: str,
    given: dict[str, Any],
    domain: str | None,
    model: str | None,
    workers: int,
    max_replans: int,
    silent: bool,
) -> Any:
    """Run a plan, saying on standard error how each step went (unless ``silent``)."""
    err = stderr_console()

    def on_event(name: str, data: dict[str, Any]) -> None:
        if silent:
            return
        if name == "end":
            state = "failed: " + str(data["error"]) if data.get("error") else "done"
            took = f"{data['seconds']:.2f} s"
            err.print(plain(f"step {data['step']} {data['tool']}: {state} ({took})"))
        elif name == "replan":
            err.print(plain(f"re-planning without {', '.join(data['failed'])}", style="yellow"))

    return api.run_plan(
        doc, bind, given, spec=domain, model=model, workers=workers,
        max_replans=max_replans, on_event=on_event,
    )  # fmt: skip


IMPORT_EXAMPLES = examples(
    "fllm import-tools tools.json -o domains/mytools.yaml --bindings mytools.bind.yaml",
    'fllm import-tools --mcp "python my_server.py" -o domains/mytools.yaml --bindings b.yaml',
)
RUN_EXAMPLES = examples(
    'fllm plan domains/mytools.yaml "REQUEST" -i text --output number -f json -o plan.json',
    'fllm run plan.json --bind mytools.bind.yaml --input text="Hello there"',
)


def register(app: typer.Typer) -> None:
    """Add ``import-tools`` and ``run`` to the app."""
    app.command("import-tools", epilog=IMPORT_EXAMPLES)(import_tools_command)
    app.command("run", epilog=RUN_EXAMPLES)(run_command)
