"""Names in a plan are the data's own values, byte for byte, checked the official way.

171 names in the TravelPlanner database carry a double space ("Wok  In The Clouds"), some a
line break or a star. The official evaluator splits "Name, City" at the last comma, trims the
name and looks it up with a substring match on the raw data, so a name whose spaces were
squeezed is "not in the sandbox". These tests plan over data whose every name is awkward and
check each name the plan writes with that rule (re-implemented here, independent of fllm).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from fllm_cli import api
from fllm_cli.travel import evaluate_plan, load_queries, parse_plan
from fllm_cli.travel.reference import reference_from_json

ROOT = Path(__file__).resolve().parents[2]
DOMAIN = str(ROOT / "domains" / "travelplanner.yaml")
DATA = ROOT / "tests" / "data" / "travelplanner"
QUERY = json.loads((DATA / "queries.jsonl").read_text().splitlines()[0])
REF = json.loads((DATA / "reference_info.jsonl").read_text().splitlines()[0])

AWKWARD = [
    "{}  Grill",  # double space
    "☆  {} , Café",  # star, space before a comma, accent
    "{}\nSoBro 10 minutes!",  # a line break inside the name
    "{}   &  Sons’",  # three spaces, curly apostrophe
    "{} (Downtown)  ",  # parentheses and trailing spaces
]
SECTIONS = {"restaurants": "name", "attractions": "name", "accommodations": "name"}


def awkward_reference() -> dict[str, Any]:
    ref = copy.deepcopy(REF)
    for section, key in SECTIONS.items():
        for i, record in enumerate(ref[section]):
            record[key] = AWKWARD[i % len(AWKWARD)].format(record[key])
    return ref


def official_name_city(text: str) -> tuple[str, str]:
    """The official evaluator's split: name up to the last comma (trimmed), then the city."""
    match = re.search(r"(.*?),\s*([^,]+)(\(\w[\w\s]*\))?$", text, re.S)
    assert match, text
    return match.group(1).strip(), re.sub(r"\s*\(.*\)\s*$", "", match.group(2).strip()).strip()


def officially_found(text: str, ref: dict[str, Any], section: str) -> bool:
    name, city = official_name_city(text)
    return any(name in r["name"] and r["city"] == city for r in ref[section])


def named_places(days: list[dict[str, Any]]) -> list[tuple[str, str]]:
    out = []
    for day in days:
        for meal in ("breakfast", "lunch", "dinner"):
            if day[meal] != "-":
                out.append(("restaurants", day[meal]))
        if day["accommodation"] != "-":
            out.append(("accommodations", day["accommodation"]))
        for part in day["attraction"].split(";"):
            if part.strip() and part.strip() != "-":
                out.append(("attractions", part))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_plans_carry_awkward_names_exactly(seed: int) -> None:
    ref = awkward_reference()
    result = api.plan_task(DOMAIN, QUERY["query"], f"random:{seed}", data=ref)
    days = result.document["plan"]
    places = named_places(days)
    assert places, "the plan names no place"
    for section, text in places:
        assert officially_found(text, ref, section), (section, text)
    # fllm's own checkers accept what fllm wrote
    assert api.verify_data(DOMAIN, result.document, ref, None)["valid"]
    query = load_queries(DATA / "queries.jsonl")[0]
    evaluation = evaluate_plan(parse_plan(days), reference_from_json(ref), query.trip)
    assert evaluation.violations() == []


def test_a_squeezed_name_is_not_the_record() -> None:
    """Both of fllm's checkers reject a name whose inner spaces were rewritten, as the official
    evaluator does."""
    ref = awkward_reference()
    document = api.plan_task(DOMAIN, QUERY["query"], "random:1", data=ref).document
    days = document["plan"]
    section, text = next(p for p in named_places(days) if "  " in p[1])
    field = next(
        (d, k) for d in days for k in ("breakfast", "lunch", "dinner", "accommodation",
                                       "attraction") if text in d[k]
    )  # fmt: skip
    day, key = field
    day[key] = day[key].replace(text, " ".join(text.split()) if "\n" not in text else text)
    squeezed = day[key]
    assert not officially_found(" ".join(text.split()), ref, section)
    report = api.verify_data(DOMAIN, document, ref, None)
    assert not report["valid"]
    assert any("is not in the data" in v for v in report["violations"]), report
    query = load_queries(DATA / "queries.jsonl")[0]
    evaluation = evaluate_plan(parse_plan(days), reference_from_json(ref), query.trip)
    assert any("within_sandbox" in v or "reference" in v for v in evaluation.violations()), (
        squeezed,
        evaluation.violations(),
    )
