"""Backtracking search over PDA configurations, asking a model at real choice points.

At every configuration the feasible moves are the automaton's moves that the look-ahead says
can still be completed. One feasible move is taken without asking (a forced move). Several make
a choice point: the prompt lists them, the model picks one. If a branch dies anyway (a step
budget, a look-ahead that gave up), the search returns to the latest choice point with an
untried option, drops the dead branch, and goes on, so it finds a valid plan whenever one exists
within the budgets.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from fllm_cli.automaton.pda import PDA, Config
from fllm_cli.errors import FllmError, NoPlanError
from fllm_cli.llm.base import ChoiceRequest, ChoiceResult, Model
from fllm_cli.llm.meter import ModelStats, RunMeter


class Lookahead(Protocol):
    """What the planner needs from a look-ahead."""

    def feasible_moves(self, config: Config) -> list[tuple[int, Config]]:
        """Return (transition, next configuration) for each move that avoids dead ends."""
        ...


class PromptMaker(Protocol):
    """What the planner needs to ask the model."""

    def render(self, config: Config, moves: list[int]) -> tuple[str, tuple[str, ...]]:
        """Return the prompt and the option texts for a choice point."""
        ...


@dataclass
class Budgets:
    """Search budgets; None means unlimited.

    ``max_cost`` (USD) caps one search; the run meter enforces it (a ceiling for a whole run
    belongs on the meter the caller passes as the model).
    """

    max_llm_calls: int | None = None
    max_backtracks: int | None = 100
    max_steps: int | None = 10_000
    max_cost: float | None = None


@dataclass
class PlanStats(ModelStats):
    """What a planning run cost: the model's usage (charged by the run meter) and the search."""

    choice_points: int = 0
    forced_moves: int = 0
    backtracks: int = 0
    seconds: float = 0.0
    steps: int = 0
    budget_exhausted: str | None = None


@dataclass
class Frame:
    """A choice point on the search stack: its configuration and untried moves."""

    config: Config
    untried: list[tuple[int, Config]]


Event = Callable[[str, dict[str, Any]], None]


@dataclass
class Planner:
    """Drives a model through the automaton."""

    pda: PDA
    lookahead: Lookahead
    model: Model
    prompter: PromptMaker
    budgets: Budgets = field(default_factory=Budgets)
    on_event: Event | None = None
    kind: str = "plan"
    stats: PlanStats = field(default_factory=PlanStats)
    trace: list[dict[str, Any]] = field(default_factory=list)
    meter: RunMeter = field(init=False)

    def __post_init__(self) -> None:
        # Every choice goes through the run meter (the caller's, when ``model`` is one): it
        # enforces the cost ceiling and writes the trace records, into ``trace`` too.
        self.meter = RunMeter.wrap(self.model).fork(
            max_cost=self.budgets.max_cost, records=self.trace, stats=self.stats
        )

    def _emit(self, name: str, **data: Any) -> None:
        if self.on_event is not None:
            self.on_event(name, data)

    def run(self, start: Config | None = None) -> Config:
        """Return an accepting configuration, or raise NoPlanError/BudgetExceeded."""
        begin = time.perf_counter()
        self._furthest = start or self.pda.initial()
        try:
            return self._search(self._furthest)
        except FllmError as exc:
            exc.partial = {"steps_so_far": self._furthest.word_list(), "stats": self.stats}
            raise
        finally:
            self.stats.seconds = time.perf_counter() - begin

    def _search(self, config: Config) -> Config:
        stack: list[Frame] = []
        while not self.pda.is_accepting(config):
            if config.n_word > self._furthest.n_word:
                self._furthest = config
            self._count_step()
            moves = self.lookahead.feasible_moves(config)
            if not moves:
                config = self._backtrack(stack, "dead end")
                continue
            if len(moves) == 1:
                self.stats.forced_moves += 1
                config = moves[0][1]
                continue
            frame = Frame(config, list(moves))
            stack.append(frame)
            config = self._decide(frame)
        return config

    def _count_step(self) -> None:
        self.stats.steps += 1
        limit = self.budgets.max_steps
        if limit is not None and self.stats.steps > limit:
            raise NoPlanError(
                f"no valid plan found within --max-moves {limit}",
                hint="raise --max-moves, or check the domain's limits",
            )

    def _backtrack(self, stack: list[Frame], why: str) -> Config:
        while stack and not stack[-1].untried:
            stack.pop()
        if not stack:
            raise NoPlanError(f"no valid plan exists ({why} on every branch)")
        self.stats.backtracks += 1
        limit = self.budgets.max_backtracks
        if limit is not None and self.stats.backtracks > limit:
            raise NoPlanError(f"no valid plan found within --max-backtracks {limit}")
        self._emit("backtrack", why=why, depth=len(stack))
        frame = stack[-1]
        if len(frame.untried) == 1:
            self.stats.forced_moves += 1
            return frame.untried.pop()[1]
        return self._decide(frame)

    def _decide(self, frame: Frame) -> Config:
        """Ask the model among the frame's untried moves; remove and return the chosen one."""
        moves = [m for m, _ in frame.untried]
        prompt, options = self.prompter.render(frame.config, moves)
        self.stats.choice_points += 1
        self._emit("choice", number=self.stats.choice_points, options=options)
        request = ChoiceRequest(prompt, options, self.kind)
        point = {"choice_point": self.stats.choice_points}
        calls_left = self.budgets.max_llm_calls
        result: ChoiceResult
        if calls_left is not None and self.stats.llm_calls >= calls_left:
            # Out of model calls: decide deterministically, towards the shortest plan (the move
            # that leaves the fewest pending symbols), so recursive rules cannot loop to the
            # move budget; ties keep the first option.
            sizes = [len(config.stack) for _, config in frame.untried]
            result = self.meter.decided(request, sizes.index(min(sizes)), **point)
            self.stats.budget_exhausted = "max_llm_calls"
        else:
            result = self.meter.choose(request, **point)
        if self.meter.last is not None:
            self.meter.last["transition"] = self.pda.transitions[moves[result.index]].label()
        return frame.untried.pop(result.index)[1]
