"""Place columns are the domain's to name: the stops table's `trip.stops.field` and each slot's
`city` / `origin` / `dest`. The conference example is rewritten with other column names
(stops named by `town`, venues placed by `area`) and must plan and verify as before."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_fllm

EXAMPLES = Path(__file__).resolve().parents[2] / "domains" / "examples"


def _renamed(tmp_path: Path) -> tuple[Path, Path]:
    text = (EXAMPLES / "conference_trip.yaml").read_text()
    for old, new in [
        ("    fields: {name: text}\n", '    fields: {town: text}\n    write: "{town}"\n'),
        ("city: text", "area: text"),
        ("{name}, {city}", "{name}, {area}"),
        ("stops: {table: cities, count: 1}", "stops: {table: cities, count: 1, field: town}"),
        ("table: hotels}", "table: hotels, city: area}"),
        ("table: restaurants}", "table: restaurants, city: area}"),
        ("table: restaurants, need: stay}", "table: restaurants, city: area, need: stay}"),
        ("table: events, need: stay}", "table: events, city: area, need: stay}"),
    ]:
        assert old in text, old
        text = text.replace(old, new)
    data = json.loads((EXAMPLES / "conference_trip.data.json").read_text())
    data["cities"] = [{"town": c["name"]} for c in data["cities"]]
    for table in ("hotels", "restaurants", "events"):
        data[table] = [
            {("area" if k == "city" else k): v for k, v in r.items()} for r in data[table]
        ]
    domain, data_file = tmp_path / "renamed.yaml", tmp_path / "renamed.data.json"
    domain.write_text(text)
    data_file.write_text(json.dumps(data))
    return domain, data_file


def test_a_domain_with_its_own_place_columns_plans_and_verifies(tmp_path: Path) -> None:
    domain, data = _renamed(tmp_path)
    checked = run_fllm("validate", str(domain))
    assert checked.code == 0, checked.out
    text = "Vegetarian, living in Milwaukee: plan my 3-day conference trip to Chicago, $700."
    out = tmp_path / "plan.json"
    result = run_fllm(
        "plan", str(domain), text, "--data", str(data), "--model", "random:4",
        "-f", "json", "-o", str(out), "-q",
    )  # fmt: skip
    assert result.code == 0, result.err
    days = json.loads(out.read_text())["plan"]
    assert [d["current_city"] for d in days] == [
        "from Milwaukee to Chicago", "Chicago", "from Chicago to Milwaukee",
    ]  # fmt: skip
    assert days[1]["hotel"].endswith(", Chicago") and days[1]["dinner"].endswith(", Chicago")
    assert run_fllm("verify", str(domain), str(out), "--data", str(data)).code == 0


def test_a_stops_field_that_is_not_a_text_column_is_located(tmp_path: Path) -> None:
    domain, _ = _renamed(tmp_path)
    text = domain.read_text().replace("field: town}", "field: name}")
    domain.write_text(text)
    result = run_fllm("validate", str(domain))
    assert result.code == 1
    line = next(n for n, row in enumerate(text.splitlines(), 1) if "field: name}" in row)
    assert f"renamed.yaml:{line}:" in result.out
    assert "table 'cities' has no text field 'name' naming a place" in result.out
