"""TravelPlanner requests: the same answer every time, the request shown as read, honest
refusals."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fllm_cli import api
from fllm_cli.errors import NoPlanError
from tests.conftest import run_fllm

ROOT = Path(__file__).resolve().parents[2]
DOMAIN = str(ROOT / "domains" / "travelplanner.yaml")
DATA = ROOT / "tests" / "data" / "travelplanner"
QUERIES = [json.loads(x) for x in (DATA / "queries.jsonl").read_text().splitlines() if x]
REFS = [json.loads(x) for x in (DATA / "reference_info.jsonl").read_text().splitlines() if x]


@pytest.mark.parametrize("index", [0, 9])
def test_the_same_request_gives_the_same_plan_in_one_process(index: int) -> None:
    """z3 state left by earlier queries must not change the next plan."""
    plans = [
        api.plan_task(DOMAIN, QUERIES[index]["query"], "random:4", data=REFS[index]).document
        for _ in range(3)
    ]
    assert plans[0]["plan"] == plans[1]["plan"] == plans[2]["plan"]
    assert plans[0]["total_cost"] == plans[2]["total_cost"]


def test_the_same_request_gives_the_same_plan_in_other_processes(tmp_path: Path) -> None:
    """Separate runs with other hash seeds (set and dict orders) write the same bytes."""
    data = tmp_path / "ref.json"
    data.write_text(json.dumps(REFS[9]))
    outputs = []
    for seed in ("1", "2"):
        out = tmp_path / f"plan{seed}.json"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-m", "fllm_cli", "plan", DOMAIN, QUERIES[9]["query"], "--data",
             str(data), "--model", "random:2", "-f", "travelplanner", "-o", str(out), "-q"],
            env=env, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]


def test_the_travelplanner_format_says_how_the_request_was_read(tmp_path: Path) -> None:
    data = tmp_path / "ref.json"
    data.write_text(json.dumps(REFS[0]))
    text = (
        "A trip from St. Petersburg to Rockford, March 16-18, 2022, budget $5,000. "
        "There are 2 adults, and the 3 of us like Chinese food."
    )
    result = run_fllm(
        "plan", DOMAIN, text, "--data", str(data), "--model", "random:1", "-f", "travelplanner",
        "-o", str(tmp_path / "plan.json"),
    )  # fmt: skip
    assert result.code == 0, result.err
    line = next(x for x in result.err.splitlines() if x.startswith("Request as read:"))
    assert "org St. Petersburg" in line and "budget 5000" in line
    # two head counts: the larger is planned for, and the reading says so
    assert "people_number 3 (the larger of the values the text gives (also 2))" in result.err
    days = json.loads((tmp_path / "plan.json").read_text())
    assert isinstance(days, list) and days[0]["days"] == 1  # the format itself is unchanged


def test_an_unstated_value_is_marked_as_a_default(tmp_path: Path) -> None:
    data = tmp_path / "ref.json"
    data.write_text(json.dumps(REFS[0]))
    text = "A trip from St. Petersburg to Rockford, March 16-18, 2022, budget $1,700."
    result = run_fllm(
        "plan", DOMAIN, text, "--data", str(data), "--model", "random:1", "-f", "travelplanner",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert "people_number 1 (not stated: default)" in result.err


def _no_way_out(ref: dict[str, Any]) -> dict[str, Any]:
    ref = copy.deepcopy(ref)
    ref["flights"] = []
    for route in ref["ground_transport"]:
        route.update(available=False, cost=None)
    return ref


def test_a_city_with_no_route_out_is_no_plan_not_misuse(tmp_path: Path) -> None:
    data = tmp_path / "ref.json"
    data.write_text(json.dumps(_no_way_out(REFS[0])))
    result = run_fllm(
        "plan", DOMAIN, QUERIES[0]["query"], "--data", str(data), "--model", "random:1",
    )  # fmt: skip
    assert result.code == 1, result.err
    assert "St. Petersburg" in result.err and "Traceback" not in result.err


def test_a_refusal_is_the_same_every_time() -> None:
    messages = set()
    for _ in range(2):
        with pytest.raises(NoPlanError) as caught:
            api.plan_task(DOMAIN, QUERIES[0]["query"], "random:1", data=_no_way_out(REFS[0]))
        messages.add((caught.value.message, caught.value.hint))
    assert len(messages) == 1
