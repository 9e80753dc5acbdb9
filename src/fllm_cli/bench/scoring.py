"""Scores against a reference and the per-strategy summary of a benchmark run."""

from __future__ import annotations

import math
from typing import Any

from fllm_cli.bench.metrics import SCORERS
from fllm_cli.bench.tasks import reference_tools

STAT_KEYS = (
    "llm_calls",
    "choice_points",
    "forced_moves",
    "backtracks",
    "fallbacks",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "seconds",
)


def plan_tools(plan: dict[str, Any] | None) -> list[str]:
    """Return the tools of a plan document in execution order."""
    if not plan:
        return []
    return [step["tool"] for step in plan.get("steps", [])]


def score(tools: list[str], reference: list[str] | tuple[str, ...], valid: bool) -> dict[str, Any]:
    """Return tool-set precision, recall, F1 and exact (ordered) match; an invalid plan scores 0."""
    ref = reference_tools(reference)
    if not valid:
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0, "exact": False}
    got, want = set(tools), set(ref)
    hits = len(got & want)
    precision = hits / len(got) if got else 0.0
    recall = hits / len(want) if want else 0.0
    f1 = 2 * precision * recall / (precision + recall) if hits else 0.0
    return {
        "precision": round(precision, 4),
        "recall": round(recall, 4),
        "f1": round(f1, 4),
        "exact": tools == ref,
    }


def percentile(values: list[float], q: float) -> float:
    """Return the q-th percentile (nearest rank) of ``values``, 0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def summarize(results: list[dict[str, Any]], strategies: list[str]) -> dict[str, dict[str, Any]]:
    """Return one summary per strategy (in the given order) over its results."""
    return {s: summarize_one([r for r in results if r["strategy"] == s]) for s in strategies}


def summarize_one(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Aggregate one strategy's results."""
    n = len(rows)
    valid = sum(1 for r in rows if r["valid"])
    totals = {k: sum(r["stats"].get(k, 0) for r in rows) for k in STAT_KEYS}
    seconds = [r["stats"].get("seconds", 0.0) for r in rows]
    out: dict[str, Any] = {
        "tasks": n,
        "valid": valid,
        "valid_rate": round(valid / n, 4) if n else 0.0,
        "mean_llm_calls": _mean(totals["llm_calls"], n),
        "mean_choice_points": _mean(totals["choice_points"], n),
        "mean_forced_moves": _mean(totals["forced_moves"], n),
        "mean_backtracks": _mean(totals["backtracks"], n),
        "fallbacks": totals["fallbacks"],
        "tokens": totals["prompt_tokens"] + totals["completion_tokens"],
        "cost_usd": round(totals["cost_usd"], 6),
        "mean_seconds": round(sum(seconds) / n, 4) if n else 0.0,
        "p95_seconds": round(percentile(seconds, 95), 4),
        "total_seconds": round(sum(seconds), 3),
    }
    scores = [r["scores"] for r in rows if r.get("scores")]
    scored = [s for s in scores if "f1" in s]
    out["with_reference"] = len(scored)
    if scored:
        for key in ("precision", "recall", "f1"):
            out[key] = round(sum(s[key] for s in scored) / len(scored), 4)
        out["exact_rate"] = round(sum(1 for s in scored if s["exact"]) / len(scored), 4)
    # A benchmark's own metrics (data domains): aggregated by the scorer that gave them.
    for name, scorer in SCORERS.items():
        mine = [s for s in scores if s.get("metrics") == name]
        if mine:
            out["metrics"] = name
            out.update(scorer.summarize(mine))
    return out


def _mean(total: float, n: int) -> float:
    return round(total / n, 3) if n else 0.0
