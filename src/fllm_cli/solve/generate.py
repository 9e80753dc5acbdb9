"""Write the generated instances shipped in ``domains/problems/data`` (deterministic, seeded).

Task Allocation and Warehouse follow the LLMFP paper's task descriptions; Movie and Gripper
instances are written from its domain descriptions. Ground truth comes from reference solvers
here (Z3 for task allocation, dynamic programming for warehouse, breadth-first search for the
multi-step domains). Run ``python -m fllm_cli.solve.generate [FOLDER]``.
"""

from __future__ import annotations

import json
import random
import sys
from itertools import combinations
from pathlib import Path
from typing import Any

from fllm_cli.solve.pddl import Task, parse_domain, shortest_plan

ROBOTS = ("Robot A", "Robot B", "Robot C")
TASKS = ("Task A", "Task B", "Task C")
# Minutes each robot needs for one task of each kind (our own numbers).
WORK_TIME = {
    ("Robot A", "Task A"): 24,
    ("Robot A", "Task B"): 89,
    ("Robot A", "Task C"): 88,
    ("Robot B", "Task A"): 27,
    ("Robot B", "Task B"): 58,
    ("Robot B", "Task C"): 62,
    ("Robot C", "Task A"): 18,
    ("Robot C", "Task B"): 57,
    ("Robot C", "Task C"): 49,
}
STATION_TASKS = {
    0: [2, 3, 4, 7, 9],
    1: [1, 2],
    2: [1, 5],
    3: [3, 4],
    4: [5, 8],
    5: [0, 4, 5, 6],
    6: [3, 6, 8, 9],
    7: [0, 1],
    8: [2, 7, 8],
    9: [7, 9],
}
# Grid positions of stations 0-9 and of the origin (index 10).
POSITIONS = [(1, 7), (4, 8), (8, 8), (2, 4), (6, 5), (9, 3), (3, 1), (7, 1), (5, 3), (0, 2), (5, 0)]


def distance(a: int, b: int) -> int:
    """Manhattan distance between two stations (10 is the origin)."""
    (x1, y1), (x2, y2) = POSITIONS[a], POSITIONS[b]
    return abs(x1 - x2) + abs(y1 - y2)


def allocation_optimum(counts: dict[str, int]) -> float:
    """Return the smallest finish time for ``counts`` tasks (Z3, exact)."""
    import z3

    opt = z3.Optimize()
    n = {(r, t): z3.Int(f"n_{r}_{t}".replace(" ", "")) for r in ROBOTS for t in TASKS}
    for v in n.values():
        opt.add(v >= 0)
    for t in TASKS:
        opt.add(z3.Sum([n[r, t] for r in ROBOTS]) == counts[t])
    finish = z3.Int("finish")
    for r in ROBOTS:
        opt.add(finish >= z3.Sum([WORK_TIME[r, t] * n[r, t] for t in TASKS]))
    opt.minimize(finish)
    assert opt.check() == z3.sat
    return float(opt.model()[finish].as_long())


def warehouse_optimum(tasks: list[int]) -> float:
    """Return the shortest tour origin -> a station per task in order -> origin."""
    best = {10: 0}
    for task in tasks:
        best = {s: min(c + distance(p, s) for p, c in best.items()) for s in STATION_TASKS[task]}
    return float(min(c + distance(s, 10) for s, c in best.items()))


def task_allocation(rng: random.Random, n: int = 50) -> list[dict[str, Any]]:
    """Return task-allocation questions with their optimal finish times."""
    out = []
    for _ in range(n):
        counts = {t: rng.randint(5, 80) for t in TASKS}
        text = "; ".join(f"Number of {t} is {counts[t]}" for t in TASKS) + "."
        out.append(
            {"QUESTION": text, "TYPE": "allocation", "GT EXEC RESULT": allocation_optimum(counts)}
        )
    return out


def warehouse(rng: random.Random, n: int = 50) -> list[dict[str, Any]]:
    """Return warehouse questions with their shortest total distances."""
    out = []
    for _ in range(n):
        tasks = rng.sample(range(10), rng.randint(3, 9))
        text = (
            f"Number of Tasks is {len(tasks)}. The Task ids needs to be accomplished are: {tasks}"
        )
        out.append({"QUESTION": text, "TYPE": "route", "GT EXEC RESULT": warehouse_optimum(tasks)})
    return out


SNACKS = ("chips", "dip", "pop", "cheese", "crackers")


