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


@pytest.mark.parametrize("index", [0, pytest.param(9, marks=pytest.mark.slow)])
def test_the_same_request_gives_the_same_plan_in_one_process(index: int) -> None:
    """z3 state left by earlier queries must not change the next plan."""
    plans = [
        api.plan_task(DOMAIN, QUERIES[index]["query"], "random:4", data=REFS[index]).document
        for _ in range(3)
    ]
    assert plans[0]["plan"] == plans[1]["plan"] == plans[2]["plan"]
    assert plans[0]["total_cost"] == plans[2]["total_cost"]


@pytest.mark.slow
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


HOURS = {
    "breakfast": (420, 630),
    "lunch": (690, 900),
    "attraction": (540, 1080),
    "dinner": (1080, 1320),
}  # fmt: skip  (the domain's in_town hours, in minutes)


def _minutes(text: str) -> int:
    hours, minutes = text.split(":")
    return int(hours) * 60 + int(minutes)


@pytest.mark.slow
def test_meals_and_visits_happen_where_the_traveller_is() -> None:
    """Independent of fllm's rule code: on a flight day nothing is planned in the
    destination before landing, nor in the origin after take-off."""
    checked = 0
    for index, seed in [(i, s) for i in (0, 9, 33) for s in (1, 2, 3)]:
        days = api.plan_task(DOMAIN, QUERIES[index]["query"], f"random:{seed}", data=REFS[index])
        for day in days.document["plan"]:
            leg = day.get("transportation", "-")
            if not leg.startswith("Flight Number"):
                continue
            dep = _minutes(leg.split("Departure Time: ")[1][:5])
            arr = _minutes(leg.split("Arrival Time: ")[1][:5])
            origin, dest = day["current_city"][5:].split(" to ")
            for slot, (opens, closes) in HOURS.items():
                for part in filter(None, (p.strip() for p in day[slot].split(";"))):
                    if part == "-":
                        continue
                    city = part.rsplit(",", 1)[1].strip()
                    checked += 1
                    if city == dest:
                        assert arr <= closes - 60, (slot, part, leg)
                    if city == origin:
                        assert dep >= opens + 60, (slot, part, leg)
    assert checked > 0


def test_verify_names_a_breakfast_before_landing() -> None:
    document = api.plan_task(DOMAIN, QUERIES[0]["query"], "random:1", data=REFS[0]).document
    days = copy.deepcopy(document["plan"])
    assert days[0]["transportation"].endswith("Arrival Time: 17:04")
    days[0]["breakfast"] = days[1]["breakfast"]  # a Rockford breakfast on the day we land at 17:04
    days[1]["breakfast"] = "-"
    report = api.verify_data(DOMAIN, days, REFS[0], document["request"])
    assert any(v.startswith("in town: day 1 breakfast: in Rockford") for v in report["violations"])


def test_bad_opening_hours_are_a_located_error(tmp_path: Path) -> None:
    text = Path(DOMAIN).read_text().replace('breakfast: "07:00-10:30"', 'breakfast: "10:30"')
    path = tmp_path / "travel.yaml"
    path.write_text(text)
    result = run_fllm("validate", str(path))
    assert result.code != 0
    assert "at 'breakfast' must be opening hours" in result.out + result.err
    assert "travel.yaml:" in result.out + result.err


def test_the_cheapest_objective_gives_the_least_cost_plan() -> None:
    text = "A trip from St. Petersburg to Rockford, March 16-18, 2022, for one person"
    cheapest = api.plan_task(DOMAIN, text + ", budget $1,700, as cheap as possible.", "random:3",
                             data=REFS[0]).document  # fmt: skip
    assert cheapest["request"]["objective"] == "cheapest"
    chosen = api.plan_task(DOMAIN, text + ", budget $1,700.", "random:3", data=REFS[0]).document
    assert chosen["request"]["objective"] is None
    assert cheapest["total_cost"] <= chosen["total_cost"]
    # the least cost any plan has: what a refusal of a tiny budget names
    with pytest.raises(NoPlanError) as caught:
        api.plan_task(DOMAIN, text + ", budget $100.", "random:3", data=REFS[0])
    assert f"cheapest complete plan ${cheapest['total_cost']:,.0f}" in caught.value.message


def test_objective_flag_through_the_cli(tmp_path: Path) -> None:
    data = tmp_path / "ref.json"
    data.write_text(json.dumps(REFS[0]))
    text = "A trip from St. Petersburg to Rockford, March 16-18, 2022, alone, budget $1,700."
    out = tmp_path / "plan.json"
    result = run_fllm(
        "plan", DOMAIN, text, "--data", str(data), "--model", "random:1", "--objective",
        "cheapest", "-f", "json", "-o", str(out), "-q",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert json.loads(out.read_text())["request"]["objective"] == "cheapest"
    bad = run_fllm("plan", DOMAIN, text, "--data", str(data), "--objective", "best")
    assert bad.code == 2 and "--objective must be one of" in bad.err
