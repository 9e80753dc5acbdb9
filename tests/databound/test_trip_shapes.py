"""Trip shapes: a round trip (the default, `trip.end: home`) or a trip that ends at its last
stop (`trip.end: last_stop`), shown on the conference example made one-way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import run_fllm

EXAMPLES = Path(__file__).resolve().parents[2] / "domains" / "examples"
ROUND = EXAMPLES / "conference_trip.yaml"
DATA = str(EXAMPLES / "conference_trip.data.json")
TEXT = "Vegetarian, living in Milwaukee: plan my 3-day conference trip to Chicago, $700."


def _one_way(tmp_path: Path, end: str = "last_stop") -> Path:
    text = ROUND.read_text()
    old = "  stops: {table: cities, count: 1}\n"
    assert old in text
    path = tmp_path / "one_way.yaml"
    path.write_text(text.replace(old, old + f"  end: {end}\n"))
    return path


def _plan(domain: Path, tmp_path: Path, seed: int = 2) -> dict[str, Any]:
    out = tmp_path / f"{domain.stem}.json"
    result = run_fllm(
        "plan", str(domain), TEXT, "--data", DATA, "--model", f"random:{seed}",
        "-f", "json", "-o", str(out), "-q",
    )  # fmt: skip
    assert result.code == 0, result.err
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def test_a_trip_that_ends_at_its_last_stop(tmp_path: Path) -> None:
    domain = _one_way(tmp_path)
    assert run_fllm("validate", str(domain)).code == 0
    doc = _plan(domain, tmp_path)
    days = doc["plan"]
    assert [d["current_city"] for d in days] == ["from Milwaukee to Chicago", "Chicago", "Chicago"]
    assert days[0]["train"].startswith("Train ") and days[2]["train"] == "-"
    assert days[0]["hotel"] != "-" and days[1]["hotel"] == days[0]["hotel"]
    assert days[2]["hotel"] == "-"  # no night is booked after the last day
    assert all(d["lunch"] != "-" for d in days)
    assert days[2]["dinner"] != "-"  # the last day is a full day in Chicago
    assert [c["slot"] for c in doc["costs"]].count("train") == 1
    plan_file = tmp_path / "one_way.json"
    assert run_fllm("verify", str(domain), str(plan_file), "--data", DATA).code == 0
    # the same plan is no round trip
    wrong = run_fllm("verify", str(ROUND), str(plan_file), "--data", DATA)
    assert wrong.code == 1 and "route: the trip must start and end at Milwaukee" in wrong.err


def test_a_round_trip_plan_is_not_a_one_way_trip(tmp_path: Path) -> None:
    round_doc = _plan(ROUND, tmp_path)
    assert round_doc["plan"][2]["current_city"] == "from Chicago to Milwaukee"
    plan_file = tmp_path / "conference_trip.json"
    wrong = run_fllm("verify", str(_one_way(tmp_path)), str(plan_file), "--data", DATA)
    assert wrong.code == 1
    assert "route: the trip must start at Milwaukee and end elsewhere" in wrong.err


def test_an_unknown_trip_end_is_located(tmp_path: Path) -> None:
    domain = _one_way(tmp_path, end="somewhere")
    result = run_fllm("validate", str(domain))
    assert result.code == 1
    line = domain.read_text().splitlines().index("  end: somewhere") + 1
    assert f"one_way.yaml:{line}:" in result.out
    assert "trip.end must be one of home, last_stop" in result.out
