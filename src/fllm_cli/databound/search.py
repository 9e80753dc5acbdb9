"""Planning a data-bound task: read the request, then fix one decision at a time.

The decisions come in a fixed order (the stops, the nights at each, the transport of each
leg, the stay at each stop, then each day's slots). For each, the look-ahead keeps the values
from which a complete plan still exists, in the table's ranking order, shows the model the best
few of them with their cost and the budget left, and fixes the value the model picks. A
decision with one feasible value is taken without asking. Since every value offered is
feasible, the search never backtracks.

Three things keep the look-ahead fast without changing what it offers: a value that costs more
than the budget leaves over the cheapest rest of the plan is refused with no solver call (a
sound lower bound, ``TripModel.floor_without``); the solver tests values in blocks that grow
while they hold no plan; and the value of the plan in hand needs no query at all.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import z3

from fllm_cli.databound.csp import CENTS, NONE, SOLVER_RLIMIT, TripModel, var_name
from fllm_cli.databound.request import Reading
from fllm_cli.databound.spec import Slot
from fllm_cli.databound.tables import Record
from fllm_cli.errors import NoPlanError
from fllm_cli.llm.base import ChoiceRequest
from fllm_cli.llm.meter import RunMeter
from fllm_cli.prompts import render
from fllm_cli.search.planner import Budgets, PlanStats

SHOWN = 3  # options shown to the model at one decision
# Bounds by work (solver resource units and queries), never by wall time: see csp.py.
CHECK_RLIMIT = 1_000_000  # one look-ahead query (~0.1 s); an undecided value is not offered
DECISION_CHECKS = 24  # look-ahead queries per decision; past them no more options are looked
# for (the plan in hand's value is always offered, so a decision never ends with nothing)
MAX_BLOCK = 16  # values ruled out by one look-ahead query at most
PROGRESS = 80  # decided lines shown; a 31-day trip has more, and then the window slides
EMPTY = "nothing (leave it empty)"


@dataclass
class Decision:
    name: str
    var: z3.ArithRef
    candidates: list[int]
    label: Callable[[int], str]
    question: str
    slot: Slot | None = None
    options: list[tuple[str, Record]] = field(default_factory=list)
    day: int | None = None
    optional: bool = False


@dataclass
class Outcome:
    values: dict[str, int]
    stats: PlanStats
    lookahead_ms: list[float]


class DataPlanner:
    """Drives a model through the decisions of a :class:`TripModel`."""

    def __init__(
        self,
        trip: TripModel,
        meter: RunMeter,
        task: str,
        readings: dict[str, Reading],
        search: tuple[str, ...] = (),
        budgets: Budgets | None = None,
        on_event: Callable[[str, dict[str, Any]], None] | None = None,
        objective: str | None = None,
    ) -> None:
        self.trip = trip
        # "cheapest": every decision takes the value of a cheapest whole plan (no model asked)
        self.objective = objective
        self.task = task
        self.readings = readings
        self.search = search
        self.budgets = budgets or Budgets()
        self.on_event = on_event
        self.stats = PlanStats()
        # The search's own meter charges its stats; everything also reaches the caller's.
        self.meter = meter.fork(
            max_cost=self.budgets.max_cost, records=meter.records, stats=self.stats
        )
        self.values: dict[str, int] = {}
        self.progress: list[str] = []
        self.spent = 0  # cents of decided items
        self.lookahead_ms: list[float] = []
        self.solution: z3.ModelRef | None = None  # a complete plan under the decisions so far
        self.target: z3.ModelRef | None = None  # the plan the objective asks for, if any
        self._floor: tuple[str, int] | None = None  # (variable, cost floor of the rest)

    # -- the decisions ------------------------------------------------------------------------

    def decisions(self) -> list[Decision]:
        t = self.trip
        stops = t.stops
        out = [
            Decision(
                f"stop {j + 1}",
                t.stop[j],
                list(range(len(stops))),
                t.stop_name,
                f"Which place is stop {j + 1} of {t.k} of the trip?",
            )
            for j in range(t.k)
        ]
        out += [
            Decision(
                f"nights at stop {j + 1}",
                t.nights[j],
                list(range(1, t.days)),
                lambda n: f"{n} night{'s' if n > 1 else ''}",
                f"How many nights at stop {j + 1}?",
            )
            for j in range(t.k - 1)
        ]
        by_kind: dict[str, list[Decision]] = {"leg": [], "stay": [], "day": []}
        for slot, where, var, options in t.slot_vars:
            at = where or 0
            ranked = self._ranked(options)
            label = self._labeller(options)
            if slot.per == "leg":
                name, question = (
                    f"{slot.name} of leg {at + 1}",
                    f"Choose the {slot.name} for leg {at + 1} of {t.legs}.",
                )
            elif slot.per == "stay":
                name, question = (
                    f"{slot.name} at stop {at + 1}",
                    f"Choose the {slot.name} at stop {at + 1}.",
                )
            else:
                name, question = f"day {at} {slot.name}", f"Choose the {slot.name} of day {at}."
            optional = slot.per == "day" and slot.need != "always"
            by_kind[slot.per].append(
                Decision(
                    name,
                    var,
                    ranked,
                    label,
                    question,
                    slot,
                    options,
                    at if slot.per == "day" else None,
                    optional,
                )
            )
        by_kind["day"].sort(key=lambda d: d.day or 0)  # day by day, slots in domain order
        return out + by_kind["leg"] + by_kind["stay"] + by_kind["day"]

    def _ranked(self, options: list[tuple[str, Record]]) -> list[int]:
        def key(n: int) -> tuple[float, int]:
            table, record = options[n]
            rank = self.trip.spec.tables[table].rank
            if rank is None or not isinstance(record[rank[0]], (int, float)):
                return (0.0, n)
            value = float(record[rank[0]])
            return (-value if rank[1] else value, n)

        return sorted(range(len(options)), key=key)

    def _labeller(self, options: list[tuple[str, Record]]) -> Callable[[int], str]:
        def label(n: int) -> str:
            if n == NONE:
                return EMPTY
            table, record = options[n]
            return record.shown(self.trip.spec.tables[table])

        return label

    # -- the search ---------------------------------------------------------------------------

    def run(self) -> Outcome:
        begin = time.perf_counter()
        routed = False
        if self.objective == "cheapest":
            self.target = self.trip.cheapest_plan()
        try:
            for decision in self.decisions():
                if decision.slot is not None and not routed:
                    # stops and nights are fixed: the places of every day are known
                    self._tighten()
                    routed = True
                self._decide(decision)
        finally:
            self.stats.seconds = time.perf_counter() - begin
        return Outcome(dict(self.values), self.stats, self.lookahead_ms)

    def _tighten(self) -> None:
        self.trip.tighten(self._solution("once the route was fixed"))

    def _solution(self, when: str) -> z3.ModelRef:
        """The plan in hand: the last decision's, else any plan the solver finds."""
        if self.solution is None:
            if self.trip.check() != z3.sat:
                raise NoPlanError(f"internal error: no plan left {when}")
            self.solution = self.trip.solver.model()
        return self.solution

    def _feasible(self, decision: Decision) -> tuple[list[int], dict[int, z3.ModelRef]]:
        """Return the best-ranked feasible values (at most SHOWN) and a solution for each."""
        start = time.perf_counter()
        t = self.trip
        known = self._solution(f"before {decision.name}")
        free = known.eval(decision.var, True).as_long()
        found: list[int] = []
        models: dict[int, z3.ModelRef] = {}
        candidates = list(decision.candidates)
        if decision.optional:
            candidates.append(NONE)
        t.solver.set("rlimit", CHECK_RLIMIT)
        try:
            self._scan(decision, candidates, free, known, found, models)
        finally:
            t.solver.set("rlimit", SOLVER_RLIMIT)
        self.lookahead_ms.append((time.perf_counter() - start) * 1000)
        return found, models

    def _scan(
        self,
        decision: Decision,
        candidates: list[int],
        free: int,
        known: z3.ModelRef,
        found: list[int],
        models: dict[int, z3.ModelRef],
    ) -> None:
        """Find the best-ranked feasible values, in rank order, with few solver calls.

        Values the budget cannot carry, and records a ``different`` rule already gave to
        another slot, are dropped first (``_over_budget``, ``held_elsewhere``: no solver call).
        A value is then tried by swapping it into the plan in hand (``TripModel.swapped``);
        when that fails, the solver decides, in blocks: one query "some value of this block"
        rules out a whole block of doomed values at once. After a block with no plan the next
        block is twice as long; after a hit, values are taken one at a time again. A hit inside
        a block is remembered, and the values ranked above it are tested again.
        """
        t = self.trip
        fitting = t.fitting.get(var_name(decision.var))  # known once the route is fixed
        fits = set(fitting[0]) if fitting is not None else None
        held = t.held_elsewhere(var_name(decision.var)) if decision.slot is not None else set()
        pending = [v for v in candidates if (fits is None or v in fits) and v not in held]
        sure: dict[int, z3.ModelRef] = {free: known}  # values known feasible, with a plan
        pending = [v for v in pending if v == free or not self._over_budget(decision, v)]
        i, width, queries = 0, 1, 0
        while i < len(pending) and len(found) < SHOWN:
            if queries >= DECISION_CHECKS:
                break
            value = pending[i]
            if value in sure:
                found.append(value)
                models[value] = sure[value]
                i, width = i + 1, 1
                continue
            if width == 1 and (swap := t.swapped(known, decision.var, value)) is not None:
                sure[value] = swap
                continue
            block = []
            for v in pending[i : i + width]:
                if v in sure:
                    break
                block.append(v)
            self.stats.steps += 1
            queries += 1
            if len(block) == 1:
                result = t.check(decision.var == value)
            else:
                result = t.check(z3.Or(*[decision.var == v for v in block]))
            if result != z3.sat:  # no plan with any of them (or undecided: never offered)
                i += len(block)
                width = min(width * 2, MAX_BLOCK)
                continue
            model = t.solver.model()
            hit = model.eval(decision.var, True).as_long()
            sure[hit] = model
            width = 1  # retest the values ranked above the hit one at a time
        if free not in found:  # the value the solution in hand uses is always feasible
            found.append(free)
            models[free] = known

    def _over_budget(self, decision: Decision, value: int) -> bool:
        """Whether ``value`` costs more than the budget leaves even for the cheapest rest of
        the plan (``TripModel.floor_without``): a sound refusal that needs no solver call."""
        t = self.trip
        bound: int | None = getattr(t, "bound_cents", None)
        name = var_name(decision.var)
        if bound is None or decision.slot is None or name not in t.fitting:
            return False
        if self._floor is None or self._floor[0] != name:
            self._floor = (name, t.floor_without(name))
        return self._floor[1] + t.price(name, value) > bound

    def _decide(self, decision: Decision) -> None:
        if self.target is not None:  # the objective decides: a plan of least cost
            value = self.target.eval(decision.var, True).as_long()
            self.stats.forced_moves += 1
            self._take(decision, value, self.target)
            return
        options, models = self._feasible(decision)
        if not options:
            raise NoPlanError(f"internal error: no feasible value left for {decision.name}")
        if len(options) == 1:
            self.stats.forced_moves += 1
            index = 0
        else:
            index = self._ask(decision, options)
        self._take(decision, options[index], models[options[index]])

    def _take(self, decision: Decision, value: int, solution: z3.ModelRef) -> None:
        self.trip.fix(decision.var, value)
        self.solution = solution
        self.values[decision.name] = value
        cost = self._cost(decision, value)
        self.spent += cost
        line = f"- {decision.name}: {decision.label(value)}"
        bound = getattr(self.trip, "bound_cents", None)
        if bound is not None and cost:
            # what is left rides on the line that spent it: the prompt only grows at its end,
            # so the model reuses its prefix (a separate "budget left" line changed each time)
            line += f" ({self.trip.currency.show((bound - self.spent) / CENTS)} left)"
        self.progress.append(line)

    def _cost(self, decision: Decision, value: int) -> int:
        return 0 if decision.slot is None else self.trip.price(var_name(decision.var), value)

    def _ask(self, decision: Decision, options: list[int]) -> int:
        labels = tuple(decision.label(v) for v in options)
        prompt = render(
            "data/choice.j2",
            {
                "task": self.task,
                "request": {
                    k: _shown(r.value)
                    for k, r in self.readings.items()
                    if r.value not in (None, [])
                },
                # The whole progress, append-only, so a local model reuses the prompt's prefix
                # from one choice to the next (bounded: a trip has at most a few dozen lines).
                "progress": self.progress[-PROGRESS:],
                "question": decision.question,
                "choices": labels,
            },
            self.search,
        )
        self.stats.choice_points += 1
        if self.on_event is not None:
            self.on_event("choice", {"number": self.stats.choice_points, "options": labels})
        request = ChoiceRequest(prompt, labels, "plan")
        point = {"choice_point": self.stats.choice_points, "decision": decision.name}
        calls_left = self.budgets.max_llm_calls
        if calls_left is not None and self.stats.llm_calls >= calls_left:
            result = self.meter.decided(request, 0, **point)  # the best-ranked feasible option
            self.stats.budget_exhausted = "max_llm_calls"
        else:
            result = self.meter.choose(request, **point)
        return result.index


def _shown(value: Any) -> str:
    if isinstance(value, list):
        if len(value) > 3 and all(isinstance(v, str) and len(v) == 10 for v in value):
            return f"{value[0]} to {value[-1]}"
        return ", ".join(str(v) for v in value)
    return str(value)
