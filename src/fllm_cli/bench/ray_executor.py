"""The Ray executor of ``fllm bench --executor ray``: units fan out to one actor per worker.

Each actor (:class:`BenchWorker`) receives the checked domain and the run's settings once,
builds its model once, and then runs unit after unit, so a worker pays model loading a single
time. The driver keeps two units in flight per actor, collects results as they finish (they
stream to ``on_result``, which appends them to the results file and drives the progress bar)
and sorts them back into task order, so the report is the local executor's. When an actor dies
(its process or node is lost), its units go back on the queue, run on another actor, and are
listed in ``retried``; a replacement actor is started in its place. With a rate limit, one
:class:`~fllm_cli.bench.limiter.Limiter` lives in its own actor and every worker reserves its
slots there, so the limit holds across the cluster.

Ray is imported only here, and only when the executor is used: ``fllm-cli[ray]`` is optional.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fllm_cli.bench.limiter import Limiter
from fllm_cli.bench.runner import ModelPool, OnResult, Pair, RunState, make_pool
from fllm_cli.bench.strategies import BenchConfig, Outcome, run_pair, score_row
from fllm_cli.bench.tasks import BenchTask
from fllm_cli.errors import UsageError
from fllm_cli.llm.registry import ModelOptions

INSTALL_HINT = (
    "--executor ray needs Ray, an optional extra: pip install 'fllm-cli[ray]' "
    "(a checkout's `make install` includes it)"
)
IN_FLIGHT = 2  # units queued per actor, so an actor never waits for the driver
MAX_ATTEMPTS = 3  # a unit whose worker dies this often is recorded as failed


def import_ray() -> Any:
    """Return the ray module, or raise UsageError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    return ray


class BenchWorker:
    """One worker: the run's config and model, built once, then unit after unit."""

    def __init__(
        self,
        config: BenchConfig,
        model: str | None,
        options: ModelOptions,
        limiter: Any = None,
    ) -> None:
        self.config = config
        self.pool, self.shared = make_pool(model, options)
        if limiter is not None:
            import ray

            self.pool = ModelPool(
                self.pool.make, self.pool.lock, lambda: float(ray.get(limiter.reserve.remote()))
            )

    def run(self, index: int, task: BenchTask, strategy: str) -> Outcome:
        """Run one unit."""
        with self.pool.borrow(index) as model:
            return run_pair(self.config, task, index, strategy, model)

    def pid(self) -> int:
        """Return the worker's process id."""
        return os.getpid()


@dataclass
class RayOptions:
    """Where and how wide to run."""

    address: str | None = None
    workers: int | None = None
    rate_limit: float | None = None
    worker_cls: type[BenchWorker] = BenchWorker
    init_args: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Slot:
    """One actor and what it is running."""

    actor: Any
    number: int
    running: int = 0
    dead: bool = False


def connect(ray: Any, address: str | None, init_args: dict[str, Any]) -> bool:
    """Join (or start) a cluster unless this process already has; return whether we did."""
    if ray.is_initialized():
        return False
    args: dict[str, Any] = {
        "include_dashboard": False,
        "logging_level": "warning",
        "log_to_driver": False,
        **init_args,
    }
    if address:
        args["address"] = address
    elif not os.environ.get("RAY_ADDRESS"):
        # A private cluster on this machine for this run only (never one found running), on
        # the loopback address, reporting nothing anywhere.
        args.setdefault("address", "local")
        args.setdefault("_node_ip_address", "127.0.0.1")
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        with warnings.catch_warnings():  # Ray Client warns, then raises: say it once
            warnings.simplefilter("ignore")
            ray.init(**args)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        hint = ""
        if address and address.startswith("ray://") and "RAY_AUTH_MODE" not in os.environ:
            hint = " (a cluster with token authentication also needs RAY_AUTH_MODE=token here)"
        raise UsageError(
            f"cannot reach the Ray cluster at '{address or 'local'}': {first}{hint}"
        ) from None
    return True


def run_pairs_ray(
    config: BenchConfig,
    pairs: list[Pair],
    model: str | None,
    options: ModelOptions,
    ray_options: RayOptions,
    *,
    max_cost: float | None = None,
    on_result: OnResult | None = None,
) -> tuple[RunState, dict[str, Any]]:
    """Run the pairs on Ray; return the run state and the executor's facts for the report."""
    ray = import_ray()
    _pool, shared = make_pool(model, options)  # a bad --model fails here, not in every actor
    if shared is not None:
        shared.close()
    started = connect(ray, ray_options.address, ray_options.init_args)
    try:
        return _Driver(ray, config, model, options, ray_options, max_cost, on_result).run(pairs)
    finally:
        if started:
            ray.shutdown()


