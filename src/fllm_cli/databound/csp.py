"""The constraint model of one data-bound task, in Z3, and the exact look-ahead built on it.

Every decision of a plan is an integer variable: which stop comes next, how many nights at it,
and for every slot which record of its table fills it (``-1`` for an empty optional slot). The
domain's rules become Z3 constraints over these variables. The look-ahead offers a value only
if the solver finds a complete plan with it, so the model never sees an option that dooms the
plan; a task with no plan at all is explained from an unsat core before any planning choice.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any, NamedTuple

import z3

from fllm_cli.databound.expr import ExprError
from fllm_cli.databound.spec import Constraint, DataSpec, Slot, clock_minutes
from fllm_cli.databound.tables import Record
from fllm_cli.errors import NoPlanError, UsageError

NONE = -1
CENTS = 100
# Every solver query is bounded by work, never by wall time, so that the same request and
# data give the same plan and the same refusal on every run and under any machine load. A unit
# is one of z3's resource counts ("rlimit"); on the 2-core machine we measure on, z3 spends about
# 5,000 a millisecond on these models (bench/travel_heldout.py, docs/travelplanner.md).
SOLVER_RLIMIT = 100_000_000  # one full query (about 20 s)
EXPLAIN_RLIMIT = 10_000_000  # one query about one rule while explaining a refusal (about 2 s)
CHEAPEST_RLIMIT = 50_000_000  # the cheapest plan of a refused request (past it, no figure)


def var_name(var: z3.ExprRef) -> str:
    """The name of a z3 constant (``str`` pretty-prints it, a hundred times slower)."""
    return var.decl().name()  # type: ignore[no-any-return]


# A trailing parenthesised qualifier of a place name: the state of "Denver(Colorado)".
_QUALIFIER = re.compile(r"\s*\([^()]*\)\s*$")


def place_key(text: Any) -> str:
    """Compare places without case, spacing or a trailing ``(State)``."""
    return " ".join(_QUALIFIER.sub("", str(text or "")).split()).lower()


class SlotCost(NamedTuple):
    """A slot's cost: its variable, the cents of each option, its term in the slot's variable."""

    var: z3.ArithRef
    cents: list[int]  # per night for stays
    expr: z3.ArithRef


class TripModel:
    """The Z3 model of a trip for one task: its variables, constraints and queries."""

    def __init__(
        self,
        spec: DataSpec,
        tables: dict[str, list[Record]],
        request: dict[str, Any],
        explaining: bool = False,
    ) -> None:
        # Planning drops the records a request rule (forbid/match) rules out before the solver
        # sees them; to explain a refusal they stay, and each such rule becomes a tracked
        # constraint, so an unsat core can name it ("diet vegan") like any other rule.
        self.explaining = explaining
        # A context of its own: z3's shared context keeps state between queries of earlier
        # tasks, and the same task then found other plans in one process (a library user
        # planning twice got two different trips).
        self.ctx = z3.Context()
        self.spec = spec
        self.tables = tables
        self.request = request
        self.days = self._days()
        self.home = place_key(request.get(spec.trip.home))
        if not self.home:
            raise UsageError(f"the request gives no '{spec.trip.home}' (where the trip starts)")
        self.stops = tables[spec.trip.stops_table]
        count = spec.trip.stops_count
        self.k = count if isinstance(count, int) else count.get(self.days, 0)
        if not self.k:
            shapes = ", ".join(str(d) for d in sorted(count)) if isinstance(count, dict) else ""
            raise NoPlanError(f"this domain plans trips of {shapes} days, not {self.days}")
        self.solver = z3.SolverFor("QF_LIA", ctx=self.ctx)
        self.solver.set("rlimit", SOLVER_RLIMIT)
        self.tracked: dict[str, z3.BoolRef] = {}
        self.groups: dict[str, list[z3.BoolRef]] = {}
        self.costs: list[z3.ArithRef] = []
        self.cost_vars: dict[str, SlotCost] = {}  # var name -> its cost
        self.needs: dict[str, z3.BoolRef] = {}  # day slot var name -> "must be filled"
        self.fitting: dict[str, tuple[list[int], int]] = {}  # var -> fitting options, nights
        self.fixed: dict[str, int] = {}  # decided variables
        self.request_rules: list[str] = []  # tracked forbid/match rules (explaining only)
        self.own: dict[str, list[z3.BoolRef]] = {}  # var -> the rules only it takes part in
        self.rules_of: dict[str, z3.BoolRef] = {}
        self.formula_vars: dict[int, set[str]] = {}  # formula id -> the variables it mentions
        self.mentions: list[tuple[z3.BoolRef, set[str]]] | None = None
        self._shapes: dict[Hashable, tuple[Any, list[Any]]] = {}  # see _shaped
        self._cents: dict[str, list[int]] = {}  # slot -> cents of each of its options
        self.currency = spec.money()[1]
        self.build()

    # -- shape -------------------------------------------------------------------------------

    def _days(self) -> int:
        value = self.request.get(self.spec.trip.days)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 31:
            raise UsageError(f"the request gives no usable '{self.spec.trip.days}' (1..31 days)")
        return value

    def _city_ids(self) -> dict[str, int]:
        """Number every place the trip can meet: home, the stops, the slots' place columns."""
        names = {self.home}
        columns = {(self.spec.trip.stops_table, self.spec.trip.stops_field)}
        for slot in self.spec.slots.values():
            keys = (slot.origin, slot.dest) if slot.per == "leg" else (slot.city,)
            columns.update((table, key) for table in slot.tables for key in keys)
        for table, key in columns:
            for r in self.tables.get(table, ()):
                if isinstance(r[key], str):
                    names.add(place_key(r[key]))
        return {name: n for n, name in enumerate(sorted(names))}

    def stop_name(self, n: int) -> str:
        """The place that stop record ``n`` names."""
        return str(self.stops[n][self.spec.trip.stops_field])

    def build(self) -> None:
        _spec, days, k = self.spec, self.days, self.k
        self.ids = self._city_ids()
        home = self.ids[self.home]
        stops_city = [self.ids[place_key(self.stop_name(n))] for n in range(len(self.stops))]
        if len(stops_city) < k:
            raise NoPlanError(
                f"the data lists {len(stops_city)} place(s) to visit; the trip needs {k}"
            )
        self.stop = [z3.Int(f"stop_{j}", self.ctx) for j in range(k)]
        add = self.solver.add
        for s in self.stop:
            add(s >= 0, s < len(stops_city))
        add(z3.Distinct(*self.stop) if k > 1 else z3.BoolVal(True, self.ctx))
        self.stop_city = [self._lookup(s, stops_city) for s in self.stop]
        for c in self.stop_city:
            add(c != home)
        # nights[j]: nights at stop j; night d (1..days-1) is at stop p[d].
        nights_total = days - 1
        if nights_total < k:
            raise NoPlanError(f"{days} days leave {nights_total} nights for {k} stops")
        self.nights = [z3.Int(f"nights_{j}", self.ctx) for j in range(k)]
        for n in self.nights:
            add(n >= 1, n <= nights_total)
        add(z3.Sum(*self.nights) == nights_total)
        starts = [z3.IntVal(1, self.ctx)]
        for j in range(1, k):
            starts.append(starts[-1] + self.nights[j - 1])
        self.starts = starts
        # position of night d: the j with starts[j] <= d
        self.pos = {
            d: z3.Sum(*[z3.If(starts[j] <= d, 1, 0) for j in range(1, k)])
            if k > 1
            else z3.IntVal(0, self.ctx)
            for d in range(1, days)
        }
        self.night_city = {
            d: self._lookup(self.pos[d], [self.stop_city[j] for j in range(k)]) for d in self.pos
        }
        # A round trip travels home on the last day; a trip that ends at its last stop spends
        # the last day there (no night is booked for it).
        self.returns = self.spec.trip.end == "home"
        self.legs = k + 1 if self.returns else k
        self.travel = {1: z3.BoolVal(True, self.ctx), days: z3.BoolVal(self.returns, self.ctx)}
        for d in range(2, days):
            self.travel[d] = self.pos[d] != self.pos[d - 1]
        self.day_from = {
            d: (z3.IntVal(home, self.ctx) if d == 1 else self.night_city[d - 1])
            for d in range(1, days + 1)
        }
        last = z3.IntVal(home, self.ctx) if self.returns else self.night_city[days - 1]
        self.day_to = {d: (last if d == days else self.night_city[d]) for d in range(1, days + 1)}
        self._slots()
        self._constraints()

    def _lookup(self, index: z3.ArithRef, values: list[Any]) -> z3.ArithRef:
        """Return ``values[index]`` as a Z3 term (values: ints or Z3 terms).

        A table of plain numbers is built once over a placeholder and put in place of it for
        each variable (``_shaped``): the same term, at one call instead of hundreds."""
        if all(type(v) is int for v in values):
            key = ("lookup", tuple(values))
            return self._shaped(key, ("i",), lambda x: self._chain(x, values), index)
        return self._chain(index, values)

    def _chain(self, index: z3.ArithRef, values: list[Any]) -> z3.ArithRef:
        last = values[-1]
        expr: z3.ArithRef = z3.IntVal(last, self.ctx) if isinstance(last, int) else last
        for n in range(len(values) - 2, -1, -1):
            expr = z3.If(index == n, values[n], expr)
        return expr

    def _shaped(
        self,
        key: Hashable,
        sorts: tuple[str, ...],
        make: Callable[..., z3.ExprRef],
        *terms: z3.ExprRef,
    ) -> Any:
        """``make(*terms)``, built once per ``key`` over placeholder constants and then
        instantiated by substitution.

        Building a term of a few hundred nodes through z3's Python API costs milliseconds,
        and a week's trip builds the same shape for every day and slot; substitution builds
        the identical term in one call. ``sorts`` gives each placeholder's sort: "i" an
        integer, "b" a Boolean."""
        if key not in self._shapes:
            holes = [
                z3.Int(f"_hole{n}", self.ctx) if sort == "i" else z3.Bool(f"_hole{n}", self.ctx)
                for n, sort in enumerate(sorts)
            ]
            self._shapes[key] = (make(*holes), holes)
        shape, holes = self._shapes[key]
        return z3.substitute(shape, *zip(holes, terms))

    # -- slots -------------------------------------------------------------------------------

    def _allowed(self, slot: Slot, table: str) -> list[Record]:
        """Records of ``table`` a slot may take, after the unary request rules (forbid/match).

        When explaining, every record stays and the rules are tracked (``_c_forbid``)."""
        records = list(self.tables[table])
        if self.explaining:
            return records
        for c in self.spec.constraints:
            if slot.name in c.slots and c.rule in ("forbid", "match"):
                records = [r for r in records if self._fits(c, r) is not False]
        return records

    def _fits(self, c: Constraint, record: Record) -> bool | None:
        """Whether a record passes a forbid/match rule; None when the request does not ask."""
        wanted = self.request.get(c.request)
        if not wanted:
            return None
        if c.rule == "forbid":
            return c.value.replace("{value}", str(wanted)).lower() not in _lower_values(
                record[c.column]
            )
        allowed = {v.lower() for v in c.values.get(str(wanted), ())}
        return None if not allowed else str(record[c.column]).lower() in allowed

    def _slots(self) -> None:
        self.slot_vars: list[tuple[Slot, int | None, z3.ArithRef, list[tuple[str, Record]]]] = []
        home = z3.IntVal(self.ids[self.home], self.ctx)
        for slot in self.spec.slots.values():
            options = [(t, r) for t in slot.tables for r in self._allowed(slot, t)]
            if slot.per == "leg":
                ends = [(self._id(r[slot.origin]), self._id(r[slot.dest])) for _, r in options]
                for j in range(self.legs):
                    var = z3.Int(f"{slot.name}_leg{j}", self.ctx)
                    origin = home if j == 0 else self.stop_city[j - 1]
                    dest = home if j == self.k else self.stop_city[j]
                    fits = self._shaped(
                        (slot.name, "fits"), ("i", "i", "i"), self._leg_fits(ends),
                        var, origin, dest,
                    )  # fmt: skip
                    self._own(var, fits)
                    self.slot_vars.append((slot, j, var, options))
                    self._add_cost(var, slot.name, options)
            elif slot.per == "stay":
                cities = [self._id(r[slot.city]) for _, r in options]
                for j in range(self.k):
                    var = z3.Int(f"{slot.name}_stay{j}", self.ctx)
                    fits = self._shaped(
                        (slot.name, "fits"), ("i", "i"), self._stay_fits(cities),
                        var, self.stop_city[j],
                    )  # fmt: skip
                    self._own(var, fits)
                    self.slot_vars.append((slot, j, var, options))
                    self._add_cost(var, slot.name, options, self.nights[j])
            else:
                cities = [self._id(r[slot.city]) for _, r in options]
                for d in range(1, self.days + 1):
                    var = z3.Int(f"{slot.name}_day{d}", self.ctx)
                    need = (
                        z3.BoolVal(slot.need == "always", self.ctx)
                        if slot.need != "stay"
                        else z3.Not(self.travel[d])
                    )
                    fits = self._shaped(
                        (slot.name, "fits"), ("i", "i", "i", "b"), self._day_fits(cities),
                        var, self.day_from[d], self.day_to[d], need,
                    )  # fmt: skip
                    self._own(var, fits)
                    self.slot_vars.append((slot, d, var, options))
                    self.needs[var_name(var)] = need
                    self._add_cost(var, slot.name, options)

    # Where a slot's record must be, as a function of placeholders (see ``_shaped``): a leg's
    # record runs between the leg's two places, a stay's is in the stop's city, and a day's is
    # in the city the day starts or ends in (or the slot stays empty when it need not be filled).

    def _leg_fits(self, ends: list[tuple[int, int]]) -> Callable[..., z3.BoolRef]:
        def make(var: z3.ArithRef, origin: z3.ArithRef, dest: z3.ArithRef) -> z3.BoolRef:
            fits = [z3.And(var == n, origin == a, dest == b) for n, (a, b) in enumerate(ends)]
            return z3.Or(*fits) if fits else z3.BoolVal(False, self.ctx)

        return make

    def _stay_fits(self, cities: list[int]) -> Callable[..., z3.BoolRef]:
        def make(var: z3.ArithRef, city: z3.ArithRef) -> z3.BoolRef:
            fits = [z3.And(var == n, city == c) for n, c in enumerate(cities)]
            return z3.Or(*fits) if fits else z3.BoolVal(False, self.ctx)

        return make

    def _day_fits(self, cities: list[int]) -> Callable[..., z3.BoolRef]:
        def make(
            var: z3.ArithRef, start: z3.ArithRef, end: z3.ArithRef, need: z3.BoolRef
        ) -> z3.BoolRef:
            fits = [z3.And(var == n, z3.Or(start == c, end == c)) for n, c in enumerate(cities)]
            return z3.Or(z3.And(var == NONE, z3.Not(need)), *fits)

        return make

    def _id(self, place: Any) -> int:
        return self.ids.get(place_key(place), -2)

    def _add_cost(
        self,
        var: z3.ArithRef,
        slot: str,
        options: list[tuple[str, Record]],
        nights: z3.ArithRef | None = None,
    ) -> None:
        """Give a slot's cost a variable of its own (``tighten`` bounds it later)."""
        total = self._total()
        if total is None:
            return
        if slot not in self._cents:
            self._cents[slot] = [self.unit_cost(option, total) for option in options]
        cents = self._cents[slot]

        def make(index: z3.ArithRef, *count: z3.ArithRef) -> z3.ArithRef:
            expr: z3.ArithRef = z3.IntVal(0, self.ctx)
            for n in range(len(cents) - 1, -1, -1):
                if cents[n]:
                    expr = z3.If(index == n, cents[n], expr)
            if count:  # a stay: the price of a night times the nights
                expr = z3.Sum(*[z3.If(count[0] == n, expr * n, 0) for n in range(1, self.days)])
            return expr

        if nights is None:
            expr = self._shaped((slot, "cost"), ("i",), make, var)
        else:
            expr = self._shaped((slot, "cost"), ("i", "i"), make, var, nights)
        cost = z3.Int(f"cost_{var_name(var)}", self.ctx)
        self._own(var, cost == expr)
        self.costs.append(cost)
        self.cost_vars[var_name(var)] = SlotCost(cost, cents, expr)

    def _own(self, var: z3.ArithRef, formula: z3.BoolRef) -> None:
        """Assert a rule that only ``var`` (and the route) takes part in."""
        self.solver.add(formula)
        self.own.setdefault(var_name(var), []).append(formula)

    def swapped(self, model: z3.ModelRef, var: z3.ArithRef, value: int) -> z3.ModelRef | None:
        """``model`` with ``var`` set to ``value``, if that is still a plan; else None.

        Only the rules ``var`` takes part in can break, so only they are evaluated: its own
        (where its record must be, its cost) and the tracked rules over the whole plan. This
        finds most feasible values at a fraction of a solver query; None decides nothing."""
        name = var_name(var)
        if name not in self.own:  # a route variable: its rules are not kept apart
            return None
        copy = model.translate(model.ctx)
        copy.update_value(var, z3.IntVal(value, self.ctx))
        if name in self.cost_vars:
            slot_cost = self.cost_vars[name]
            copy.update_value(slot_cost.var, copy.eval(slot_cost.expr, True))
        return copy if z3.is_true(copy.eval(self._rules_of(name), True)) else None

    def _rules_of(self, name: str) -> z3.BoolRef:
        """The conjunction of the rules variable ``name`` (or its cost) takes part in."""
        if name not in self.rules_of:
            if self.mentions is None:  # which constants each tracked formula mentions, once
                self.mentions = [
                    (f, self.formula_vars.get(f.get_id()) or _constants(f))
                    for group in self.groups.values()
                    for f in group
                ]
            keys = {name, f"cost_{name}"}
            shared = [f for f, names in self.mentions if keys & names]
            self.rules_of[name] = z3.And(*self.own.get(name, ()), *shared, self.ctx)
        return self.rules_of[name]

    def tighten(self, model: z3.ModelRef) -> None:
        """Once the route is fixed (every plan left has ``model``'s stops and nights), work out
        which options fit each slot there, and bound each slot's cost from below by its
        cheapest one (a bound that follows from the rules, so no plan is lost)."""

        def at(expr: z3.ArithRef) -> int:
            return int(model.eval(expr, True).as_long())

        for slot, where, var, options in self.slot_vars:
            j = where or 0
            if slot.per == "leg":
                ends = (
                    self.ids[self.home] if j == 0 else at(self.stop_city[j - 1]),
                    self.ids[self.home] if j == self.k else at(self.stop_city[j]),
                )
                fits = [
                    n
                    for n, (_, r) in enumerate(options)
                    if (self._id(r[slot.origin]), self._id(r[slot.dest])) == ends
                ]
            elif slot.per == "stay":
                city = at(self.stop_city[j])
                fits = [n for n, (_, r) in enumerate(options) if self._id(r[slot.city]) == city]
            else:
                cities = {at(self.day_from[j]), at(self.day_to[j])}
                fits = [n for n, (_, r) in enumerate(options) if self._id(r[slot.city]) in cities]
                if not z3.is_true(model.eval(self.needs[var_name(var)], True)):
                    fits.append(NONE)  # it may stay empty
            self.fitting[var_name(var)] = (fits, at(self.nights[j]) if slot.per == "stay" else 1)
            if fits and var_name(var) in self.cost_vars:
                cost = self.cost_vars[var_name(var)].var
                self.solver.add(cost >= min(self.price(var_name(var), n) for n in fits))

    def price(self, name: str, value: int) -> int:
        """Cents that slot variable ``name`` costs with ``value`` (after ``tighten``)."""
        if name not in self.cost_vars or value == NONE:
            return 0
        return self.cost_vars[name].cents[value] * self.fitting.get(name, ((), 1))[1]

    def fix(self, var: z3.ArithRef, value: int) -> None:
        """Decide a variable for good."""
        self.solver.add(var == value)
        self.fixed[var_name(var)] = value

    def held_elsewhere(self, name: str) -> set[int]:
        """Options of slot variable ``name`` whose record a decided slot already holds under a
        ``different`` rule: no plan can take them, so they need no solver query."""
        out: set[int] = set()
        for c in self.spec.constraints:
            if c.rule != "different":
                continue
            items = list(self.vars_of(c.slots))
            mine = next((options for _, _, v, options in items if var_name(v) == name), None)
            if mine is None:
                continue
            held = set()
            for _, _, var, options in items:
                value = self.fixed.get(var_name(var), NONE)
                if value != NONE and var_name(var) != name:
                    held.add((options[value][0], options[value][1].index))
            out.update(n for n, (table, r) in enumerate(mine) if (table, r.index) in held)
        return out

    def floor_without(self, name: str) -> int:
        """A lower bound (cents) on the cost of every plan left, leaving out slot ``name``.

        Decided slots count what they cost; each open slot its cheapest fitting option; and
        the open slots of a ``different`` rule the cheapest *distinct* records that fill them
        all (a minimum-weight basis of their transversal matroid, found greedily). Rules left
        out (coverage, one kind, ...) can only raise the true cost, so the bound is sound: a
        value whose price on top of it exceeds the budget dooms the plan, with no solver call.
        """
        total = 0
        grouped: set[str] = set()
        for c in self.spec.constraints:
            if c.rule != "different":
                continue
            slots = [
                (var_name(var), options)
                for _, _, var, options in self.vars_of(c.slots)
                if var_name(var) not in grouped
            ]
            grouped.update(n for n, _ in slots)
            total += self._distinct_floor(
                [(n, o) for n, o in slots if n != name and n not in self.fixed]
            )
        for slot_name in self.cost_vars:
            if slot_name == name:
                continue
            if slot_name in self.fixed:
                total += self.price(slot_name, self.fixed[slot_name])
            elif slot_name not in grouped:
                fits = self.fitting.get(slot_name, ((), 1))[0]
                total += min((self.price(slot_name, n) for n in fits), default=0)
        return total

    def _distinct_floor(self, slots: list[tuple[str, list[tuple[str, Record]]]]) -> int:
        """The least cost of filling every required slot with a different record."""
        wants: dict[str, set[tuple[str, int]]] = {}  # required slot -> records that fit it
        price: dict[tuple[str, int], int] = {}
        for name, options in slots:
            fits = self.fitting.get(name, ((), 1))[0]
            if NONE in fits or not fits:
                continue  # may stay empty: costs nothing
            wants[name] = set()
            for n in fits:
                key = (options[n][0], options[n][1].index)
                wants[name].add(key)
                price[key] = min(price.get(key, self.price(name, n)), self.price(name, n))
        holder: dict[str, tuple[str, int]] = {}  # slot -> record, a matching grown greedily
        users: dict[tuple[str, int], list[str]] = {}
        for name, keys in wants.items():
            for key in keys:
                users.setdefault(key, []).append(name)

        def place(key: tuple[str, int], seen: set[str]) -> bool:
            for name in users.get(key, ()):
                if name in seen:
                    continue
                seen.add(name)
                if name not in holder or place(holder[name], seen):
                    holder[name] = key
                    return True
            return False

        total = 0
        for key in sorted(price, key=lambda k: (price[k], k)):
            if len(holder) == len(wants):
                break
            if place(key, set()):
                total += price[key]
        return total

    def _total(self) -> Constraint | None:
        return self.spec.total()

    def unit_cost(self, option: tuple[str, Record], total: Constraint | None = None) -> int:
        """Return the cost of a record in cents (per night for stays); 0 when uncosted."""
        total = total or self._total()
        table, record = option
        if total is None or table not in total.cost:
            return 0
        env = {**self.request, **record.values}
        try:
            value = total.cost[table](env)
        except ExprError as exc:
            raise UsageError(
                f"cost of {table} '{record.written(self.spec.tables[table])}': {exc}"
            ) from None
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            raise UsageError(f"cost of {table}: '{total.cost[table].text}' is not a number")
        return round(value * CENTS)

    # -- constraints ---------------------------------------------------------------------------

    def _track(self, name: str, formulas: list[z3.BoolRef]) -> None:
        flag = z3.Bool(f"rule:{name}", self.ctx)
        self.tracked[name] = flag
        self.groups[name] = formulas
        self.solver.add(
            z3.Implies(flag, z3.And(*formulas) if formulas else z3.BoolVal(True, self.ctx))
        )

    def vars_of(
        self, names: tuple[str, ...]
    ) -> Iterator[tuple[Slot, int | None, z3.ArithRef, list[tuple[str, Record]]]]:
        return (item for item in self.slot_vars if item[0].name in names)

    def _constraints(self) -> None:
        for c in self.spec.constraints:
            made = _RULES[c.rule](self, c)
            if made is not None:
                name, formulas = made
                self._track(name, formulas)
        # Slots left without any record (the request's rules removed them all), for explain().
        self.empty = sorted({slot.name for slot, _, _, options in self.slot_vars if not options})

    def _c_total(self, c: Constraint) -> tuple[str, list[z3.BoolRef]] | None:
        bound = self.request.get(c.at_most)
        self.total_cost = z3.Sum(*self.costs) if self.costs else z3.IntVal(0, self.ctx)
        if bound is None:
            return None
        self.bound_cents = round(float(bound) * CENTS)
        rule = self.total_cost <= self.bound_cents
        self.formula_vars[rule.get_id()] = {var_name(cost) for cost in self.costs}
        return f"{c.at_most} {self.currency.show(bound)}", [rule]

    def _c_different(self, c: Constraint) -> tuple[str, list[z3.BoolRef]]:
        """No record twice: for each record, at most one slot variable names it.

        Said per record over "slot == option" atoms rather than as pairwise disequalities
        between slot variables: a disequality of integers makes the arithmetic solver split
        cases (x < y or x > y), and with a few dozen slots that made hard requests take
        seconds per look-ahead query."""
        holders: dict[tuple[str, int], list[tuple[z3.BoolRef, str]]] = {}
        for _, _, var, options in self.vars_of(c.slots):
            name = var_name(var)
            for n, (table, record) in enumerate(options):
                holders.setdefault((table, record.index), []).append((var == n, name))
        formulas = []
        for atoms in holders.values():
            if len(atoms) > 1:
                formulas.append(z3.AtMost(*[a for a, _ in atoms], 1))
                self.formula_vars[formulas[-1].get_id()] = {name for _, name in atoms}
        return f"different {'/'.join(c.slots)}", formulas

    def _c_min_nights(self, c: Constraint) -> tuple[str, list[z3.BoolRef]]:
        formulas = []
        for slot, j, var, options in self.vars_of(c.slots):
            if slot.per != "stay" or j is None:
                continue
            need = (
                self._lookup(var, [math.ceil(r[c.column] or 0) for _, r in options])
                if options
                else z3.IntVal(0, self.ctx)
            )
            formulas.append(self.nights[j] >= need)
        return f"{c.column} of {'/'.join(c.slots)}", formulas

    def _c_same_kind(self, c: Constraint) -> tuple[str, list[z3.BoolRef]]:
        items = list(self.vars_of(c.slots))
        groups = [{v.lower() for v in g} for g in c.groups]

        def group(var: z3.ArithRef, options: list[tuple[str, Record]]) -> z3.ArithRef:
            codes = []
            for _, r in options:
                value = str(r[c.column]).lower()
                codes.append(next((n for n, g in enumerate(groups) if value in g), len(groups)))
            return self._lookup(var, codes) if codes else z3.IntVal(-1, self.ctx)

        first = group(items[0][2], items[0][3]) if items else None
        formulas = [group(var, options) == first for _, _, var, options in items[1:]]
        return f"one kind of {'/'.join(c.slots)}", formulas

    def _c_in_town(self, c: Constraint) -> tuple[str, list[z3.BoolRef]] | None:
        """A day slot on a travel day only while the traveller is in its city: in the leg's
        destination if the leg arrives an hour before the slot's hours close, in the origin if
        it leaves an hour after they open. Legs without times (a drive) constrain nothing."""
        if not c.times:
            return None
        legs = [(j, var, options) for slot, j, var, options in self.vars_of(c.slots)]

        def clock(options: list[tuple[str, Record]], column: str) -> list[int]:
            return [m if (m := clock_minutes(r[column])) is not None else -1 for _, r in options]

        timed = []
        for j, var, options in legs:
            if not options or j is None:
                continue
            day: z3.ArithRef | int = 1 if j == 0 else self.days if j == self.k else self.starts[j]
            dep = self._lookup(var, clock(options, c.departs))
            arr = self._lookup(var, clock(options, c.arrives))
            timed.append((day, dep, arr, var_name(var)))
        formulas: list[z3.BoolRef] = []
        for slot, d, var, options in self.slot_vars:
            hours = c.times.get(slot.name)
            if hours is None or d is None or not options:
                continue
            where = z3.If(
                var == NONE, z3.IntVal(-2, self.ctx),
                self._lookup(var, [self._id(r[slot.city]) for _, r in options]),
            )  # fmt: skip
            for day, dep, arr, leg in timed:
                if isinstance(day, int) and day != d:
                    continue
                on = self.travel[d] if isinstance(day, int) else z3.And(day == d, self.travel[d])
                landed = z3.Or(arr < 0, arr <= hours[1] - 60)
                before = z3.Or(dep < 0, dep >= hours[0] + 60)
                formulas.append(z3.Implies(z3.And(on, where == self.day_to[d]), landed))
                formulas.append(z3.Implies(z3.And(on, where == self.day_from[d]), before))
                for f in formulas[-2:]:  # the slot and the leg take part (walking these
                    # long formulas for their constants costs seconds on a 7-day trip)
                    self.formula_vars[f.get_id()] = {var_name(var), leg}
        return "in town", formulas

    def _c_cover(self, c: Constraint) -> tuple[str, list[z3.BoolRef]] | None:
        wanted = self.request.get(c.request) or []
        if not wanted:
            return None
        formulas = []
        for value in wanted:
            hits = [
                (var == n, var_name(var))
                for _, _, var, options in self.vars_of(c.slots)
                for n, (_, r) in enumerate(options)
                if value.lower() in _lower_values(r[c.column])
            ]
            formulas.append(z3.Or(*[h for h, _ in hits]) if hits else z3.BoolVal(False, self.ctx))
            self.formula_vars[formulas[-1].get_id()] = {name for _, name in hits}
        return f"{c.request} {', '.join(wanted)}", formulas

    def _c_forbid(self, c: Constraint) -> tuple[str, list[z3.BoolRef]] | None:
        """Planning applies it to the slot's records (``_allowed``); explaining tracks it."""
        wanted = self.request.get(c.request)
        if not self.explaining or not wanted:
            return None
        formulas = [
            var != n
            for _, _, var, options in self.vars_of(c.slots)
            for n, (_, r) in enumerate(options)
            if self._fits(c, r) is False
        ]
        name = f"{c.request} {_shown_value(wanted)}"
        self.request_rules.append(name)
        return name, formulas

    # -- queries -----------------------------------------------------------------------------

    def check(self, *assumptions: z3.BoolRef) -> z3.CheckSatResult:
        return self.solver.check(*self.tracked.values(), *assumptions)

    def explain(self) -> tuple[str, str]:
        """Say why no plan exists (an unsat core in words) and the smallest change that helps.

        Planning applies the request's forbid/match rules by dropping records, so a core never
        names them; the same task built with ``explaining=True`` says which of them no plan
        can keep: those are named too ("diet vegan"), each as a change that helps.
        """
        result = self.check()
        if result == z3.unknown:
            return "the constraint solver gave up on this request (too large)", ""
        core = [str(f).removeprefix("rule:") for f in self.solver.unsat_core()]
        names = [n for n in self.tracked if n in core]
        asks = any(
            c.rule in ("forbid", "match") and self.request.get(c.request)
            for c in self.spec.constraints
        )
        extra = []
        if asks and not self.explaining:
            relaxed = TripModel(self.spec, self.tables, self.request, explaining=True)
            extra = relaxed.request_rules_to_drop()
        if not names and extra:
            return "no plan meets every rule: " + "; ".join(extra), " or ".join(
                f"drop '{n}'" for n in extra
            )
        legs = [s for s in self.empty if self.spec.slots[s].per == "leg"]
        if not names and legs:  # e.g. no flight and no usable road out of the start city
            tables = sorted({t for s in legs for t in self.spec.slots[s].tables})
            return (
                f"no plan exists: the data has no usable {' or '.join(tables)} record for the"
                f" {', '.join(legs)} of a trip from {self.request.get(self.spec.trip.home)}",
                "try other dates, another start city, or data that covers this route",
            )
        if not names:
            what = ", ".join(self.empty) or "the route"
            return (
                f"no plan exists: no record of the data fits {what} under the request",
                "check the data file and the request's requirements",
            )
        message = "no plan meets every rule: " + "; ".join(names)
        hints = []
        total = self._total()
        budget_rule = next(
            (n for n in names if total is not None and n.startswith(total.at_most)), None
        )
        budget_message = False
        if budget_rule is not None and total is not None:
            cheapest = self.cheapest(without=budget_rule)
            if cheapest is not None:
                budget_message = True
                show = self.currency.show
                message = (
                    f"{total.at_most} {show(self.bound_cents / CENTS)} < cheapest "
                    f"complete plan {show(cheapest / CENTS)}"
                )
                hints.append(f"raise the {total.at_most} to {show(math.ceil(cheapest / CENTS))}")
        hints += [f"drop '{n}'" for n in self._droppable(n for n in names if n != budget_rule)]
        if extra and not budget_message:
            message += "; " + "; ".join(extra)
        hints += [f"drop '{n}'" for n in extra]
        return message, " or ".join(hints)

    def request_rules_to_drop(self) -> list[str]:
        """The request's forbid/match rules whose removal alone leaves a plan (a model built
        with ``explaining=True``; each query is bounded, and an undecided one names nothing)."""
        return self._droppable(self.request_rules)

    def _droppable(self, names: Iterable[str]) -> list[str]:
        """The tracked rules among ``names`` whose removal alone leaves a plan (each query
        bounded by EXPLAIN_RLIMIT; an undecided one names nothing)."""
        out = []
        self.solver.set("rlimit", EXPLAIN_RLIMIT)
        try:
            for name in names:
                others = [f for n, f in self.tracked.items() if n != name]
                if self.solver.check(*others) == z3.sat:
                    out.append(name)
        finally:
            self.solver.set("rlimit", SOLVER_RLIMIT)
        return out

    def cheapest(self, without: str | None = None) -> int | None:
        """Return the lowest total cost (cents) of a plan meeting the other rules."""
        found = self._optimum(without)
        return None if found is None else int(str(found[0].lower(found[1])))

    def cheapest_plan(self) -> z3.ModelRef | None:
        """A plan of the lowest total cost under every rule (None if none is found within
        the work bound)."""
        found = self._optimum(None)
        return None if found is None else found[0].model()

    def _optimum(self, without: str | None) -> tuple[z3.Optimize, Any] | None:
        opt = z3.Optimize(ctx=self.ctx)
        opt.set("rlimit", CHEAPEST_RLIMIT)
        for a in self.solver.assertions():
            opt.add(a)
        for name, flag in self.tracked.items():
            opt.add(flag if name != without else z3.Not(flag))
        handle = opt.minimize(self.total_cost)
        if opt.check() != z3.sat:
            return None
        return opt, handle


# A constraint's rule -> the method that turns it into Z3 formulas (and the name an unsat core
# gives it), or None when the request leaves the rule nothing to say.
_RULES: dict[str, Callable[[TripModel, Constraint], tuple[str, list[z3.BoolRef]] | None]] = {
    "total": TripModel._c_total,
    "different": TripModel._c_different,
    "min_nights": TripModel._c_min_nights,
    "same_kind": TripModel._c_same_kind,
    "cover": TripModel._c_cover,
    "forbid": TripModel._c_forbid,
    "match": TripModel._c_forbid,  # the same: the record's field must fit the request
    "in_town": TripModel._c_in_town,
}


def _shown_value(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def _lower_values(value: Any) -> set[str]:
    if isinstance(value, (list, tuple)):
        return {str(v).lower() for v in value}
    return {str(value).lower()}


def _constants(formula: z3.ExprRef) -> set[str]:
    """The names of the uninterpreted constants (the variables) a formula mentions."""
    names: set[str] = set()
    seen: set[int] = set()
    stack = [formula]
    while stack:
        e = stack.pop()
        if e.get_id() in seen:
            continue
        seen.add(e.get_id())
        if z3.is_const(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            names.add(var_name(e))
        else:
            stack.extend(e.children())
    return names
