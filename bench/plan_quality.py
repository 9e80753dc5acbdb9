"""Plan quality on OpenAGI: tool-set F1 against reference plans, and interface accuracy.

    .venv/bin/python bench/plan_quality.py --model random:1                # beam (default)
    .venv/bin/python bench/plan_quality.py --model local --search greedy   # the paper's mode
    .venv/bin/python bench/plan_quality.py --model local --interfaces      # + the 185 tasks

``fllm plan``'s path through the library (``api.plan_task``, interface asked when not given).
F1 compares the set of tools in the plan with the reference's (``train_reference.jsonl``, 15
tasks); interface accuracy compares the inputs and output chosen with the 185 tasks'
annotated ones. Writes the figures to bench/plan_quality_results.json under the run's key.
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
from fllm_cli.llm.registry import make_model  # noqa: E402
from fllm_cli.search.interface import infer_interface  # noqa: E402

DATA = ROOT / "tests" / "data"
DOMAIN = str(ROOT / "domains" / "openagi.yaml")


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def f1(plan: set[str], want: set[str]) -> tuple[float, float, float]:
    hit = len(plan & want)
    p = hit / len(plan) if plan else 0.0
    r = hit / len(want) if want else 0.0
    return p, r, (2 * p * r / (p + r) if hit else 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="random:1")
    parser.add_argument("--search", default="beam", choices=("beam", "greedy"))
    parser.add_argument("--interfaces", action="store_true", help="also the 185 interfaces")
    args = parser.parse_args()
    model = make_model(args.model, None)
    rows, seconds, calls = [], [], []
    for ref in _lines(DATA / "openagi_train_reference.jsonl"):
        start = time.perf_counter()
        result = api.plan_task(DOMAIN, ref["task"], model, search=args.search)
        seconds.append(time.perf_counter() - start)
        calls.append(result.document["stats"]["llm_calls"])
        plan = {w for w in result.document["word"] if not w.startswith("input:")}
        rows.append(f1(plan, set(ref["tools"])))
        print(f"  F1 {rows[-1][2]:.2f}  {sorted(plan)}", file=sys.stderr, flush=True)
    report = {
        "model": args.model,
        "search": args.search,
        "tasks": len(rows),
        "precision": round(statistics.mean(r[0] for r in rows), 3),
        "recall": round(statistics.mean(r[1] for r in rows), 3),
        "f1": round(statistics.mean(r[2] for r in rows), 3),
        "seconds_per_plan_median": round(statistics.median(seconds), 2),
        "llm_calls_per_plan": round(statistics.mean(calls), 2),
    }
    if args.interfaces:
        domain = api.load_domain(DOMAIN)
        tasks = _lines(DATA / "openagi_tasks.jsonl")
        right = 0
        for task in tasks:
            inputs, output, _ = infer_interface(domain, task["task"], model, [], args.search)
            right += sorted(inputs) == sorted(task["inputs"]) and output == task["output"]
        report["interface_accuracy"] = round(right / len(tasks), 3)
        report["interface_tasks"] = len(tasks)
    print(json.dumps(report, indent=2))
    path = ROOT / "bench" / "plan_quality_results.json"
    old = json.loads(path.read_text()) if path.exists() else {}
    old[f"{args.model}|{args.search}|{'interfaces' if args.interfaces else 'plans'}"] = report
    path.write_text(json.dumps(old, indent=2) + "\n")


if __name__ == "__main__":
    main()
