"""Property over the whole OpenAGI benchmark: valid plans, no backtracks, no forced questions."""

from __future__ import annotations

import pytest

from fllm_cli import api
from fllm_cli.llm.simple import RandomModel
from tests.conftest import load_tasks
from tests.search.test_planner import Recording


@pytest.mark.slow  # 185 tasks x 20 seeds: 3,700 plans
def test_every_task_every_seed(openagi: str) -> None:
    tasks = load_tasks()
    assert len(tasks) == 185
    domain = api.load_domain(openagi)
    for task in tasks:
        problem = api.compile_problem(
            domain, inputs=task["inputs"], output=task["output"], task=task["task"]
        )
        for seed in range(20):
            model = Recording(RandomModel(seed * 1000 + task["id"]))
            result = api.plan(problem, model)
            assert api.verify(problem, result.document["word"]).valid, (task["id"], seed)
            assert result.stats.backtracks == 0
            assert all(size >= 2 for size in model.sizes)  # never asked at a forced move
            assert result.stats.choice_points == len(model.sizes)
            assert result.document["steps"], "a plan has at least one tool step"
