"""Spend tracking: tokens, calls and money, with an optional ceiling on cost."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fllm_cli.errors import BudgetExceeded
from fllm_cli.llm.base import Usage


@dataclass
class CostMeter:
    """Add up what model calls cost and stop the run once ``max_cost`` (USD) is passed.

    The call that crosses the line is still counted (its money is spent), then
    :class:`BudgetExceeded` is raised so the caller stops before asking again.
    """

    max_cost: float | None = None
    spent: Usage = field(default_factory=Usage)
    calls: int = 0
    cached: int = 0

    def charge(self, usage: Usage, *, calls: int = 1, cached: bool = False) -> None:
        """Record one reply's usage; raise BudgetExceeded when the total passes ``max_cost``."""
        self.spent.add(usage)
        self.calls += calls
        if cached:
            self.cached += 1
        if self.max_cost is not None and self.spent.cost_usd > self.max_cost:
            raise BudgetExceeded(
                f"cost budget exceeded: spent ${self.spent.cost_usd:.4f} "
                f"of ${self.max_cost:.4f} after {self.calls} model call(s)",
                hint="raise --max-cost, or use a cheaper or local model",
            )

    def charge_result(self, result: Any) -> None:
        """Charge a ChoiceResult or Generation (anything with usage, calls and cached)."""
        self.charge(result.usage, calls=result.calls, cached=bool(result.cached))

    @property
    def remaining(self) -> float | None:
        """Return the money left, or None when there is no ceiling."""
        if self.max_cost is None:
            return None
        return max(0.0, self.max_cost - self.spent.cost_usd)

    def summary(self) -> dict[str, Any]:
        """Return the totals as plain data for stats and JSON output."""
        return {
            "calls": self.calls,
            "cached": self.cached,
            "prompt_tokens": self.spent.prompt_tokens,
            "completion_tokens": self.spent.completion_tokens,
            "cost_usd": round(self.spent.cost_usd, 6),
            "max_cost": self.max_cost,
        }
