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


def test_verify_reads_details_after_a_renamed_place_column(tmp_path: Path) -> None:
    """A plan may word what follows the last place freely; that place may be any column."""
    domain, data = _renamed(tmp_path)
    text = domain.read_text()
    old = '    show: "{name}, ${price} a night"\n    write: "{name}, {area}"\n'
    assert old in text
    domain.write_text(
        text.replace(old, old.replace('"{name}, {area}"', '"{name}, {area}, {price} a night"'))
    )
    out = tmp_path / "plan.json"
    request = "Vegetarian, living in Milwaukee: plan my 3-day conference trip to Chicago, $700."
    result = run_fllm(
        "plan", str(domain), request, "--data", str(data), "--model", "random:4",
        "-f", "json", "-o", str(out), "-q",
    )  # fmt: skip
    assert result.code == 0, result.err
    doc = json.loads(out.read_text())
    hotel = doc["plan"][1]["hotel"]
    assert hotel.endswith(" a night")
    doc["plan"][1]["hotel"] = hotel.rsplit(",", 1)[0] + ", a fair price per night"
    out.write_text(json.dumps(doc))
    checked = run_fllm("verify", str(domain), str(out), "--data", str(data))
    assert checked.code == 0, checked.out + checked.err
    # The cut stops after the place, not after the name: a wrong place is still wrong.
    name = hotel.split(",", 1)[0]
    doc["plan"][1]["hotel"] = f"{name}, Detroit, a fair price per night"
    out.write_text(json.dumps(doc))
    wrong = run_fllm("verify", str(domain), str(out), "--data", str(data))
    assert wrong.code == 1
    assert f"within data: day 2 hotel: '{name}, Detroit, a fair price per night'" in wrong.err
