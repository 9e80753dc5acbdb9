"""The second data-bound example (domains/examples/conference_trip.yaml), through the real CLI.

The plans are checked here against the example's own data, field by field, not only by the
exit code of ``fllm verify``; the commands of docs/spec.md ("A second example") are run as
written there.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_fllm

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "domains" / "examples"
DOMAIN = str(EXAMPLES / "conference_trip.yaml")
DATA_FILE = EXAMPLES / "conference_trip.data.json"
REQUEST_FILE = EXAMPLES / "conference_trip.request.json"
DATA = json.loads(DATA_FILE.read_text())
MENUS = {"vegetarian": {"vegetarian", "vegan"}, "vegan": {"vegan"}}


def _by_written(table: str) -> dict[str, dict[str, Any]]:
    """The records of a table by the text the domain writes for them."""
    if table == "trains":
        return {
            f"Train {r['number']}, from {r['origin']} to {r['dest']}, "
            f"{r['depart']}-{r['arrive']}": r
            for r in DATA["trains"]
        }
    return {f"{r['name']}, {r['city']}": r for r in DATA[table]}


TRAINS, HOTELS = _by_written("trains"), _by_written("hotels")
RESTAURANTS, EVENTS = _by_written("restaurants"), _by_written("events")


def _plan(tmp_path: Path, text: str, seed: int) -> dict[str, Any]:
    out = tmp_path / "plan.json"
    result = run_fllm(
        "plan", DOMAIN, text, "--data", str(DATA_FILE), "--model", f"random:{seed}",
        "-f", "json", "-o", str(out), "-q",
    )  # fmt: skip
    assert result.code == 0, result.err
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def _cost(days: list[dict[str, Any]]) -> float:
    """The plan's total, priced from the data (the hotel once per night)."""
    total = 0.0
    for day in days:
        for slot, table, price in (
            ("train", TRAINS, "fare"),
            ("hotel", HOTELS, "price"),
            ("lunch", RESTAURANTS, "price"),
            ("dinner", RESTAURANTS, "price"),
            ("evening", EVENTS, "ticket"),
        ):
            if day[slot] != "-":
                total += table[day[slot]][price]
    return total


def test_the_example_validates() -> None:
    result = run_fllm("validate", DOMAIN)
    assert result.code == 0, result.err
    assert "ok — a data-bound domain" in result.out


@pytest.mark.parametrize(
    ("text", "seed", "want"),
    [
        (
            "I'm vegetarian and I live in Milwaukee. Plan my 3-day trip to the conference in "
            "Chicago, total budget $700.",
            1,
            {"home": "Milwaukee", "days": 3, "budget": 700, "diet": "vegetarian"},
        ),
        (
            "Vegan, coming from Detroit for a 3 day conference, $650 budget.",
            4,
            {"home": "Detroit", "days": 3, "budget": 650, "diet": "vegan"},
        ),
    ],
)
def test_a_plan_from_the_text_keeps_the_diet_and_the_budget(
    tmp_path: Path, text: str, seed: int, want: dict[str, Any]
) -> None:
    doc = _plan(tmp_path, text, seed)
    assert doc["request"] == want
    days = doc["plan"]
    home = want["home"]
    assert [d["days"] for d in days] == [1, 2, 3]
    assert [d["current_city"] for d in days] == [
        f"from {home} to Chicago",
        "Chicago",
        f"from Chicago to {home}",
    ]
    # the trains go there and back; one hotel for both nights, none the last day
    there, back = TRAINS[days[0]["train"]], TRAINS[days[2]["train"]]
    assert (there["origin"], there["dest"], back["origin"], back["dest"]) == (
        home,
        "Chicago",
        "Chicago",
        home,
    )
    assert days[1]["train"] == "-"
    assert days[0]["hotel"] == days[1]["hotel"] in HOTELS and days[2]["hotel"] == "-"
    # every meal fits the diet, no restaurant twice, lunch every day, dinner on the full day
    meals = [d[m] for d in days for m in ("lunch", "dinner") if d[m] != "-"]
    assert all(RESTAURANTS[m]["menu"] in MENUS[want["diet"]] for m in meals), meals
    assert len(set(meals)) == len(meals)
    assert all(d["lunch"] != "-" for d in days) and days[1]["dinner"] != "-"
    evenings = [d["evening"] for d in days if d["evening"] != "-"]
    assert all(e in EVENTS for e in evenings) and len(set(evenings)) == len(evenings)
    assert days[1]["evening"] != "-"
    # the budget holds, priced from the data rather than from the plan's own numbers
    assert _cost(days) == doc["total_cost"] <= want["budget"]
    ok = run_fllm("verify", DOMAIN, str(tmp_path / "plan.json"), "--data", str(DATA_FILE))
    assert ok.code == 0, ok.err
    assert "valid plan (3 days" in ok.out


