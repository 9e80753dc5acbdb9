"""The plan simulator accepts the ground-truth plans and rejects invalid ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fllm_cli.solve.pddl import shortest_plan, simulate
from fllm_cli.solve.problem import load_problem

PROBLEMS = Path(__file__).resolve().parents[2] / "domains" / "problems"


def rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (PROBLEMS / "data" / f"{name}.jsonl").open()]


@pytest.mark.parametrize("name", ["blocksworld", "mystery_blocksworld", "movie", "gripper"])
def test_ground_truth_plans_are_valid_from_the_natural_language_query(name: str) -> None:
    problem = load_problem(PROBLEMS / f"{name}.yaml")
    assert problem.domain is not None
    data = rows(name)
    for row in data:
        check = simulate(problem.domain, problem.task_for(row["query"]), row["optimal_plan"])
        assert check.valid and check.length == row["optimal_length"], (row["id"], check)
    if name == "blocksworld":
        assert len(data) == 100


def test_invalid_blocksworld_plans_are_rejected() -> None:
    problem = load_problem(PROBLEMS / "blocksworld.yaml")
    assert problem.domain is not None
    row = rows("blocksworld")[1]  # b on c on a
    task = problem.task_for(row["query"])
    plan = row["optimal_plan"]
    swapped = [plan[1], plan[0], *plan[2:]]
    assert "not applicable" in simulate(problem.domain, task, swapped).reason
    assert "goal not reached" in simulate(problem.domain, task, plan[:-1]).reason
    assert "unknown action" in simulate(problem.domain, task, ["(fly b)"]).reason
    assert "argument" in simulate(problem.domain, task, ["(unstack b)"]).reason


def test_pddl_problem_query_and_lenient_step_names() -> None:
    problem = load_problem(PROBLEMS / "blocksworld.yaml")
    assert problem.domain is not None
    row = rows("blocksworld")[0]
    task = problem.task_for(row["problem_pddl"])
    assert simulate(
        problem.domain, task, ["pickup(a)", "stack a on c", "Pick_Up b", "(stack b a)"]
    ).valid
    assert len(shortest_plan(problem.domain, task) or []) == row["optimal_length"]
