"""TravelPlanner's 45 training queries through `fllm bench`: a shortcut with a compact summary.

    .venv/bin/python bench/travelplanner.py --model random:1            # request read from text
    .venv/bin/python bench/travelplanner.py --model random:1 --given    # structured fields
    .venv/bin/python bench/travelplanner.py --model local --limit 5 --strategy zero-shot
    .venv/bin/python bench/travelplanner.py --model local --no-cache  # first-run times

Everything is `fllm bench` (fllm_cli.bench): the same as

    fllm bench domains/travelplanner.yaml tests/data/travelplanner/queries.jsonl \\
         --data tests/data/travelplanner/reference_info.jsonl --strategy formal --model random:1

Plans are scored by fllm's TravelPlanner evaluator (fllm_cli.travel), which shares no code with
the planner. This script only adds what the README's table shows besides the metrics (median and
longest time per query, the look-ahead's median), prints it and keeps it in
bench/travelplanner_results.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from fllm_cli.bench import BenchOptions, run_bench  # noqa: E402
from fllm_cli.bench.metrics import SCORERS  # noqa: E402
from fllm_cli.llm.options import ModelOptions  # noqa: E402

DATA = ROOT / "tests" / "data" / "travelplanner"
DOMAIN = str(ROOT / "domains" / "travelplanner.yaml")
RESULTS = ROOT / "bench" / "travelplanner_results.json"
RATES = [key for key, _ in SCORERS["travelplanner"].columns]


def _percent(summary: dict[str, Any]) -> dict[str, float]:
    return {key: round(100 * summary[key], 1) for key in RATES}


def figures(report: dict[str, Any], strategy: str) -> dict[str, Any]:
    """The README's figures for one strategy of a bench report."""
    summary = report["summary"][strategy]
    rows = [r for r in report["results"] if r["strategy"] == strategy]
    seconds = [r["stats"]["seconds"] for r in rows]
    lookahead = [
        r["stats"]["lookahead_ms_median"]
        for r in rows
        if r["stats"].get("lookahead_ms_median") is not None
    ]
    return {
        "model": report["model"],
        "strategy": strategy,
        "request": "structured fields" if strategy == "formal-given" else "read from the text",
        "queries": summary["tasks"],
        "rates_percent": _percent(summary),
        "by_level": {k: _percent(v) for k, v in summary.get("by_level", {}).items()},
        "by_days": {k: _percent(v) for k, v in summary.get("by_days", {}).items()},
        "seconds_per_query_median": round(statistics.median(seconds), 2),
        "seconds_per_query_max": round(max(seconds), 2),
        "lookahead_ms_median_of_queries": round(statistics.median(lookahead), 1)
        if lookahead
        else None,
        "llm_calls_per_query": summary["mean_llm_calls"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--model", default="random:1")
    parser.add_argument("--strategy", default="formal", help="formal, zero-shot, gold...")
    parser.add_argument("--given", action="store_true", help="formal with the structured fields")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument(
        "--no-cache", action="store_true", help="ask the model every time (first-run times)"
    )
    args = parser.parse_args()
    strategy = "formal-given" if args.given else args.strategy
    opts = BenchOptions(
        spec=DOMAIN,
        tasks_file=str(DATA / "queries.jsonl"),
        data_file=str(DATA / "reference_info.jsonl"),
        strategies=[strategy],
        model=args.model,
        limit=args.limit,
        model_options=ModelOptions(cache=not args.no_cache),
    )
    report = run_bench(opts).report
    for row in report["results"]:
        if row["error"]:
            print(f"query {row['id']}: {row['error']}", file=sys.stderr)
    result = figures(report, strategy)
    print(json.dumps(result, indent=2))
    old = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    old[f"{args.model}|{result['request']}|{strategy}|{result['queries']}"] = result
    RESULTS.write_text(json.dumps(old, indent=2) + "\n")


if __name__ == "__main__":
    main()
