"""CostMeter: spend adds up and a ceiling stops the run with BudgetExceeded."""

from __future__ import annotations

import pytest

from fllm_cli.errors import BudgetExceeded
from fllm_cli.llm.base import ChoiceResult, Usage
from fllm_cli.llm.budget import CostMeter


def test_no_ceiling_never_raises() -> None:
    meter = CostMeter()
    for _ in range(5):
        meter.charge(Usage(10, 2, 1.0))
    assert meter.summary()["cost_usd"] == 5.0
    assert meter.remaining is None


def test_passing_the_ceiling_raises_after_counting() -> None:
    meter = CostMeter(max_cost=0.01)
    meter.charge(Usage(100, 5, 0.006))
    assert meter.remaining == pytest.approx(0.004)
    meter.charge(Usage(100, 5, 0.004))  # exactly at the ceiling is still allowed
    with pytest.raises(BudgetExceeded, match="cost budget exceeded") as info:
        meter.charge(Usage(100, 5, 0.001))
    assert "\n" not in info.value.one_line()
    assert meter.calls == 3
    assert meter.spent.prompt_tokens == 300


def test_cached_results_are_free() -> None:
    meter = CostMeter(max_cost=0.0)
    meter.charge_result(ChoiceResult(index=0, calls=0, cached=True))
    assert meter.summary() == {
        "calls": 0,
        "cached": 1,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cost_usd": 0.0,
        "max_cost": 0.0,
    }
