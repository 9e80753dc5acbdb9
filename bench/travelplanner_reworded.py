"""TravelPlanner on our own rewordings of the 45 queries: is the trip still right?

    .venv/bin/python bench/travelplanner_reworded.py --model random:1
    .venv/bin/python bench/travelplanner_reworded.py --model local --limit 10

Each rewording in tests/data/travelplanner/reworded.jsonl keeps the meaning of the query
``idx``; the planner reads the request from the reworded text (api.plan_task, as
bench/travelplanner.py does without --given) and the plan is scored by fllm's TravelPlanner
evaluator (fllm_cli.travel) against the original query's structured fields. Prints a JSON
summary (the benchmark's rates, how many requests were read right and how many asked the
model); every failure goes to stderr.
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

from fllm_cli import api  # noqa: E402
from fllm_cli.errors import FllmError  # noqa: E402
from fllm_cli.travel import evaluate_plan, load_queries, load_references, parse_plan, score  # noqa: E402

DATA = ROOT / "tests" / "data" / "travelplanner"
DOMAIN = str(ROOT / "domains" / "travelplanner.yaml")


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def structured(raw: dict[str, Any]) -> dict[str, Any]:
    """The query's structured fields, named as the domain's request fields."""
    lc = raw["local_constraint"]
    return {
        "org": raw["org"], "dest": raw["dest"], "days": raw["days"], "dates": raw["date"],
        "people_number": raw["people_number"], "budget": raw["budget"],
        "house_rule": lc["house rule"], "cuisine": lc["cuisine"],
        "room_type": lc["room type"], "transportation": lc["transportation"],
    }  # fmt: skip


def misread(read: dict[str, Any], want: dict[str, Any]) -> list[str]:
    """The request fields read differently from the structured fields."""
    out = []
    for key, value in want.items():
        got = read.get(key)
        if key == "cuisine":
            got, value = sorted(got or []), sorted(value or [])
        if got != value:
            out.append(key)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="random:1")
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    raw = _jsonl(DATA / "queries.jsonl")
    refs = _jsonl(DATA / "reference_info.jsonl")
    reworded = _jsonl(DATA / "reworded.jsonl")[: args.limit]
    queries = {q.idx: q for q in load_queries(DATA / "queries.jsonl")}
    typed_refs = load_references(DATA / "reference_info.jsonl")
    evaluations, seconds = [], []
    read_right = asked = 0
    for n, entry in enumerate(reworded):
        idx = entry["idx"]
        query = queries[idx]
        start = time.perf_counter()
        try:
            result = api.plan_task(DOMAIN, entry["query"], args.model, data=refs[idx])
            doc = result.document
            plan = parse_plan(doc["plan"])
            wrong = misread(doc["request"], structured(raw[idx]))
            read_right += not wrong
            asked += doc["stats"].get("request_calls", 0) > 0
            if wrong:
                print(f"rewording {n} (query {idx}): read wrong: {wrong}", file=sys.stderr)
        except FllmError as exc:
            print(f"rewording {n} (query {idx}): {exc.message}", file=sys.stderr)
            plan = None
        seconds.append(time.perf_counter() - start)
        evaluation = evaluate_plan(
            plan, typed_refs[idx], query.trip, idx=idx, level=raw[idx].get("level")
        )
        if not evaluation.final_pass:
            print(f"rewording {n} (query {idx}): fails {evaluation.violations()}", file=sys.stderr)
        evaluations.append(evaluation)
    scores = score(evaluations)
    report = {
        "model": args.model,
        "request": "read from reworded text",
        "rewordings": len(evaluations),
        "requests_read_right": read_right,
        "requests_that_asked_the_model": asked,
        "final_passed": sum(e.final_pass for e in evaluations),
        "rates_percent": {k: round(100 * v, 1) for k, v in scores.overall.rates().items()},
        "by_level": {
            level: round(100 * s.rates()["final_pass_rate"], 1)
            for level, s in sorted(scores.by_level.items())
        },
        "seconds_per_query_median": round(statistics.median(seconds), 2) if seconds else 0,
        "seconds_per_query_max": round(max(seconds), 2) if seconds else 0,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
