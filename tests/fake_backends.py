"""A model back end published the way a plugin would be: through the ``fllm.models`` group.

``priced:TRACE.jsonl`` replays a trace but charges one call and one cent for every answer, so
cost ceilings can be tested without a provider.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

from fllm_cli.llm import registry
from fllm_cli.llm.base import (
    ChoiceRequest,
    ChoiceResult,
    GenerateRequest,
    Generation,
    Model,
    Usage,
)
from fllm_cli.llm.options import ModelOptions
from fllm_cli.llm.replay import ReplayModel

PRICE = 0.01


class Priced(Model):
    """Answers from ``inner``; every answer is a paid call."""

    def __init__(self, inner: Model, price: float = PRICE) -> None:
        self.inner = inner
        self.price = price
        self.name = f"priced({inner.name})"
        self.asked = 0

    def choose(self, request: ChoiceRequest) -> ChoiceResult:
        self.asked += 1
        result = self.inner.choose(request)
        result.calls, result.cached, result.usage = 1, False, Usage(10, 1, self.price)
        return result

    def generate(self, request: GenerateRequest) -> Generation:
        self.asked += 1
        gen = self.inner.generate(request)
        gen.calls, gen.cached, gen.usage = 1, False, Usage(10, 1, self.price)
        return gen


def priced(arg: str, options: ModelOptions) -> Priced:
    """The plugin's factory: ``priced:TRACE.jsonl``."""
    return Priced(ReplayModel.from_file(arg))


def install_priced(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``priced`` an installed back end (as a package's entry point would)."""
    point = EntryPoint(name="priced", value="tests.fake_backends:priced", group="fllm.models")
    real = registry.entry_points

    def fake(**kwargs: str) -> list[EntryPoint]:
        if kwargs.get("group") == registry.ENTRY_POINT_GROUP:
            return [point]
        return list(real(**kwargs))

    monkeypatch.setattr(registry, "entry_points", fake)
