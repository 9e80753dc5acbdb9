"""The look-ahead's shortcuts must not change what it decides.

* ``TripModel.floor_without`` refuses values with no solver call, so it must be a true lower
  bound: never above the cheapest plan the solver can find (checked against Z3's optimiser).
* The block scan tests several values per solver query, so it must offer exactly the values
  a query per value would: the best-ranked feasible ones, in rank order.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import z3

from fllm_cli.databound import search
from fllm_cli.databound.csp import NONE, TripModel
from fllm_cli.databound.search import DataPlanner
from fllm_cli.databound.spec import read_spec
from fllm_cli.databound.tables import load_tables
from fllm_cli.domain.load import load_domain
from fllm_cli.llm.meter import RunMeter
from fllm_cli.llm.simple import RandomModel
from tests.databound.test_travelplanner import DOMAIN, QUERIES, REFS, structured


def _trip(index: int, **change: Any) -> TripModel:
    spec, _ = read_spec(load_domain(DOMAIN))
    assert spec is not None
    tables = load_tables(spec, REFS[index], "data")
    return TripModel(spec, tables, {**structured(QUERIES[index]), **change})


def _route(trip: TripModel) -> None:
    """Fix the stops and nights of some plan, as the search does before any slot."""
    assert trip.check() == z3.sat
    model = trip.solver.model()
    for var in [*trip.stop, *trip.nights]:
        trip.fix(var, model.eval(var, True).as_long())
    trip.tighten(model)


def _cheapest(trip: TripModel) -> int:
    """The least total cost of a plan under the decisions so far, by Z3's optimiser."""
    opt = z3.Optimize(ctx=trip.ctx)
    opt.set("timeout", 60_000)
    opt.add(*trip.solver.assertions(), *trip.tracked.values())
    handle = opt.minimize(trip.total_cost)
    assert opt.check() == z3.sat
    return int(str(opt.lower(handle)))


@pytest.mark.parametrize(
    ("index", "budget"), [(0, 10_000), pytest.param(20, 10_000, marks=pytest.mark.slow)]
)
def test_the_cost_floor_is_never_above_the_cheapest_plan(index: int, budget: int) -> None:
    trip = _trip(index, budget=budget, cuisine=None)
    _route(trip)
    rng = random.Random(index)
    slots = [item for item in trip.slot_vars if str(item[2]) in trip.cost_vars]
    for round_ in range(4):
        cheapest = _cheapest(trip)
        for _, _, var, _ in slots:
            name = str(var)
            if name in trip.fixed:
                continue
            fits = trip.fitting[name][0]
            least = min(trip.price(name, n) for n in fits)
            assert trip.floor_without(name) + least <= cheapest, (round_, name)
        # decide a few slots the way a plan would (values of a solution), then look again
        assert trip.check() == z3.sat
        model = trip.solver.model()
        for _, _, var, _ in rng.sample(slots, 4):
            if str(var) not in trip.fixed:
                trip.fix(var, model.eval(var, True).as_long())
    # the floor with everything open is the floor of a real plan: at least the bound's sum
    assert trip.floor_without("") > 0


def test_the_floor_counts_distinct_records_for_a_different_rule() -> None:
    """Five meals that must differ cannot all take the one cheapest restaurant."""
    trip = _trip(0, budget=10_000, cuisine=None)
    _route(trip)
    meals = [str(v) for s, _, v, _ in trip.slot_vars if s.name in ("breakfast", "lunch", "dinner")]
    required = [m for m in meals if NONE not in trip.fitting[m][0]]
    assert len(required) >= 2
    each_cheapest = sum(min(trip.price(m, n) for n in trip.fitting[m][0]) for m in required)
    distinct = trip._distinct_floor(
        [(str(v), o) for s, _, v, o in trip.slot_vars if str(v) in meals]
    )
    assert distinct > each_cheapest  # the same cheapest record cannot serve every meal


def _brute(planner: DataPlanner, decision: search.Decision) -> list[int]:
    """The best-ranked feasible values, one solver query per value (the reference)."""
    t = planner.trip
    out = []
    candidates = list(decision.candidates) + ([NONE] if decision.optional else [])
    for value in candidates:
        if len(out) >= search.SHOWN:
            break
        if t.check(decision.var == value) == z3.sat:
            out.append(value)
    return out


