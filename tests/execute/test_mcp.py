"""MCP over stdio with real servers: a server written here, and fllm's own (fllm mcp)."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_fllm

pytest.importorskip("mcp")

ROOT = Path(__file__).resolve().parents[2]
SERVER = textwrap.dedent(
    '''
    from mcp.server.fastmcp import FastMCP

    app = FastMCP("demo", log_level="WARNING")

    @app.tool()
    def reverse(text: str) -> str:
        """Reverse a text."""
        return text[::-1]

    @app.tool()
    def length(text: str) -> int:
        """Count the characters of a text."""
        return len(text)

    @app.tool()
    def count_vowels(text: str) -> int:
        """Count the vowels of a text."""
        raise RuntimeError("vowel counter is broken")

    if __name__ == "__main__":
        print("a line on stderr \\x1b[31m in red", file=__import__("sys").stderr)
        app.run()
    '''
)


@pytest.fixture
def server(tmp_path: Path) -> Path:
    path = tmp_path / "demo_server.py"
    path.write_text(SERVER, encoding="utf-8")
    return path


@pytest.mark.slow
def test_import_plan_and_run_against_an_mcp_server(server: Path, tmp_path: Path) -> None:
    domain, bind, plan = tmp_path / "demo.yaml", tmp_path / "demo.bind.yaml", tmp_path / "p.json"
    command = f"{sys.executable} {server}"
    code, stdout, err = run_fllm(
        "import-tools", "--mcp", command, "-o", str(domain), "--bindings", str(bind)
    )
    assert code == 0, err
    assert "3 tool(s), 2 type(s); it validates" in stdout
    text = domain.read_text()
    assert "#   returns number (outputSchema: integer)" in text
    assert f'mcp: {{server: ["{sys.executable}", "{server}"], tool: "length"}}' in bind.read_text()
    code, _, err = run_fllm(
        "plan", str(domain), "How many vowels are in the text?", "-i", "text",
        "--output", "number", "-f", "json", "-o", str(plan), "-q", "--model", "random:1",
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(plan.read_text())
    doc["steps"] = [  # a plan that calls the broken tool, so that the run must plan around it
        {"id": 1, "tool": "reverse", "inputs": ["input:text"], "output": "text"},
        {"id": 2, "tool": "count_vowels", "inputs": ["step:1"], "output": "number"},
    ]
    plan.write_text(json.dumps(doc))
    code, stdout, err = run_fllm(
        "run", str(plan), "--bind", str(bind), "--input", "text=hello", "-f", "json",
        "--model", "random:1",
    )  # fmt: skip
    assert code == 0, err
    result = json.loads(stdout)
    assert result["failed_tools"] == ["count_vowels"]
    assert result["output"] == 5 and "count_vowels" not in result["plans"][-1]
    failed = next(s for s in result["steps"] if "error" in s)
    assert failed["error"].startswith("the tool reported an error:")
    assert "vowel counter is broken" in failed["error"]
    assert "\x1b" not in stdout + err  # the server's stderr never reaches the terminal


def test_a_server_that_cannot_start_is_one_line(tmp_path: Path) -> None:
    code, _, err = run_fllm("import-tools", "--mcp", "no-such-program-here", "-o", "x.yaml")
    assert code == 2 and err.startswith("error: cannot list the tools of ")
    assert "no such program" in err and "Traceback" not in err


def _client(calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def session() -> list[Any]:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "fllm_cli", "mcp"], cwd=str(ROOT)
        )
        out: list[Any] = []
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            out.append(sorted(t.name for t in (await s.list_tools()).tools))
            for name, args in calls:
                if name == "plan-then-run":
                    planned = await s.call_tool("plan", args)
                    args = {"plan": planned.structuredContent, **args["then"]}
                    name = "run"
                result = await s.call_tool(name, {k: v for k, v in args.items() if k != "then"})
                out.append(result)
        return out

    return asyncio.run(asyncio.wait_for(session(), 120))


@pytest.mark.slow
def test_fllm_serves_validate_plan_verify_and_run_over_mcp() -> None:
    domain = "domains/examples/textbox.yaml"
    plan_args = {"domain": domain, "task": "How many links are in this text?",
                 "inputs": ["text"], "output": "number", "model": "random:1"}  # fmt: skip
    names, valid, planned, ran, bad = _client(
        [
            ("validate", {"domain": domain}),
            ("plan", plan_args),
            ("plan-then-run", {**plan_args, "then": {
                "bindings": "domains/examples/textbox.bind.yaml",
                "inputs": {"text": "a https://x.example b https://y.example"}}}),
            ("plan", {"domain": "no/such.yaml", "task": "x"}),
        ]
    )  # fmt: skip
    assert names == ["plan", "run", "validate", "verify"]
    assert valid.structuredContent["valid"] is True
    doc = planned.structuredContent
    assert doc["valid"] is True and [s["tool"] for s in doc["steps"]] == [
        "extract_links",
        "count_items",
    ]
    assert ran.structuredContent["ok"] is True and ran.structuredContent["output"] == 2
    assert bad.isError and "no such domain file" in bad.content[0].text
