"""Risk management: plans follow the flowchart; the scenario variables reach the prompts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from fllm_cli import api
from fllm_cli.llm.simple import RandomModel
from tests.conftest import InProc, run_fllm

ROOT = Path(__file__).resolve().parents[2]
DOMAIN = str(ROOT / "domains" / "risk_management.yaml")
GOLDEN = Path(__file__).resolve().parent / "golden"
VARS = {"seller": "Shareholders of Blizzard Entertainment", "buyer": "Microsoft"}
# The flowchart, written out independently of the spec: question -> answer -> next node.
FLOWCHART = {
    "entitled": {"yes": "standing", "no": "STOP", "unknown": "standing"},
    "standing": {"yes": "cfius", "no": "STOP", "unknown": "cfius"},
    "cfius": {"yes": "antitrust", "no": "antitrust", "unknown": "antitrust"},
    "antitrust": {"yes": "PASS", "no": "PASS", "unknown": "PASS"},
}


def follows_flowchart(word: list[str]) -> str:
    """Walk the flowchart along the word; return the outcome reached."""
    node = "entitled"
    for item in word:
        question, _, answer = item.partition("=")
        assert question == node, f"{item} asked at {node}"
        node = FLOWCHART[node][answer]
    assert node in ("PASS", "STOP")
    return node


@pytest.mark.parametrize("seed", range(60))
def test_plans_follow_the_flowchart(seed: int) -> None:
    problem = api.compile_problem(DOMAIN, task="Review the deal.", variables=VARS)
    doc = api.plan(problem, RandomModel(seed)).document
    outcome = follows_flowchart(doc["word"])
    last = doc["steps"][-1]["text"]
    assert last.startswith("Pass the preliminary") if outcome == "PASS" else last.startswith("Stop")
    assert doc["vars"] == {**VARS, "company": "Blizzard Entertainment"}


def test_prompts_show_the_scenario_variables(golden: Callable[[Path, str], None]) -> None:
    problem = api.compile_problem(DOMAIN, task="Review the deal.", variables=VARS)
    result = api.plan(problem, RandomModel(2))
    first, last = result.trace[0]["prompt"], result.trace[-1]["prompt"]
    assert "Shareholders of Blizzard Entertainment wants to sell Blizzard Entertainment" in first
    assert "Question: Is Shareholders of Blizzard Entertainment entitled to sell" in first
    golden(GOLDEN / "risk_first_prompt.txt", first)
    golden(GOLDEN / "risk_last_prompt.txt", last)


def test_missing_variable_is_a_usage_error() -> None:
    args = ["plan", DOMAIN, "x", "-m", "random:1", "--var", "buyer=X"]
    code, _, err = run_fllm(*args, timeout=120)
    assert code == 2
    assert "missing --var seller=VALUE" in err
    assert "Traceback" not in err


def test_render_pda_needs_no_variables(fllm_inproc: InProc) -> None:
    code, out, err = fllm_inproc("render-pda", DOMAIN, "--format", "dot")
    assert code == 0, out + err
    assert "entitled=unknown" in out
