"""Tools: safe calculator, corpus search/lookup, plug-in modules, failures as observations."""

from __future__ import annotations

from pathlib import Path

import pytest

from fllm_cli.errors import UsageError
from fllm_cli.ltl.calculator import CalculatorError, evaluate
from fllm_cli.ltl.tools import Corpus, ToolContext, build_tools, run_tool

CORPUS = str(Path(__file__).parent / "data" / "corpus.jsonl")


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("48 / 2", 24),
        ("24 + 48", 72),
        ("17% * 240 + 12", 52.8),
        ("2 ^ 10", 1024),
        ("1,200 * 3", 3600),
        ("17 % 5", 2),
        ("sqrt(16) + abs(-1)", 5),
        ("(3 + 4) * 2 =", 14),
    ],
)
def test_calculator_evaluates_arithmetic(expr: str, value: float) -> None:
    assert evaluate(expr) == pytest.approx(value)


@pytest.mark.parametrize(
    "expr",
    [
        "__import__('os').system('true')",
        "open('/etc/passwd')",
        "(1).__class__",
        "9 ** 99999",
        "1 / 0",
        "x + 1",
        "",
        "lambda: 1",
    ],
)
def test_calculator_refuses_anything_but_arithmetic(expr: str) -> None:
    with pytest.raises(CalculatorError):
        evaluate(expr)


def test_search_and_lookup_follow_the_last_page() -> None:
    corpus = Corpus.load(CORPUS)
    assert corpus.lookup("frog") == "No page is open yet; use search first."
    assert corpus.search("iron henry").startswith("Iron Henry is a fairy tale")
    assert corpus.lookup("frog") == "(Result 1 / 2) It is also known as The Frog King."
    assert corpus.lookup("frog") == "(Result 2 / 2) The story tells of a princess and a frog."
    assert corpus.lookup("frog") == "No more results."
    assert corpus.search("Frog Prince film").startswith(
        "Could not find [Frog Prince film]. Similar: [The Frog Prince"
    )


def test_tool_failures_and_unknown_tools_become_observations() -> None:
    tools = build_tools(["shout", "broken"], ToolContext(), ["tests.ltl.sample_tools"])
    assert run_tool(tools, "Shout", "hi") == ("HI", True)
    assert run_tool(tools, "broken", "x") == ("Error: broken failed: disk on fire", False)
    text, ok = run_tool(tools, "hammer", "x")
    assert not ok and "no tool named 'hammer'" in text and "shout" in text


def test_bad_tool_requests_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="did you mean 'calculator'"):
        build_tools(["calculater"], ToolContext())
    with pytest.raises(UsageError, match="--corpus"):
        build_tools(["search"], ToolContext())
    bad = tmp_path / "c.jsonl"
    bad.write_text('{"title": "a", "text": "b"}\nnot json\n')
    with pytest.raises(UsageError, match=r"c\.jsonl:2:"):
        build_tools(["search"], ToolContext(str(bad)))
    with pytest.raises(UsageError, match="cannot import tool module"):
        build_tools(["x"], ToolContext(), ["no.such.module"])
