"""What `fllm run` adds to the tools it calls (issue: plans that run).

* overhead: a chain of 500 steps whose tool does nothing; fllm's time per call (goal: <= 5 ms);
* concurrency: a 50-step plan, 8 independent chains of 6 steps joined at the end, each tool
  sleeping 50 ms; its wall time against the longest chain's 8 calls x 50 ms (goal: about 1x).

    .venv/bin/python bench/run_overhead.py        # writes bench/run_overhead_results.json
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from fllm_cli.execute import Binding, Runner  # noqa: E402

OVERHEAD_GOAL_MS = 5.0
SLEEP = 0.05


def _binding(name: str, arity: int, work: Any) -> Binding:
    b = Binding(name, tuple(f"x{i}" for i in range(arity)))
    b.call = work  # type: ignore[method-assign]
    return b


def overhead(steps: int = 500, repeat: int = 3) -> float:
    """Median ms per call of fllm's own work on a chain of no-op tools."""
    noop = _binding("noop", 1, lambda values: values[0])
    plan = [{"id": 1, "tool": "noop", "inputs": ["input:x"]}]
    plan += [{"id": i, "tool": "noop", "inputs": [f"step:{i - 1}"]} for i in range(2, steps + 1)]
    times = []
    for _ in range(repeat):
        runner = Runner({"noop": noop}, {"noop": (("text",), "text")}, {"x": "v"}, workers=4)
        start = time.perf_counter()
        result = runner.run({"inputs": {"x": "text"}, "steps": plan}, None, 0)
        assert result.ok
        times.append((time.perf_counter() - start) / steps * 1000)
    return statistics.median(times)


def concurrency(width: int = 8, depth: int = 6) -> dict[str, float]:
    """Wall time of `width` chains of `depth` sleeping steps, joined, against the longest chain."""
    sleep = _binding("work", 1, lambda values: (time.sleep(SLEEP), values[0])[1])
    join = _binding("join", width, lambda values: (time.sleep(SLEEP), "+".join(values))[1])
    final = _binding("final", 1, lambda values: (time.sleep(SLEEP), values[0])[1])
    steps: list[dict[str, Any]] = []
    tips = []
    for c in range(width):
        for d in range(depth):
            sid = len(steps) + 1
            source = f"input:v{c}" if d == 0 else f"step:{sid - 1}"
            steps.append({"id": sid, "tool": "work", "inputs": [source]})
        tips.append(f"step:{len(steps)}")
    steps.append({"id": len(steps) + 1, "tool": "join", "inputs": tips})
    steps.append({"id": len(steps) + 1, "tool": "final", "inputs": [f"step:{len(steps)}"]})
    given = {f"v{c}": str(c) for c in range(width)}
    types = {"work": (("text",), "text"), "join": (("text",) * width, "text"),
             "final": (("text",), "text")}  # fmt: skip
    runner = Runner({"work": sleep, "join": join, "final": final}, types, given, workers=width)
    start = time.perf_counter()
    result = runner.run({"inputs": {k: "text" for k in given}, "steps": steps}, None, 0)
    wall = time.perf_counter() - start
    assert result.ok and len(steps) == width * depth + 2
    chain = (depth + 2) * SLEEP
    return {"steps": len(steps), "wall_s": round(wall, 3), "longest_chain_s": chain,
            "ratio": round(wall / chain, 2)}  # fmt: skip


def measure() -> dict[str, Any]:
    return {"overhead_ms_per_call": round(overhead(), 3), "concurrency": concurrency()}


def main() -> None:
    results = measure()
    print(json.dumps(results, indent=2))
    out = ROOT / "bench" / "run_overhead_results.json"
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
