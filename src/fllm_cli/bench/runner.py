"""Run every (task, strategy) pair, concurrently if asked, keeping what is done on a stop.

Each pair gets its own model from a :class:`ModelPool`: a fresh seeded random chooser per task
(seed = base seed + task index), or one shared back end. A shared in-process model is guarded
by a lock so it serves one pair at a time. Pairs are independent, so a concurrent run returns
exactly what a serial run returns; results are sorted back into task order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from fllm_cli.bench.limiter import Reserve, limited
from fllm_cli.bench.strategies import BenchConfig, Outcome, run_pair
from fllm_cli.bench.tasks import BenchTask
from fllm_cli.llm.base import Model
from fllm_cli.llm.registry import ModelOptions, make_model, parse_model_spec, resolve_model_name

SHARED_LOCKED = ("local", "scripted", "replay")

OnResult = Callable[[dict[str, Any]], None]


@dataclass
class ModelPool:
    """Hands each pair a model: ``make(index)`` per task, or one shared model."""

    make: Callable[[int], Model]
    lock: threading.Lock | None = None
    reserve: Reserve | None = None

    @contextmanager
    def borrow(self, index: int) -> Iterator[Model]:
        """Yield the model for task ``index``, holding the lock of a shared model."""
        with self.lock if self.lock is not None else nullcontext():
            model = self.make(index)
            yield model if self.reserve is None else limited(model, self.reserve)


def seed_base(spec: str | None) -> int | None:
    """Return the base seed of a ``random:N`` model (task i uses N + i), else None."""
    kind, arg = parse_model_spec(resolve_model_name(spec).strip())
    return int(arg) if kind == "random" and arg else None


def make_pool(spec: str | None, options: ModelOptions) -> tuple[ModelPool, Model | None]:
    """Return the pool for a ``--model`` string and the shared model to close (if any)."""
    name = resolve_model_name(spec).strip()
    kind, _arg = parse_model_spec(name)
    if kind == "random":
        make_model(name)  # validates the seed
        base = seed_base(name)
        from fllm_cli.llm.simple import RandomModel

        return ModelPool(lambda i: RandomModel(None if base is None else base + i)), None
    shared = make_model(name, options)
    lock = threading.Lock() if kind in SHARED_LOCKED else None
    return ModelPool(lambda _i: shared, lock), shared


@dataclass
class RunState:
    """The outcome of a run: finished pairs, and why it stopped early if it did."""

    outcomes: list[Outcome] = field(default_factory=list)
    stopped: str | None = None
    spent: float = 0.0


Pair = tuple[int, BenchTask, str]


def pending_pairs(
    tasks: list[BenchTask], strategies: list[str], done: set[tuple[str, str]]
) -> list[Pair]:
    """Return (index, task, strategy) for each pair not in ``done``, task-major."""
    return [
        (i, t, s) for i, t in enumerate(tasks) for s in strategies if (str(t.id), s) not in done
    ]


def run_pairs(
    config: BenchConfig,
    pairs: list[Pair],
    pool: ModelPool,
    *,
    concurrency: int = 1,
    max_cost: float | None = None,
    spent: float = 0.0,
    on_result: OnResult | None = None,
) -> RunState:
    """Run the pairs; Ctrl-C (or a KeyboardInterrupt from a model) and --max-cost stop early."""
    state = RunState(spent=spent)
    executor = ThreadPoolExecutor(max_workers=max(1, concurrency))
    futures: dict[Future[Outcome], Pair] = {}
    queue = list(reversed(pairs))
    try:
        while queue or futures:
            while queue and len(futures) < max(1, concurrency) and state.stopped is None:
                pair = queue.pop()
                futures[executor.submit(_one, config, pair, pool)] = pair
            if not futures:
                break
            finished, _ = wait(futures, return_when=FIRST_COMPLETED)
            interrupt = None
            for future in sorted(finished, key=lambda f: futures[f][0]):
                futures.pop(future)
                interrupt = _collect(future, state, max_cost, on_result) or interrupt
            if interrupt is not None:
                raise interrupt
    except KeyboardInterrupt:
        state.stopped = "interrupted"
        for future in futures:
            future.cancel()
    finally:
        executor.shutdown(wait=state.stopped != "interrupted", cancel_futures=True)
    state.outcomes.sort(
        key=lambda o: (o.result["index"], config.strategies.index(o.result["strategy"]))
    )
    return state


def _one(config: BenchConfig, pair: Pair, pool: ModelPool) -> Outcome:
    index, task, strategy = pair
    with pool.borrow(index) as model:
        return run_pair(config, task, index, strategy, model)


def _collect(
    future: Future[Outcome], state: RunState, max_cost: float | None, on_result: OnResult | None
) -> KeyboardInterrupt | None:
    """Keep a finished pair; return an interrupt raised inside a worker (it stops the run)."""
    error = future.exception()
    if isinstance(error, KeyboardInterrupt):
        return error
    if error is not None:
        raise error
    outcome = future.result()
    state.outcomes.append(outcome)
    state.spent += outcome.result["stats"].get("cost_usd", 0.0)
    if on_result is not None:
        on_result(outcome.result)
    if max_cost is not None and state.spent > max_cost and state.stopped is None:
        state.stopped = "max_cost"
    return None
