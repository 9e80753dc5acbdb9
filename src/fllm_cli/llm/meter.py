"""The run meter: one wrapper every model call and choice of every command goes through.

:class:`RunMeter` wraps a :class:`~fllm_cli.llm.base.Model` and

* counts calls, cached replies, fallbacks, tokens and money;
* refuses to start a call once the money ceiling (``max_cost``, USD) is spent
  (:class:`~fllm_cli.errors.BudgetExceeded`) or the wall clock (``max_seconds``) has run out
  (:class:`~fllm_cli.errors.TimeBudgetExceeded`, naming the stage the run was in);
* records one trace record per call, in the schema of ``docs/models.md``, so that
  ``--model replay:TRACE.jsonl`` can replay any command;
* tells a progress display (``on_call``) before and after each call.

A meter may be *forked*: the child has its own limits, counts and record list (a plan inside a
benchmark, one solve query), and everything it does is also charged to, checked against and
recorded by its parents. A planner or runtime given a plain model wraps it with
:meth:`RunMeter.wrap`; given a meter, it forks it, so the caller's meter sees every call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, fields
from typing import Any

from fllm_cli.errors import BudgetExceeded, TimeBudgetExceeded
from fllm_cli.llm.base import (
    ChoiceRequest,
    ChoiceResult,
    GenerateRequest,
    Generation,
    Model,
    Usage,
)

Record = dict[str, Any]


@dataclass
class ModelStats:
    """What the model calls of a run, or of one part of it, cost: one shape for every command.

    The meter charges these fields; a command's own stats (a plan's search counters, an agent's
    tool calls) subclass it and add theirs, so usage is counted once, by the meter.
    """

    llm_calls: int = 0
    cached: int = 0
    fallbacks: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    model_seconds: float = 0.0
    choices_asked: int = 0  # choices put to the model
    unread_replies: int = 0  # of which no reply named an option (they took a default)

    def charge(
        self,
        calls: int,
        usage: Usage,
        cached: bool,
        fallback: bool,
        seconds: float,
        asked: bool = False,
    ) -> None:
        """Add one call's cost; ``asked`` for a choice the model was asked (not one fllm made
        when a budget ran out), whose ``fallback`` then means its reply could not be read."""
        self.llm_calls += calls
        self.cached += int(cached)
        self.fallbacks += int(fallback)
        self.choices_asked += int(asked)
        self.unread_replies += int(asked and fallback)
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.cost_usd += usage.cost_usd
        self.model_seconds += seconds

    def as_dict(self) -> dict[str, Any]:
        """Return the JSON form, a subclass's fields included (money to micro-dollars, times
        to ms)."""
        return {name: _rounded(name, value) for name, value in asdict(self).items()}

    def add_into(self, doc: dict[str, Any]) -> None:
        """Add these model fields into ``doc``, a stats dict in the JSON form (the cost of a
        part of the run that had its own meter)."""
        for name, value in self.usage_dict().items():
            doc[name] = _rounded(name, doc.get(name, 0) + value)

    def usage_dict(self) -> dict[str, Any]:
        """Return only the model fields, in the JSON form."""
        return {f.name: _rounded(f.name, getattr(self, f.name)) for f in fields(ModelStats)}


def _rounded(name: str, value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6 if name == "cost_usd" else 3)
    return value


@dataclass
class CallTally:
    """What a meter has seen so far, for progress displays."""

    stage: str = "starting"
    calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0


class RunMeter(Model):
    """Delegate to ``inner``; count, meter cost, enforce budgets, record the trace."""

    def __init__(
        self,
        inner: Model,
        *,
        max_cost: float | None = None,
        max_seconds: float | None = None,
        budget_flag: str = "--max-seconds",
        on_call: Callable[[CallTally], None] | None = None,
        records: list[Record] | None = None,
        parent: RunMeter | None = None,
        stats: ModelStats | None = None,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.reads_requests = getattr(inner, "reads_requests", False)
        self.max_cost = max_cost
        self.max_seconds = max_seconds
        self.budget_flag = budget_flag
        self.on_call = on_call
        self.records: list[Record] = [] if records is None else records
        self.parent = parent
        self.stats = ModelStats() if stats is None else stats
        self.tally = CallTally()
        self.started = time.monotonic()
        self.last: Record | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ building

    @classmethod
    def wrap(cls, model: Model) -> RunMeter:
        """Return ``model`` if it is a meter, else a new meter around it."""
        return model if isinstance(model, RunMeter) else cls(model)

    def fork(
        self,
        inner: Model | None = None,
        *,
        max_cost: float | None = None,
        max_seconds: float | None = None,
        budget_flag: str = "--max-seconds",
        records: list[Record] | None = None,
        stats: ModelStats | None = None,
    ) -> RunMeter:
        """Return a child meter (own limits, counts and records) that reports to this one.

        ``stats`` is the object the child charges (a command's stats, which extend
        :class:`ModelStats`); a fresh one when not given.
        """
        return RunMeter(
            inner or self.inner,
            max_cost=max_cost,
            max_seconds=max_seconds,
            budget_flag=budget_flag,
            records=records,
            parent=self,
            stats=stats,
        )

    @property
    def calls(self) -> int:
        """Model calls charged so far (here and in children)."""
        return self.stats.llm_calls

    def _chain(self) -> Iterator[RunMeter]:
        meter: RunMeter | None = self
        while meter is not None:
            yield meter
            meter = meter.parent

    # ------------------------------------------------------------------ budgets

    def elapsed(self) -> float:
        """Seconds since this meter was made."""
        return time.monotonic() - self.started

    def check(self, stage: str) -> None:
        """Raise if a call may not start now (clock or money spent, here or in a parent)."""
        for meter in self._chain():
            meter._check_own(stage)

    def _check_own(self, stage: str) -> None:
        if self.max_seconds is not None and self.elapsed() >= self.max_seconds:
            raise TimeBudgetExceeded(
                f"stopped after {self.elapsed():.0f} s, the time budget, in stage '{stage}'",
                hint=f"raise it with {self.budget_flag} (now {self.max_seconds:g})",
                stage=stage,
            )
        spent = self.stats.cost_usd
        if self.max_cost is not None and spent > 0 and spent >= self.max_cost:
            raise BudgetExceeded(
                f"cost budget of ${self.max_cost:.4f} spent (${spent:.4f} in {self.calls} "
                f"model call(s)); stopped before stage '{stage}'",
                hint="raise --max-cost, or use a cheaper or local model",
            )

    def _before(self, stage: str) -> None:
        self.check(stage)
        for meter in self._chain():
            meter.tally.stage = stage
            if meter.on_call is not None:
                meter.on_call(meter.tally)

    def _charge(
        self,
        calls: int,
        usage: Usage,
        cached: bool,
        fallback: bool,
        seconds: float = 0.0,
        asked: bool = False,
    ) -> None:
        for meter in self._chain():
            with meter._lock:
                s = meter.stats
                s.charge(calls, usage, cached, fallback, seconds, asked)
                meter.tally.calls = s.llm_calls
                meter.tally.tokens = s.prompt_tokens + s.completion_tokens
                meter.tally.cost_usd = s.cost_usd
            if meter.on_call is not None:
                meter.on_call(meter.tally)

    def _keep(self, record: Record) -> Record:
        self.last = record
        seen: list[int] = []
        for meter in self._chain():
            if id(meter.records) in seen:
                continue
            seen.append(id(meter.records))
            with meter._lock:
                meter.records.append(record)
        return record

    # ------------------------------------------------------------------ the model interface

    def choose(self, request: ChoiceRequest, **extra: Any) -> ChoiceResult:
        """Choose through the inner model; ``extra`` fields go into the trace record."""
        self._before(request.kind)
        start = time.perf_counter()
        result = self.inner.choose(request)
        latency = time.perf_counter() - start
        self._charge(result.calls, result.usage, result.cached, result.fallback, latency, True)
        self._keep(choice_record(request, result, latency, **extra))
        return result

    def generate(self, request: GenerateRequest, **extra: Any) -> Generation:
        """Generate through the inner model; ``extra`` fields go into the trace record."""
        self._before(request.kind)
        start = time.perf_counter()
        gen = self.inner.generate(request)
        latency = time.perf_counter() - start
        self._charge(gen.calls, gen.usage, gen.cached, False, latency)
        record: Record = {
            "type": "generate",
            "kind": request.kind,
            "prompt": request.prompt,
            "reply": gen.text,
            "usage": asdict(gen.usage),
            "calls": gen.calls,
            "latency": round(latency, 4),
            "cached": gen.cached,
        }
        if request.system is not None:
            record["system"] = request.system
        if gen.finish_reason is not None:
            record["finish_reason"] = gen.finish_reason
        self._keep({**record, **extra})
        return gen

    def decided(self, request: ChoiceRequest, index: int, **extra: Any) -> ChoiceResult:
        """Record a choice fllm made without asking the model (a call budget ran out)."""
        result = ChoiceResult(index=index, fallback=True)
        self._charge(0, result.usage, False, True)
        self._keep(choice_record(request, result, 0.0, asked=False, **extra))
        return result

    def event(self, name: str, **data: Any) -> Record:
        """Record a domain event (a tool run, an environment step, a code run)."""
        return self._keep({"type": "event", "event": name, **data})

    def close(self) -> None:
        """Close the inner model."""
        self.inner.close()

    def info(self) -> dict[str, Any]:
        """Return the inner model's facts."""
        return self.inner.info()

    def summary(self) -> dict[str, Any]:
        """Return the model totals as plain data (the usage fields of every command's stats)."""
        return self.stats.usage_dict()

    def __getattr__(self, name: str) -> Any:
        # Back-end specific helpers (e.g. the local model's scoring) stay reachable.
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


def choice_record(
    request: ChoiceRequest, result: ChoiceResult, latency: float, **extra: Any
) -> Record:
    """Return the trace record of one choice."""
    index = result.index if 0 <= result.index < len(request.options) else 0
    record: Record = {
        "type": "choice",
        "kind": request.kind,
        "prompt": request.prompt,
        "options": list(request.options),
        "reply": result.raw,
        "choice": index,
        "chosen": request.options[index] if request.options else None,
        "usage": asdict(result.usage),
        "calls": result.calls,
        "latency": round(latency, 4),
        "cached": result.cached,
        "fallback": result.fallback,
    }
    if result.mode:  # how an API model was asked (schema, bias, logprobs, text)
        record["mode"] = result.mode
    if len(result.exchanges) > 1:  # a correction was asked: keep every round trip
        record["exchanges"] = result.exchanges
    record.update(extra)
    return record
