"""A run-wide limit on model requests per second, shared by every worker of a run.

:class:`Limiter` hands out evenly spaced slots: a caller reserves the next free one and sleeps
until it. The local executor shares one limiter between its threads; the Ray executor keeps one
in a single actor that every worker asks, so the limit holds for the whole cluster, not per
worker. A reservation returns the wait measured on the limiter's own clock, so workers on other
machines need no synchronised clocks.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from fllm_cli.llm.base import ChoiceRequest, ChoiceResult, GenerateRequest, Generation, Model

Reserve = Callable[[], float]
"""Reserve one request slot; return how many seconds to wait before sending it."""


class Limiter:
    """At most ``rate`` requests per second over the run, with no burst beyond one."""

    def __init__(self, rate: float, clock: Callable[[], float] = time.monotonic) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.interval = 1.0 / rate
        self.clock = clock
        self.next_free = 0.0
        self.granted = 0
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Take the next free slot; return the seconds until it (0 when it is free now)."""
        with self._lock:
            now = self.clock()
            slot = max(now, self.next_free)
            self.next_free = slot + self.interval
            self.granted += 1
            return slot - now

    def count(self) -> int:
        """Return how many slots were granted."""
        return self.granted


def waiting(reserve: Reserve, sleep: Callable[[float], None] = time.sleep) -> Callable[[], None]:
    """Return a function that reserves a slot and sleeps until it."""

    def acquire() -> None:
        delay = reserve()
        if delay > 0:
            sleep(delay)

    return acquire


class LimitedModel(Model):
    """A model whose every request first waits for a slot of a run-wide limiter."""

    def __init__(self, inner: Model, acquire: Callable[[], None]) -> None:
        self.inner = inner
        self.acquire = acquire
        self.name = inner.name
        # Forward what the wrapped back end can do (e.g. decoding under a grammar).
        self.supports_grammar = getattr(inner, "supports_grammar", False)
        self.reads_requests = getattr(inner, "reads_requests", False)

    def choose(self, request: ChoiceRequest) -> ChoiceResult:
        """Wait for a slot, then ask the wrapped model."""
        self.acquire()
        return self.inner.choose(request)

    def generate(self, request: GenerateRequest) -> Generation:
        """Wait for a slot, then ask the wrapped model."""
        self.acquire()
        return self.inner.generate(request)

    def info(self) -> dict[str, object]:
        """Return the wrapped model's facts."""
        return self.inner.info()


def limited(model: Model, reserve: Reserve) -> Model:
    """Wrap ``model`` so that each request waits for a slot of ``reserve``."""
    return LimitedModel(model, waiting(reserve))