@pytest.mark.slow
def test_a_broken_plan_fails_verify_naming_the_rule(tmp_path: Path) -> None:
    text = "Vegetarian, living in Milwaukee: plan my 3-day conference trip to Chicago, $700."
    doc = _plan(tmp_path, text, 2)
    path = tmp_path / "broken.json"

    def verify(days: list[dict[str, Any]], *extra: str) -> Any:
        path.write_text(json.dumps({**doc, "plan": days}))
        return run_fllm("verify", DOMAIN, str(path), "--data", str(DATA_FILE), *extra)

    meat = "Deep Dish House, Chicago"  # as in docs/spec.md
    assert RESTAURANTS[meat]["menu"] == "any"
    days = json.loads(json.dumps(doc["plan"]))
    days[1]["dinner"] = meat
    bad = verify(days)
    assert bad.code == 1
    assert "request: day 2 dinner: menu 'any' does not fit 'vegetarian'" in bad.err
    days = json.loads(json.dumps(doc["plan"]))
    days[2]["lunch"] = days[1]["lunch"]
    again = verify(days)
    assert again.code == 1 and "different: day 3 lunch: " in again.err
    tight = tmp_path / "tight.json"
    tight.write_text(json.dumps({**doc["request"], "budget": 300}))
    over = verify(doc["plan"], "--constraints", str(tight))
    assert over.code == 1 and "budget: total $" in over.err and "exceeds budget $300" in over.err


def test_a_day_list_verifies_with_the_request_file(tmp_path: Path) -> None:
    out = tmp_path / "days.json"
    result = run_fllm(
        "plan", DOMAIN, "my conference trip", "--data", str(DATA_FILE),
        "--constraints", str(REQUEST_FILE), "--model", "random:3",
        "-f", "travelplanner", "-o", str(out), "-q",
    )  # fmt: skip
    assert result.code == 0, result.err
    days = json.loads(out.read_text())
    assert isinstance(days, list) and len(days) == 3
    args = ("verify", DOMAIN, str(out), "--data", str(DATA_FILE))
    assert run_fllm(*args, "--constraints", str(REQUEST_FILE)).code == 0
    missing = run_fllm(*args)  # a bare day list does not say what was asked
    assert missing.code == 2 and "--constraints FILE" in missing.err


def test_an_impossible_budget_is_one_line_naming_the_budget() -> None:
    text = "Vegetarian, living in Milwaukee: plan my 3-day conference trip to Chicago, $200."
    result = run_fllm("plan", DOMAIN, text, "--data", str(DATA_FILE), "--model", "random:1")
    assert result.code == 1
    assert result.out == ""
    line = result.err.strip()
    assert "\n" not in line
    assert line.startswith("error: budget $200 < cheapest complete plan $384")
    assert "raise the budget to $384" in line


def test_a_refusal_names_the_request_rule_that_removed_the_records() -> None:
    """Four vegan-only days need six meals at distinct places; the data has four vegan ones.
    The diet is half of the conflict and must be named, though planning applies it as a filter."""
    text = "Vegan, living in Milwaukee: plan my 4-day conference trip to Chicago, budget $1700."
    result = run_fllm("plan", DOMAIN, text, "--data", str(DATA_FILE), "--model", "random:1")
    assert result.code == 1 and result.out == ""
    assert result.err.strip() == (
        "error: no plan meets every rule: different lunch/dinner; diet vegan "
        "(hint: drop 'different lunch/dinner' or drop 'diet vegan')"
    )


def _documented() -> tuple[list[list[str]], list[str]]:
    """The commands and the expected output lines of docs/spec.md, "A second example"."""
    text = (ROOT / "docs" / "spec.md").read_text()
    section = text.split("### A second example", 1)[1].split("\n## ", 1)[0]
    commands: list[list[str]] = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip():
                commands.append(shlex.split(line))
    expected = [
        line
        for block in re.findall(r"```text\n(.*?)```", section, re.S)
        for line in block.split("\n")
        if line
    ]
    return commands, expected


@pytest.mark.slow
def test_the_documented_commands_work_as_written(tmp_path: Path) -> None:
    commands, expected = _documented()
    assert [c[:2] for c in commands] == [
        [".venv/bin/fllm", "validate"],
        [".venv/bin/fllm", "plan"],
        [".venv/bin/fllm", "verify"],
        [".venv/bin/fllm", "plan"],
    ]
    results = []
    for command in commands:
        args = [
            str(ROOT / a)
            if a.startswith("domains/")
            # The plan file the commands write and read: into the test's folder, never the
            # checkout, whether the docs name it under /tmp/ or relative to the repository.
            else str(tmp_path / a.removeprefix("/tmp/"))
            if a.endswith(".json")
            else a
            for a in command[1:]
        ]
        results.append(run_fllm(*args))
    assert [r.code for r in results] == [0, 0, 0, 1], [r.err for r in results]
    assert "valid plan" in results[2].out
    assert results[3].err.strip().splitlines() == expected