def movie(domain_text: str) -> list[dict[str, Any]]:
    """Return 21 movie instances: snack subsets and both counter states."""
    domain = parse_domain(domain_text)
    out = []
    subsets = [c for k in (1, 2, 3) for c in combinations(SNACKS, k)][:21]
    for number, wanted in enumerate(subsets):
        at_zero = number % 3 != 2
        counter = "counter-at-zero" if at_zero else "counter-at-other-than-zero"
        lines = [f"You have {len(SNACKS)} objects."]
        lines += [f"object_{i} is {s}." for i, s in enumerate(SNACKS)]
        lines += [
            f"{counter} is true.",
            "Your goal is to achieve:",
            "movie-rewound",
            "counter-at-zero",
            *[f"have-{s}" for s in wanted],
        ]
        init: set[tuple[str, ...]] = {(s, f"object_{i}") for i, s in enumerate(SNACKS)} | {
            (counter,)
        }
        goal = {("movie-rewound",), ("counter-at-zero",)} | {(f"have-{s}",) for s in wanted}
        objects = tuple(f"object_{i}" for i in range(len(SNACKS)))
        out.append(
            _instance(
                number,
                "\n".join(lines) + "\n",
                domain,
                Task(objects, frozenset(init), frozenset(goal)),
            )
        )
    return out


def gripper(domain_text: str, rng: random.Random, n: int = 25) -> list[dict[str, Any]]:
    """Return small gripper instances (1-2 robots, 2-3 rooms, 2-4 balls)."""
    domain = parse_domain(domain_text)
    out = []
    for number in range(n):
        robots = [f"robot{i}" for i in range(1, rng.randint(1, 2) + 1)]
        rooms = [f"room{i}" for i in range(1, rng.randint(2, 3) + 1)]
        balls = [f"ball{i}" for i in range(1, rng.randint(2, 4) + 1)]
        start = {r: rng.choice(rooms) for r in robots}
        where = {b: rng.choice(rooms) for b in balls}
        target = {b: rng.choice([x for x in rooms if x != where[b]]) for b in balls}
        lines = [
            f"You have {len(robots)} robot(s); each has a left and a right gripper, both free.",
            f"You have {len(rooms)} rooms: {', '.join(rooms)}.",
            f"You have {len(balls)} balls.",
        ]
        lines += [f"{r} is at {start[r]}." for r in robots]
        lines += [f"{b} is at {where[b]}." for b in balls]
        lines += ["Your goal is to achieve:"] + [f"{b} should be at {target[b]}." for b in balls]
        init: set[tuple[str, ...]] = {("robot", r) for r in robots} | {("room", x) for x in rooms}
        init |= {("ball", b) for b in balls} | {("gripper", "left"), ("gripper", "right")}
        init |= {("at-robby", r, start[r]) for r in robots} | {("at", b, where[b]) for b in balls}
        init |= {("free", r, g) for r in robots for g in ("left", "right")}
        goal: set[tuple[str, ...]] = {("at", b, target[b]) for b in balls}
        objects = tuple(robots + rooms + balls + ["left", "right"])
        out.append(
            _instance(
                number,
                "\n".join(lines) + "\n",
                domain,
                Task(objects, frozenset(init), frozenset(goal)),
            )
        )
    return out


def _instance(number: int, query: str, domain: Any, task: Task) -> dict[str, Any]:
    plan = shortest_plan(domain, task)
    assert plan is not None, query
    return {"id": number, "query": query, "optimal_plan": plan, "optimal_length": len(plan)}


def main(folder: str | None = None) -> None:
    """Write all generated files into ``folder`` (default: the shipped problems' data)."""
    from fllm_cli.resources import data_dir

    out = Path(folder) if folder else data_dir("domains") / "problems" / "data"
    rng = random.Random(2024)
    for name, questions in (
        ("task_allocation", task_allocation(rng)),
        ("warehouse", warehouse(rng)),
    ):
        (out / f"{name}.benchmark.json").write_text(
            json.dumps({"questions": questions}, indent=1) + "\n", encoding="utf-8"
        )
    for name, rows in (
        ("movie", movie((out / "movie_domain.pddl").read_text())),
        ("gripper", gripper((out / "gripper_domain.pddl").read_text(), rng)),
    ):
        text = "".join(json.dumps(row) + "\n" for row in rows)
        (out / f"{name}.jsonl").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