@pytest.mark.parametrize(
    ("index", "budget"), [(0, None), (20, None), pytest.param(20, "tight", marks=pytest.mark.slow)]
)
def test_the_block_scan_offers_what_one_query_per_value_would(
    index: int, budget: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "DECISION_CHECKS", 10_000)  # no early stop
    monkeypatch.setattr(search, "CHECK_RLIMIT", 0)  # 0: no bound
    change: dict[str, Any] = {}
    if budget == "tight":  # a budget a little above the cheapest plan: most values doomed
        change["budget"] = _cheapest(_trip(index)) / 100 + 150
    trip = _trip(index, **change)
    assert trip.check() == z3.sat
    planner = DataPlanner(trip, RunMeter(RandomModel(3)), QUERIES[index]["query"], {})
    routed = False
    compared = 0
    for decision in planner.decisions():
        if decision.slot is not None and not routed:
            planner._tighten()
            routed = True
        reference = _brute(planner, decision)
        found, _ = planner._feasible(decision)
        # exactly the reference, in its order; the scan may add the plan in hand's value last
        assert found[: len(reference)] == reference, (decision.name, found, reference)
        assert len(found) <= len(reference) + 1, (decision.name, found, reference)
        compared += 1
        planner.trip.fix(decision.var, found[0])
        planner.solution = None
    assert compared > 10


def test_a_swapped_plan_keeps_every_rule() -> None:
    """``TripModel.swapped`` evaluates only the rules a variable takes part in; whenever it
    says yes, the plan it returns must meet every assertion and every tracked rule."""
    trip = _trip(20)
    _route(trip)
    everything = z3.And(*trip.solver.assertions(), *trip.tracked.values())
    yes = no = 0
    for _, _, var, options in trip.slot_vars:
        assert trip.check() == z3.sat
        known = trip.solver.model()
        for value in [NONE, *range(len(options))]:
            swap = trip.swapped(known, var, value)
            if swap is None:
                no += 1
                continue
            yes += 1
            assert z3.is_true(swap.eval(everything, True)), (str(var), value)
            assert swap.eval(var, True).as_long() == value
        trip.fix(var, known.eval(var, True).as_long())
    assert yes > 20 and no > 20  # both answers were exercised
    assert trip.swapped(known, trip.stop[0], 0) is None  # route variables are never swapped


def test_records_held_elsewhere_are_exactly_those_no_plan_can_take() -> None:
    """``held_elsewhere`` refuses with no solver query the records a decided slot of a
    ``different`` rule holds; each must be unsat by the solver, and no other may be left out."""
    trip = _trip(0, budget=10_000, cuisine=None)
    _route(trip)
    meals = [(v, o) for s, _, v, o in trip.slot_vars if s.name in ("breakfast", "lunch", "dinner")]
    assert trip.held_elsewhere(str(meals[0][0])) == set()  # nothing decided yet
    assert trip.check() == z3.sat
    plan = trip.solver.model()
    first, options = next((v, o) for v, o in meals if plan.eval(v, True).as_long() != NONE)
    value = plan.eval(first, True).as_long()
    trip.fix(first, value)
    record = (options[value][0], options[value][1].index)
    checked = 0
    for var, others in meals:
        if var is first:
            continue
        held = trip.held_elsewhere(str(var))
        same = {n for n, (t, r) in enumerate(others) if (t, r.index) == record}
        assert held == same
        for n in held & set(trip.fitting[str(var)][0]):
            assert trip.check(var == n) == z3.unsat
            checked += 1
    assert checked >= 1  # some other meal could have had that restaurant


def test_a_shaped_term_is_the_term_built_directly() -> None:
    """Terms built once over placeholders and substituted (``TripModel._shaped``) are the
    very terms the direct construction gives, so the solver sees the same problem."""
    trip = _trip(0)
    var = trip.stop[0]
    values = [7, 3, 3, 9]
    assert trip._lookup(var, values).eq(trip._chain(var, values))
    again = trip._lookup(trip.nights[0], values)  # the same shape, another variable
    assert again.eq(trip._chain(trip.nights[0], values))
    for name, cost in trip.cost_vars.items():
        direct = z3.IntVal(0, trip.ctx)
        slot_var = next(v for _, _, v, _ in trip.slot_vars if str(v) == name)
        for n in range(len(cost.cents) - 1, -1, -1):
            if cost.cents[n]:
                direct = z3.If(slot_var == n, cost.cents[n], direct)
        if name.startswith("accommodation"):
            continue  # a stay's term multiplies by the nights (checked by the plans' costs)
        assert cost.expr.eq(direct), name
