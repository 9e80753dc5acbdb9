"""``fllm mcp``: fllm as a Model Context Protocol server over stdio.

An MCP client (an IDE agent, a chat app) gets four tools: ``validate`` a domain file, ``plan``
a task inside a domain (the plan is valid by construction), ``verify`` any plan against a
domain, and ``run`` a plan with a bindings file. Each answers with plain JSON; a mistake is a
tool error whose text is fllm's one-line message. Standard output is the protocol's channel,
so nothing else is ever printed there.
"""

from __future__ import annotations

import json
from typing import Any

import typer

from fllm_cli import api
from fllm_cli.cli.manhelp import examples
from fllm_cli.errors import FllmError


def _fail(exc: FllmError) -> Exception:
    """The exception FastMCP turns into a tool error with fllm's one-line message."""
    return ValueError(exc.one_line())


def build_server() -> Any:
    """Return the FastMCP server with fllm's tools (not yet running)."""
    from mcp.server.fastmcp import FastMCP

    server = FastMCP(
        "fllm",
        instructions="Plans that follow formal rules: validate a domain, plan a task inside it "
        "(every plan is valid by construction), verify a plan, run a plan with bindings.",
        log_level="WARNING",  # the protocol's own request log is noise on the client's stderr
    )

    @server.tool()
    def validate(domain: str) -> dict[str, Any]:
        """Check a domain file (YAML); return whether it is valid and every diagnostic."""
        diagnostics, summary = api.diagnose_domain(domain)
        errors = [d for d in diagnostics if d.severity == "error"]
        return {
            "valid": not errors,
            "summary": summary,
            "diagnostics": [str(d) for d in diagnostics],
        }

    @server.tool()
    def plan(
        domain: str,
        task: str,
        inputs: list[str] | None = None,
        output: str | None = None,
        model: str | None = None,
    ) -> dict[str, Any]:
        """Plan a task inside a domain; the plan JSON is valid by construction.

        inputs are the task's inputs (NAME=TYPE or TYPE) and output its output type; give both
        or neither (then they are read from the task). model: a --model string (default: the
        embedded local model).
        """
        try:
            result = api.plan_task(domain, task, model, inputs=inputs or [], output=output)
        except FllmError as exc:
            raise _fail(exc) from None
        return dict(result.document)

    @server.tool()
    def verify(domain: str, plan: dict[str, Any]) -> dict[str, Any]:
        """Check a plan (the JSON of fllm plan) against a domain: valid, or where and why not."""
        try:
            word, doc = api.read_plan_file(json.dumps(plan), "plan")
            _, verdict = api.verify_plan(domain, word, doc)
        except FllmError as exc:
            raise _fail(exc) from None
        return {"valid": verdict.valid, "reason": None if verdict.valid else verdict.reason}

    @server.tool()
    def run(
        plan: dict[str, Any], bindings: str, inputs: dict[str, Any], max_replans: int = 2
    ) -> dict[str, Any]:
        """Carry out a plan of a tool domain with a bindings file and the inputs' values."""
        try:
            result = api.run_plan(plan, bindings, inputs, max_replans=max_replans)
        except FllmError as exc:
            raise _fail(exc) from None
        return result.as_dict()  # type: ignore[no-any-return]

    return server


def mcp_command() -> None:
    """Serve fllm over MCP on stdio: validate, plan, verify and run as tools."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise FllmError(
            "fllm mcp needs the MCP Python SDK ('mcp'), which is not installed"
        ) from None
    build_server().run("stdio")


EXAMPLES = examples(
    "fllm mcp   # as an MCP client starts it; stdin and stdout carry the protocol",
    'The client\'s server entry: {"command": "fllm", "args": ["mcp"]}',
)


def register(app: typer.Typer) -> None:
    """Add ``mcp`` to the app."""
    app.command("mcp", epilog=EXAMPLES)(mcp_command)
