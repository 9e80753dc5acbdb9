"""A model wrapper that counts calls and tokens, reports them, and enforces a wall-clock budget.

Every command that calls a model wraps its back end in :class:`ObservedModel`, so progress
displays and time budgets work the same for planning, agents and solving without the core
knowing about terminals: the wrapper calls ``on_call`` after each request and refuses to start a
request once the deadline has passed (raising :class:`~fllm_cli.errors.TimeBudgetExceeded`,
which names the stage the run was in).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fllm_cli.errors import TimeBudgetExceeded
from fllm_cli.llm.base import (
    ChoiceRequest,
    ChoiceResult,
    GenerateRequest,
    Generation,
    Model,
    Usage,
)


@dataclass
class CallTally:
    """What the observed model has done so far."""

    stage: str = "starting"
    calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0

    def add(self, calls: int, usage: Usage) -> None:
        """Count one finished request."""
        self.calls += calls
        self.tokens += usage.prompt_tokens + usage.completion_tokens
        self.cost_usd += usage.cost_usd


class ObservedModel(Model):
    """Delegate to ``inner``; count, report and stop at the deadline."""

    def __init__(
        self,
        inner: Model,
        on_call: Callable[[CallTally], None] | None = None,
        max_seconds: float | None = None,
        budget_flag: str = "--max-seconds",
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.tally = CallTally()
        self.on_call = on_call
        self.max_seconds = max_seconds
        self.budget_flag = budget_flag
        self.started = time.monotonic()

    def elapsed(self) -> float:
        """Seconds since the wrapper was made."""
        return time.monotonic() - self.started

    def _before(self, stage: str) -> None:
        self.tally.stage = stage
        if self.max_seconds is not None and self.elapsed() >= self.max_seconds:
            raise TimeBudgetExceeded(
                f"stopped after {self.elapsed():.0f} s, the time budget, in stage '{stage}'",
                hint=f"raise it with {self.budget_flag} (now {self.max_seconds:g})",
                stage=stage,
            )
        if self.on_call is not None:
            self.on_call(self.tally)

    def _after(self, calls: int, usage: Usage) -> None:
        self.tally.add(calls, usage)
        if self.on_call is not None:
            self.on_call(self.tally)

    def choose(self, request: ChoiceRequest) -> ChoiceResult:
        """Choose through the inner model."""
        self._before(request.kind)
        result = self.inner.choose(request)
        self._after(result.calls, result.usage)
        return result

    def generate(self, request: GenerateRequest) -> Generation:
        """Generate through the inner model."""
        self._before(request.kind)
        result = self.inner.generate(request)
        self._after(result.calls, result.usage)
        return result

    def close(self) -> None:
        """Close the inner model."""
        self.inner.close()

    def info(self) -> dict[str, Any]:
        """Return the inner model's facts."""
        return self.inner.info()

    def __getattr__(self, name: str) -> Any:
        # Back-end specific helpers (e.g. the local model's scoring) stay reachable.
        return getattr(self.inner, name)
