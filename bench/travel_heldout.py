"""TravelPlanner on requests and trips nobody tuned against (bench/heldout/travel/).

    .venv/bin/python bench/travel_heldout.py                  # reader + trips, embedded model
    .venv/bin/python bench/travel_heldout.py --part reader    # the request reader alone
    .venv/bin/python bench/travel_heldout.py --part trips --model random:1 --repeat 2

* ``reader``: each of the 150 requests in ``reader_requests.jsonl`` is read by the data-bound
  kind's request reader (as ``fllm plan`` reads it) over reference data built for the trip
  from the same database (``make_set.DB.reference``; a state trip gets the state's first
  cities). Figure: field accuracy over the ten request fields, and requests read fully right.
* ``trips``: each of the 24 trips in ``trips.jsonl`` is planned with ``api.plan_task`` and its
  reference record; a feasible trip passes when fllm's TravelPlanner evaluator (official rules,
  names compared the official way) finds no violation; an impossible one passes when it is
  refused (``NoPlanError``, exit 1). ``--repeat N`` plans every trip N times and counts the
  trips whose plan documents differ (they must not).

The reader's reference data is ``reader_references.jsonl`` (``--rebuild`` makes it again from
the TravelPlanner database, ``--database``, default ``../shared/data/travelplanner/database``
beside the repository). Writes
``bench/travel_heldout_results.json`` under ``MODEL``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench" / "heldout" / "travel"))
sys.path.insert(0, str(ROOT / "bench"))

from travelplanner_reworded import structured  # noqa: E402  (the query's fields, named as the domain's)

from fllm_cli import api  # noqa: E402
from fllm_cli.databound.request import RequestReader, values_of  # noqa: E402
from fllm_cli.databound.spec import read_spec  # noqa: E402
from fllm_cli.databound.tables import load_tables  # noqa: E402
from fllm_cli.domain.load import load_domain  # noqa: E402
from fllm_cli.errors import FllmError, NoPlanError  # noqa: E402
from fllm_cli.llm.options import ModelOptions  # noqa: E402
from fllm_cli.llm.registry import make_model  # noqa: E402
from fllm_cli.travel import evaluate_plan, load_queries, parse_plan  # noqa: E402
from fllm_cli.travel.reference import reference_from_json  # noqa: E402

HELDOUT = ROOT / "bench" / "heldout" / "travel"
DOMAIN = str(ROOT / "domains" / "travelplanner.yaml")
FIELDS = ("org", "dest", "days", "dates", "people_number", "budget", "house_rule", "cuisine",
          "room_type", "transportation")  # fmt: skip


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _same(key: str, got: Any, want: Any) -> bool:
    if key == "cuisine":
        return sorted(got or []) == sorted(want or [])
    return bool(got == want)


def never_asked(field: Any, options: list[str]) -> int:
    """The reader alone: a field it cannot settle from the text counts as its first guess."""
    return 0


READER_REFS = HELDOUT / "reader_references.jsonl"
KEEP = ("cities", "flights", "flight_searches", "ground_transport")  # what reading needs


def build_reader_references(database: Path) -> None:
    """Write the reference data the reader sees for each request (built from the database by
    the set's own generator; a state trip gets the state's first cities). Restaurants,
    attractions and stays are left out: reading never looks at them."""
    from make_set import DB  # the generator's own database reader

    db = DB(database)
    lines = []
    for row in _jsonl(HELDOUT / "reader_requests.jsonl"):
        if row["visiting_city_number"] == 1:
            cities = [row["dest"]]
        else:
            cities = db.states[row["dest"]][: row["visiting_city_number"]]
        legs = [row["date"][0]] * len(cities) + [row["date"][-1]]
        ref = db.reference(row["idx"], row["org"], cities, legs)
        lines.append(json.dumps({"idx": row["idx"], **{k: ref[k] for k in KEEP}}))
    READER_REFS.write_text("\n".join(lines) + "\n", encoding="utf-8")


def reader_part(quiet: bool) -> dict[str, Any]:
    spec, _ = read_spec(load_domain(DOMAIN))
    assert spec is not None
    rows = _jsonl(HELDOUT / "reader_requests.jsonl")
    refs = {r["idx"]: r for r in _jsonl(READER_REFS)}
    right = total = whole = 0
    wrong_by_field: dict[str, int] = {}
    for row in rows:
        want = structured(row)
        tables = load_tables(spec, refs[row["idx"]], "reference")
        got = values_of(RequestReader(spec, tables, never_asked).read(row["query"]))
        bad = [k for k in FIELDS if not _same(k, got.get(k), want[k])]
        right += len(FIELDS) - len(bad)
        total += len(FIELDS)
        whole += not bad
        for k in bad:
            wrong_by_field[k] = wrong_by_field.get(k, 0) + 1
            if not quiet:
                print(f"reader {row['idx']}: {k}: read {got.get(k)!r}, want {want[k]!r}"
                      f"  <- {row['query'][:110]}", file=sys.stderr)  # fmt: skip
    return {
        "requests": len(rows),
        "field_accuracy": round(right / total, 4),
        "requests_read_right": whole,
        "wrong_by_field": dict(sorted(wrong_by_field.items())),
    }


def trips_part(model: str, repeat: int, quiet: bool) -> dict[str, Any]:
    rows = _jsonl(HELDOUT / "trips.jsonl")
    refs = {r["idx"]: r for r in _jsonl(HELDOUT / "trips_reference.jsonl")}
    queries = {q.idx: q for q in load_queries(HELDOUT / "trips.jsonl")}
    passed = refused_right = misread = changed = 0
    # one model for every trip, as a user's runs would each load one; no answer cache, so
    # the times are what a first run takes
    backend = make_model(model, ModelOptions(cache=False))
    seconds: list[float] = []
    refusal_seconds: list[float] = []
    failures: list[str] = []
    refusals: dict[str, list[str]] = {}
    for row in rows:
        idx = row["idx"]
        outputs: list[str] = []
        for _ in range(repeat):
            start = time.perf_counter()
            try:
                result = api.plan_task(DOMAIN, row["query"], backend, data=refs[idx])
                doc = result.document
                outcome = json.dumps(doc["plan"], sort_keys=True)
            except NoPlanError as exc:
                doc, outcome = None, f"no plan: {exc.message} | {exc.hint or ''}"
            except FllmError as exc:
                doc, outcome = None, f"error {exc.exit_code}: {exc.message}"
            seconds.append(time.perf_counter() - start)
            if not row["feasible"]:
                refusal_seconds.append(seconds[-1])
            outputs.append(outcome)
        changed += len(set(outputs)) > 1
        if not row["feasible"]:
            refusals[str(idx)] = sorted(set(outputs))
            if all(o.startswith("no plan:") for o in outputs):
                refused_right += 1
            else:
                failures.append(f"trip {idx} (impossible: {row['why']}): {outputs[0][:160]}")
            continue
        if doc is None:
            failures.append(f"trip {idx}: {outputs[0][:200]}")
            continue
        wrong = [k for k in FIELDS if not _same(k, doc["request"].get(k), structured(row)[k])]
        misread += bool(wrong)
        evaluation = evaluate_plan(
            parse_plan(doc["plan"]), reference_from_json(refs[idx]), queries[idx].trip
        )
        if evaluation.final_pass:
            passed += 1
        else:
            failures.append(f"trip {idx}: read wrong {wrong}; {evaluation.violations()[:3]}")
    if not quiet:
        for line in failures:
            print(line, file=sys.stderr)
    feasible = sum(r["feasible"] for r in rows)
    return {
        "model": model,
        "trips": len(rows),
        "feasible_passed": f"{passed}/{feasible}",
        "impossible_refused": f"{refused_right}/{len(rows) - feasible}",
        "final_pass": round((passed + refused_right) / len(rows), 3),
        "feasible_misread": misread,
        "plans_that_changed_between_runs": changed if repeat > 1 else None,
        "seconds_median": round(statistics.median(seconds), 2),
        "seconds_median_refusals": round(statistics.median(refusal_seconds), 2),
        "seconds_max": round(max(seconds), 2),
        "refusals": refusals,
    }


def long_part(model: str, limit: int | None) -> dict[str, Any]:
    """Planning time of the benchmark's 5- and 7-day trips (training queries: the held-out
    trips are 3-day), default model, no answer cache."""
    data = ROOT / "tests" / "data" / "travelplanner"
    queries = _jsonl(data / "queries.jsonl")
    refs = _jsonl(data / "reference_info.jsonl")
    backend = make_model(model, ModelOptions(cache=False))
    out: dict[str, Any] = {}
    for days in (5, 7):
        picked = [(q, r) for q, r in zip(queries, refs) if q["days"] == days][:limit]
        seconds = []
        for q, r in picked:
            start = time.perf_counter()
            try:
                api.plan_task(DOMAIN, q["query"], backend, data=r)
            except FllmError as exc:
                print(f"query {q['idx']}: {exc.message}", file=sys.stderr)
            seconds.append(time.perf_counter() - start)
        out[f"{days}_day"] = {
            "trips": len(picked),
            "seconds_median": round(statistics.median(seconds), 2),
            "seconds_max": round(max(seconds), 2),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=["reader", "trips", "long", "both"], default="both")
    parser.add_argument("--limit", type=int, default=None, help="long: trips of each length")
    parser.add_argument("--model", default="local")
    parser.add_argument("--repeat", type=int, default=1)
    shared = ROOT.parent / "shared" / "data" / "travelplanner" / "database"
    parser.add_argument("--database", type=Path, default=shared)
    parser.add_argument(
        "--rebuild", action="store_true", help="rebuild reader_references.jsonl (--database)"
    )
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    report: dict[str, Any] = {}
    if args.part in ("reader", "both"):
        if args.rebuild:
            build_reader_references(args.database)
        report["reader"] = reader_part(args.quiet)
        print(json.dumps(report["reader"], indent=2), flush=True)
    if args.part in ("trips", "both"):
        report["trips"] = trips_part(args.model, args.repeat, args.quiet)
        print(json.dumps(report["trips"], indent=2))
    if args.part == "long":
        report["long"] = long_part(args.model, args.limit)
        print(json.dumps(report["long"], indent=2))
    out = ROOT / "bench" / "travel_heldout_results.json"
    saved = json.loads(out.read_text()) if out.exists() else {}
    saved.setdefault(args.model, {}).update(report)
    out.write_text(json.dumps(saved, indent=2) + "\n")


if __name__ == "__main__":
    main()