class _Driver:
    """Schedules units onto actors, replaces dead actors, and collects results."""

    def __init__(
        self,
        ray: Any,
        config: BenchConfig,
        model: str | None,
        options: ModelOptions,
        ray_options: RayOptions,
        max_cost: float | None,
        on_result: OnResult | None,
    ) -> None:
        self.ray = ray
        self.config = config
        self.rate_limit = ray_options.rate_limit
        self.state = RunState()
        self.max_cost = max_cost
        self.on_result = on_result
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.workers = max(1, ray_options.workers or cpus)
        self.limiter = None
        if ray_options.rate_limit:
            self.limiter = ray.remote(num_cpus=0)(Limiter).remote(ray_options.rate_limit)
        # One CPU per actor; more actors than CPUs (a model behind an API mostly waits) share.
        share = min(1.0, cpus / self.workers) if cpus else 1.0
        worker = ray.remote(num_cpus=share)(ray_options.worker_cls)
        self.config_ref = ray.put(config)
        self.new_actor: Callable[[], Any] = lambda: worker.remote(
            self.config_ref, model, options, self.limiter
        )
        self.slots: list[_Slot] = []
        self.retried: list[dict[str, Any]] = []
        self.replaced = 0

    def _spawn(self) -> _Slot:
        slot = _Slot(self.new_actor(), len(self.slots))
        self.slots.append(slot)
        return slot

    def run(self, pairs: list[Pair]) -> tuple[RunState, dict[str, Any]]:
        ray = self.ray
        for _ in range(min(self.workers, max(1, len(pairs)))):
            self._spawn()
        queue: deque[Pair] = deque(pairs)
        attempts: dict[tuple[int, str], int] = {}
        flying: dict[Any, tuple[_Slot, Pair]] = {}
        try:
            while queue or flying:
                self._fill(queue, flying)
                if not flying:
                    break
                done, _ = ray.wait(list(flying), num_returns=1)
                for ref in done:
                    slot, pair = flying.pop(ref)
                    slot.running -= 1
                    self._collect(ref, slot, pair, queue, attempts)
        except KeyboardInterrupt:
            self.state.stopped = "interrupted"
        finally:
            for slot in self.slots:
                if not slot.dead:
                    _quietly(ray.kill, slot.actor)
        facts: dict[str, Any] = {
            "name": "ray",
            "workers": self.workers,
            "actors_started": len(self.slots),
            "retried": self.retried,
        }
        if self.limiter is not None:
            granted = ray.get(self.limiter.count.remote())
            facts["rate_limit"] = {"per_second": self.rate_limit, "granted": granted}
            ray.kill(self.limiter)
        order = {s: i for i, s in enumerate(self.config.strategies)}
        self.state.outcomes.sort(
            key=lambda o: (o.result["index"], order.get(o.result["strategy"], len(order)))
        )
        return self.state, facts

    def _fill(self, queue: deque[Pair], flying: dict[Any, tuple[_Slot, Pair]]) -> None:
        """Give each live actor up to IN_FLIGHT units, unless the run is stopping."""
        while queue and self.state.stopped is None:
            live = [s for s in self.slots if not s.dead and s.running < IN_FLIGHT]
            if not live:
                return
            slot = min(live, key=lambda s: s.running)
            pair = queue.popleft()
            index, task, strategy = pair
            flying[slot.actor.run.remote(index, task, strategy)] = (slot, pair)
            slot.running += 1

    def _collect(
        self,
        ref: Any,
        slot: _Slot,
        pair: Pair,
        queue: deque[Pair],
        attempts: dict[tuple[int, str], int],
    ) -> None:
        ray = self.ray
        try:
            outcome: Outcome = ray.get(ref)
        except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as exc:
            self._lost(slot, pair, queue, attempts, exc)
            return
        self.state.outcomes.append(outcome)
        self.state.spent += outcome.result["stats"].get("cost_usd", 0.0)
        if self.on_result is not None:
            self.on_result(outcome.result)
        if self.max_cost is not None and self.state.spent > self.max_cost:
            self.state.stopped = self.state.stopped or "max_cost"

    def _lost(
        self,
        slot: _Slot,
        pair: Pair,
        queue: deque[Pair],
        attempts: dict[tuple[int, str], int],
        exc: BaseException,
    ) -> None:
        """A unit's actor died: retry the unit on another actor and replace the dead one."""
        index, task, strategy = pair
        key = (index, strategy)
        attempts[key] = attempts.get(key, 1) + 1
        self.retried.append(
            {"id": task.id, "strategy": strategy, "worker": slot.number, "attempt": attempts[key]}
        )
        if not slot.dead:
            slot.dead = True
            if self.replaced < self.workers:
                self.replaced += 1
                self._spawn()
        if attempts[key] <= MAX_ATTEMPTS:
            queue.appendleft(pair)
            return
        outcome = _failed(self.config, task, index, strategy, type(exc).__name__)
        self.state.outcomes.append(outcome)
        if self.on_result is not None:
            self.on_result(outcome.result)


def _quietly(call: Callable[..., Any], *args: Any) -> None:
    """Clean up without masking what ended the run (a lost cluster, a Ctrl-C)."""
    with contextlib.suppress(Exception):
        call(*args)


def _failed(config: BenchConfig, task: BenchTask, index: int, strategy: str, why: str) -> Outcome:
    """Return the result of a unit whose workers kept dying."""
    from fllm_cli.llm.simple import ScriptedModel

    outcome = run_pair(config, task, index, strategy, ScriptedModel([]))
    outcome.result.update(
        valid=False,
        plan=None,
        word=None,
        error=f"its worker died {MAX_ATTEMPTS} times ({why})",
        error_kind="backend",
    )
    outcome.result.pop("reply", None)
    score_row(config, task, outcome.result)  # scored as what it is: no plan
    outcome.trace = []
    return outcome
