"""A model wrapper that counts calls, tokens and money, whatever happens to the plan."""

from __future__ import annotations

from typing import Any

from fllm_cli.llm.base import (
    ChoiceRequest,
    ChoiceResult,
    GenerateRequest,
    Generation,
    Model,
    Usage,
)


class Meter(Model):
    """Pass requests to ``inner`` and total what they cost."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls = 0
        self.fallbacks = 0
        self.usage = Usage()

    def choose(self, request: ChoiceRequest) -> ChoiceResult:
        """Choose through the inner model."""
        result = self.inner.choose(request)
        self.calls += result.calls
        self.fallbacks += int(result.fallback)
        self.usage.add(result.usage)
        return result

    def generate(self, request: GenerateRequest) -> Generation:
        """Generate through the inner model."""
        gen = self.inner.generate(request)
        self.calls += gen.calls
        self.usage.add(gen.usage)
        return gen

    def info(self) -> dict[str, Any]:
        """Return the inner model's facts."""
        return self.inner.info()

    def totals(self) -> dict[str, Any]:
        """Return the counts in the shape of plan stats."""
        return {
            "llm_calls": self.calls,
            "fallbacks": self.fallbacks,
            "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens,
            "cost_usd": round(self.usage.cost_usd, 6),
        }
