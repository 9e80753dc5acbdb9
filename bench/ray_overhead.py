"""The per-unit cost of the Ray executor: the 185-task OpenAGI formal run, local vs Ray.

Runs ``fllm bench domains/openagi.yaml bench/data/openagi_tasks.jsonl -s formal -m random:0``
(the random chooser, so the figures are fllm's own work, not a model's) through the library:

* local executor, one thread;
* a Ray cluster started on 127.0.0.1 for the script (``num_cpus`` = this machine's cores), with
  one actor and with one actor per core.

For each it reports the wall time, the time to the first result (actor start-up), the
steady-state time per unit (between the first and the last streamed result) and the time the
worker spent inside the unit. The Ray path's per-unit overhead is given two ways: the net change
from local to one actor, and the one-actor time per unit outside the unit (the round trip
through the driver, partly hidden because two units are in flight per actor). The unit results
are compared too: every executor must produce the same plans.

    .venv/bin/python bench/ray_overhead.py            # about a minute on 2 cores
    .venv/bin/python bench/ray_overhead.py --repeat 1 --out bench/ray_overhead.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))

from fllm_cli.bench.core import BenchOptions, run_bench  # noqa: E402

DOMAIN = str(ROOT / "domains" / "openagi.yaml")
TASKS = str(HERE / "data" / "openagi_tasks.jsonl")


def one_run(executor: str, workers: int | None) -> dict[str, Any]:
    """Run the formal bench once; return wall, start-up and steady-state per-unit times."""
    stamps: list[float] = []
    start = time.perf_counter()
    run = run_bench(
        BenchOptions(
            DOMAIN,
            TASKS,
            ["formal"],
            model="random:0",
            executor=executor,
            workers=workers,
            concurrency=1,
        ),
        on_result=lambda _row: stamps.append(time.perf_counter()),
    )
    wall = time.perf_counter() - start
    n = len(stamps)
    steady = (stamps[-1] - stamps[0]) / (n - 1) if n > 1 else wall
    plans = [(r["id"], r["word"], r["valid"]) for r in run.report["results"]]
    return {
        "units": n,
        "wall_s": wall,
        "first_result_s": stamps[0] - start if stamps else wall,
        "steady_ms_per_unit": 1000 * steady,
        "worker_ms_per_unit": 1000
        * statistics.mean(r["stats"]["seconds"] for r in run.report["results"]),
        "valid": sum(1 for _, _, v in plans if v),
        "plans": plans,
    }


def measure(executor: str, workers: int | None, repeat: int) -> dict[str, Any]:
    """Median of ``repeat`` runs (plans must agree between runs)."""
    runs = [one_run(executor, workers) for _ in range(repeat)]
    plans = runs[0].pop("plans")
    for other in runs[1:]:
        assert other.pop("plans") == plans, "a repeat produced other plans"
    out: dict[str, Any] = {"executor": executor, "workers": workers or 1, "repeat": repeat}
    for key in ("units", "valid"):
        out[key] = runs[0][key]
    for key in ("wall_s", "first_result_s", "steady_ms_per_unit", "worker_ms_per_unit"):
        out[key] = round(statistics.median(r[key] for r in runs), 3)
    out["plans"] = plans
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per setting (median)")
    parser.add_argument("--out", help="also write the figures as JSON to this file")
    args = parser.parse_args()
    import ray

    cores = os.cpu_count() or 1
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    rows = [measure("local", None, args.repeat)]
    start = time.perf_counter()
    ray.init(
        address="local",
        num_cpus=cores,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        logging_level="error",
        log_to_driver=False,
    )
    cluster_start = time.perf_counter() - start
    try:
        rows.append(measure("ray", 1, args.repeat))
        rows.append(measure("ray", cores, args.repeat))
    finally:
        ray.shutdown()
    plans = rows[0].pop("plans")
    for row in rows[1:]:
        assert row.pop("plans") == plans, f"{row['executor']} produced other plans"
    local, ray1 = rows[0], rows[1]
    result = {
        "machine": {"cores": cores, "python": platform.python_version(), "ray": ray.__version__},
        "cluster_start_s": round(cluster_start, 2),
        "runs": rows,
        # Net change of the time per unit from local to one Ray actor (negative: the driver's
        # bookkeeping overlaps the actor's work, as two units are in flight per actor).
        "ray_net_ms_per_unit": round(ray1["steady_ms_per_unit"] - local["steady_ms_per_unit"], 3),
        # Time per unit outside the unit itself on the Ray path: the driver round trip.
        "ray_round_trip_ms_per_unit": round(
            ray1["steady_ms_per_unit"] - ray1["worker_ms_per_unit"], 3
        ),
        "same_plans": True,
    }
    header = f"{'executor':<8} {'workers':>7} {'units':>5} {'wall s':>8} {'first s':>8}"
    header += f" {'ms/unit':>8} {'worker ms':>9}"
    print(header)
    for row in rows:
        print(
            f"{row['executor']:<8} {row['workers']:>7} {row['units']:>5} {row['wall_s']:>8.2f} "
            f"{row['first_result_s']:>8.2f} {row['steady_ms_per_unit']:>8.2f} "
            f"{row['worker_ms_per_unit']:>9.2f}"
        )
    print(
        f"cluster start {result['cluster_start_s']} s; per unit, 1 actor vs local: "
        f"{result['ray_net_ms_per_unit']:+.2f} ms net, "
        f"{result['ray_round_trip_ms_per_unit']:.2f} ms outside the unit; same plans: yes"
    )
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
