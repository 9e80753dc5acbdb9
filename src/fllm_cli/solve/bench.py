"""``fllm solve-bench``: run the pipeline over a benchmark file and score the answers.

Two formats: OptiGuide JSON (``{"questions": [{"QUESTION", "GT EXEC RESULT"}]}``; a string
ground truth starting with "infeasible" means the right answer is that no plan exists) and
PlanBench JSONL (``query``, ``optimal_length``). Optimal: the objective is within tolerance of
the ground truth (or infeasibility is reported when expected); for plans, a plan fllm's
simulator accepts with the optimal length. Success: an answer that is not wrong in kind: a
feasible solution when one exists (any cost), infeasibility when none does, or any valid plan.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from fllm_cli.errors import BudgetExceeded, FllmError, TimeBudgetExceeded, UsageError
from fllm_cli.llm.base import Model
from fllm_cli.solve.pipeline import Session, Settings, solve
from fllm_cli.solve.problem import Problem
from fllm_cli.textio import read_text


@dataclass(frozen=True)
class Item:
    """One benchmark query and its ground truth."""

    index: int
    query: str
    expected: float | None  # optimum, or None when the query is infeasible
    optimal_length: int | None = None


def load_bench(path: str) -> list[Item]:
    """Read an OptiGuide JSON or PlanBench JSONL benchmark."""
    text = read_text(path, "benchmark file")
    if path.endswith(".jsonl"):
        items: list[Item] = []
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    row = json.loads(line)
                    items.append(Item(len(items), row["query"], None, int(row["optimal_length"])))
                except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                    raise UsageError(f"{path}:{number}: not a PlanBench record ({exc})") from exc
        return items
    try:
        questions = json.loads(text)["questions"]
        return [
            Item(i, q["QUESTION"], _expected(q["GT EXEC RESULT"])) for i, q in enumerate(questions)
        ]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise UsageError(f"{path}: not an OptiGuide benchmark ({exc})") from exc


def _expected(value: Any) -> float | None:
    if isinstance(value, str):
        if value.strip().lower().startswith("infeasible"):
            return None
        return float(value)
    return float(value)


def score(item: Item, result: dict[str, Any], tolerance: float) -> tuple[bool, bool]:
    """Return (optimal, success) for one answer."""
    if item.optimal_length is not None:
        check = result.get("plan_check") or {}
        valid = bool(check.get("valid"))
        return valid and check.get("length") == item.optimal_length, valid
    status, objective = result.get("status"), result.get("objective")
    if item.expected is None:
        ok = status == "unsat"
        return ok, ok
    if status != "sat" or not isinstance(objective, (int, float)):
        return False, False
    close = abs(objective - item.expected) <= tolerance * max(1.0, abs(item.expected))
    return close, True


def run_bench(
    problem: Problem,
    items: list[Item],
    make_model: Callable[[], Model],
    settings: Settings,
    concurrency: int = 1,
    tolerance: float = 1e-4,
    on_done: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Solve every item (``concurrency`` threads) and return the report.

    When the models' run meter says the money is spent (``--max-cost``), the queries not yet
    started are skipped and the report says ``"stopped": "max_cost"``.
    """
    lock = threading.Lock()
    local = threading.local()
    models: list[Model] = []
    stopped: list[str] = []

    def model() -> Model:
        if not hasattr(local, "model"):
            local.model = make_model()
            with lock:
                models.append(local.model)
        return local.model  # type: ignore[no-any-return]

    def one(item: Item) -> dict[str, Any] | None:
        if stopped:
            return None
        start = time.perf_counter()
        session = Session(model(), problem, item.query, settings)
        try:
            result = solve(problem, item.query, session.model, settings, session).to_json()
        except FllmError as exc:
            if isinstance(exc, BudgetExceeded) and not isinstance(exc, TimeBudgetExceeded):
                stopped.append("max_cost")
            result = {"status": "error", "error": exc.one_line(), "objective": None}
        optimal, success = score(item, result, tolerance)
        row = {
            "index": item.index,
            "query": item.query,
            "expected": item.expected,
            "optimal_length": item.optimal_length,
            "optimal": optimal,
            "success": success,
            "seconds": round(time.perf_counter() - start, 2),
            "result": result,
            "trace": session.trace,
        }
        if on_done:
            with lock:
                on_done(row)
        return row

    start = time.perf_counter()
    try:
        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            rows = [row for row in pool.map(one, items) if row is not None]
    finally:
        for m in models:
            m.close()
    report = summarise(problem, rows, time.perf_counter() - start)
    report["stopped"] = stopped[0] if stopped else None
    report["partial"] = len(rows) < len(items)
    return report


def summarise(problem: Problem, rows: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    """Return totals and rates over the per-query rows."""
    n = len(rows)
    optimal = sum(r["optimal"] for r in rows)
    success = sum(r["success"] for r in rows)
    calls = sum(
        v.get("calls", 0)
        for r in rows
        for k, v in (r["result"].get("stats") or {}).items()
        if k != "execute"
    )
    cost = sum(
        v.get("cost_usd", 0.0) for r in rows for v in (r["result"].get("stats") or {}).values()
    )
    return {
        "problem": problem.name,
        "queries": n,
        "optimal": optimal,
        "success": success,
        "optimal_rate": optimal / n if n else 0.0,
        "success_rate": success / n if n else 0.0,
        "llm_calls": calls,
        "cost_usd": round(cost, 6),
        "seconds": round(seconds, 2),
        "rows": sorted(rows, key=lambda r: r["index"]),
    }
