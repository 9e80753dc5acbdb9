"""TravelPlanner with the data kind: delivery, commonsense, hard and final pass, per level.

    .venv/bin/python bench/travelplanner.py --model random:1            # request read from text
    .venv/bin/python bench/travelplanner.py --model random:1 --given    # structured fields
    .venv/bin/python bench/travelplanner.py --model local --limit 5     # the embedded model

Plans are scored by fllm's TravelPlanner evaluator (fllm_cli.travel), which shares no code
with the planner. Prints a table and writes bench/travelplanner_results.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from fllm_cli import api  # noqa: E402
from fllm_cli.errors import FllmError  # noqa: E402
from fllm_cli.travel import evaluate_plan, load_queries, load_references, parse_plan, score  # noqa: E402

DATA = ROOT / "tests" / "data" / "travelplanner"
DOMAIN = str(ROOT / "domains" / "travelplanner.yaml")


def given_fields(raw: dict) -> dict:
    lc = raw["local_constraint"]
    return {
        "org": raw["org"], "dest": raw["dest"], "days": raw["days"], "dates": raw["date"],
        "people_number": raw["people_number"], "budget": raw["budget"],
        "house_rule": lc["house rule"], "cuisine": lc["cuisine"],
        "room_type": lc["room type"], "transportation": lc["transportation"],
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="random:1")
    parser.add_argument("--given", action="store_true", help="use the structured fields")
    parser.add_argument("--limit", type=int, default=45)
    args = parser.parse_args()
    raw = [json.loads(x) for x in (DATA / "queries.jsonl").read_text().splitlines() if x.strip()]
    refs = [json.loads(x) for x in (DATA / "reference_info.jsonl").read_text().splitlines() if x]
    queries = load_queries(DATA / "queries.jsonl")
    typed_refs = load_references(DATA / "reference_info.jsonl")
    evaluations, seconds, lookahead, calls = [], [], [], []
    for q, r, typed in list(zip(raw, refs, queries))[: args.limit]:
        start = time.perf_counter()
        try:
            result = api.plan_task(
                DOMAIN, q["query"], args.model, data=r,
                request=given_fields(q) if args.given else None,
            )  # fmt: skip
            plan = parse_plan(result.document["plan"])
            stats = result.document["stats"]
            lookahead.append(stats["lookahead_ms_median"])
            calls.append(stats["llm_calls"])
        except FllmError as exc:
            print(f"query {q['idx']}: {exc.message}", file=sys.stderr)
            plan = None
        seconds.append(time.perf_counter() - start)
        evaluations.append(evaluate_plan(plan, typed_refs[typed.idx], typed.trip))
    scores = score(evaluations)
    rates = {k: round(100 * v, 1) for k, v in scores.overall.rates().items()}
    report = {
        "model": args.model,
        "request": "structured fields" if args.given else "read from the text",
        "queries": len(evaluations),
        "rates_percent": rates,
        "by_level": {
            level: round(100 * s.rates()["final_pass_rate"], 1)
            for level, s in sorted(scores.by_level.items())
        },
        "seconds_per_query_median": round(statistics.median(seconds), 2),
        "seconds_per_query_max": round(max(seconds), 2),
        "lookahead_ms_median_of_queries": round(statistics.median(lookahead), 1)
        if lookahead
        else None,
        "llm_calls_per_query": round(statistics.mean(calls), 1) if calls else 0,
    }
    print(json.dumps(report, indent=2))
    name = "travelplanner_results.json"
    path = ROOT / "bench" / name
    old = json.loads(path.read_text()) if path.exists() else {}
    old[f"{args.model}|{report['request']}|{report['queries']}"] = report
    path.write_text(json.dumps(old, indent=2) + "\n")


if __name__ == "__main__":
    main()
