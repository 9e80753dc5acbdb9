"""TravelPlanner's 8 commonsense and 5 hard constraints, the cost of a plan, and the metrics.

Every check has the same shape, ``check_x(plan, ref, trip, *, partial=False) -> CheckResult``:
a parsed :class:`~fllm_cli.travel.plan.Plan`, the query's
:class:`~fllm_cli.travel.reference.ReferenceInfo` and its :class:`TripConstraints`. A violation
names the day and field it concerns. With ``partial=True`` a check judges a plan that is still
being built (its days are a prefix of the trip): requirements about the end of the trip (the
number of days, the return home, the last stay's length, the cuisines still to be served) are
not enforced, every other requirement is.

``docs/travelplanner.md`` records how the constraints of the benchmark were read.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fllm_cli.diagnostics import article, did_you_mean
from fllm_cli.errors import UsageError
from fllm_cli.travel.plan import Day, Entity, Leg, Plan
from fllm_cli.travel.reference import (
    Accommodation,
    ReferenceInfo,
    Restaurant,
    city_key,
    iter_jsonl,
    name_key,
)

HOUSE_RULES = ("parties", "smoking", "children under 10", "visitors", "pets")
ROOM_TYPE_RULES = {
    "entire room": "Entire home/apt",
    "private room": "Private room",
    "shared room": "Shared room",
    "not shared room": "Shared room",  # forbidden rather than required
}
TRANSPORT_RULES = {"no flight": "flight", "no self-driving": "self-driving"}
LEVELS = ("easy", "medium", "hard")
PEOPLE_PER_CAR = 5
PEOPLE_PER_TAXI = 4

COMMONSENSE = (
    "within_sandbox",
    "within_current_city",
    "reasonable_city_route",
    "diverse_restaurants",
    "diverse_attractions",
    "non_conflicting_transportation",
    "minimum_nights",
    "complete_information",
)
HARD = ("budget", "room_rule", "cuisine", "room_type", "transportation")
# Failing one of these makes every hard constraint of the plan count as failed.
HARD_PREREQUISITES = ("within_sandbox", "complete_information")


# ------------------------------------------------------------------------------------ the query


@dataclass(frozen=True)
class TripConstraints:
    """The structured fields of a query that the checks read."""

    org: str
    dest: str  # a city (3-day trips) or a state (5/7-day trips)
    days: int
    visiting_city_number: int
    people_number: int
    budget: int | float
    house_rule: str | None = None
    cuisines: tuple[str, ...] | None = None
    room_type: str | None = None
    transportation: str | None = None
    dates: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        problems = []
        if not self.org.strip() or not self.dest.strip():
            problems.append("'org' and 'dest' must be named")
        counts = {
            "days": self.days,
            "visiting_city_number": self.visiting_city_number,
            "people_number": self.people_number,
        }
        for name, value in counts.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                problems.append(f"'{name}' must be a whole number >= 1, got {value!r}")
        if isinstance(self.budget, bool) or not isinstance(self.budget, (int, float)):
            problems.append(f"'budget' must be a number, got {self.budget!r}")
        elif not 0 <= self.budget < math.inf:
            problems.append(f"'budget' must be a number >= 0, got {self.budget!r}")
        if self.house_rule is not None and self.house_rule not in HOUSE_RULES:
            problems.append(f"unknown house rule '{self.house_rule}'")
        if self.room_type is not None and self.room_type not in ROOM_TYPE_RULES:
            problems.append(f"unknown room type '{self.room_type}'")
        if self.transportation is not None and self.transportation not in TRANSPORT_RULES:
            problems.append(f"unknown transportation rule '{self.transportation}'")
        if self.dates and len(self.dates) != self.days:
            problems.append(f"{len(self.dates)} dates for a {self.days}-day trip")
        if problems:
            raise UsageError(f"trip constraints: {problems[0]}")

    def local_constraints(self) -> tuple[str, ...]:
        """The hard constraints that apply besides the budget."""
        given = {
            "room_rule": self.house_rule,
            "cuisine": self.cuisines,
            "room_type": self.room_type,
            "transportation": self.transportation,
        }
        return tuple(name for name, value in given.items() if value)

    def applicable_hard(self) -> tuple[str, ...]:
        return ("budget", *self.local_constraints())


@dataclass(frozen=True)
class TravelQuery:
    """One line of ``queries.jsonl``: the text a planner reads and the fields a scorer reads."""

    idx: int
    query: str
    level: str | None
    trip: TripConstraints


def query_from_json(data: Any, where: str = "query") -> TravelQuery:
    """Validate one query object (structured fields as in the benchmark's ``queries.jsonl``)."""
    if not isinstance(data, dict):
        raise UsageError(f"{where}: expected a JSON object")
    if "idx" in data:
        where = f"{where} (idx {data['idx']})"

    def need(key: str) -> Any:
        if key not in data:
            raise UsageError(f"{where}: missing field '{key}'")
        return data[key]

    def text(key: str) -> str:
        value = need(key)
        if not isinstance(value, str) or not value.strip():
            raise UsageError(f"{where}: '{key}' must be non-empty text")
        return value

    local = data.get("local_constraint") or {}
    if not isinstance(local, dict):
        raise UsageError(f"{where}: 'local_constraint' must be an object")
    cuisines = local.get("cuisine")
    if cuisines is not None and (
        not isinstance(cuisines, list) or not all(isinstance(c, str) for c in cuisines)
    ):
        raise UsageError(f"{where}: 'cuisine' must be a list of text or null")
    for key in ("house rule", "room type", "transportation"):
        if local.get(key) is not None and not isinstance(local[key], str):
            raise UsageError(f"{where}: '{key}' must be text or null")
    dates = data.get("date") or []
    if not isinstance(dates, list) or not all(isinstance(d, str) for d in dates):
        raise UsageError(f"{where}: 'date' must be a list of dates")
    idx = data.get("idx", 0)
    if isinstance(idx, bool) or not isinstance(idx, int):
        raise UsageError(f"{where}: 'idx' must be a whole number")
    level = data.get("level")
    if level is not None and level not in LEVELS:
        raise UsageError(f"{where}: unknown level '{level}'")
    try:
        trip = TripConstraints(
            org=text("org"),
            dest=text("dest"),
            days=need("days"),
            visiting_city_number=need("visiting_city_number"),
            people_number=need("people_number"),
            budget=need("budget"),
            house_rule=local.get("house rule"),
            cuisines=tuple(cuisines) if cuisines else None,
            room_type=local.get("room type"),
            transportation=local.get("transportation"),
            dates=tuple(dates),
        )
    except UsageError as exc:
        raise UsageError(f"{where}: {exc.message}") from None
    query = data.get("query", "")
    return TravelQuery(
        idx=idx, query=query if isinstance(query, str) else "", level=level, trip=trip
    )


def load_queries(path: str | Path) -> list[TravelQuery]:
    """Read ``queries.jsonl``."""
    queries = [query_from_json(data, where) for where, data in iter_jsonl(path, "query file")]
    seen: set[int] = set()
    for q in queries:
        if q.idx in seen:
            raise UsageError(f"{Path(path).name}: idx {q.idx} appears twice")
        seen.add(q.idx)
    return queries


# ------------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    violations: tuple[str, ...] = ()
    applies: bool = True

    @classmethod
    def of(cls, name: str, violations: Iterable[str], applies: bool = True) -> CheckResult:
        found = tuple(dict.fromkeys(violations))  # keep order, drop repeats
        return cls(name=name, passed=not found, violations=found, applies=applies)


@dataclass(frozen=True)
class CostItem:
    day: int
    field: str  # transportation, breakfast, lunch, dinner or accommodation
    item: str
    unit_cost: int | float
    multiplier: int
    unit: str  # what the multiplier counts: people, cars, taxis, rooms

    @property
    def cost(self) -> int | float:
        return self.unit_cost * self.multiplier


@dataclass(frozen=True)
class CostBreakdown:
    items: tuple[CostItem, ...]
    unpriced: tuple[str, ...]  # items not found in the reference information (cost unknown)

    @property
    def total(self) -> int | float:
        return sum(item.cost for item in self.items)

    def by_field(self) -> dict[str, int | float]:
        totals: dict[str, int | float] = {}
        for item in self.items:
            totals[item.field] = totals.get(item.field, 0) + item.cost
        return totals


@dataclass(frozen=True)
class PlanEvaluation:
    trip: TripConstraints
    delivered: bool
    commonsense: Mapping[str, CheckResult] = field(default_factory=dict)
    hard: Mapping[str, CheckResult] = field(default_factory=dict)  # applicable ones only
    cost: CostBreakdown | None = None
    idx: int | None = None
    level: str | None = None

    @property
    def hard_blocked(self) -> bool:
        """True when a failed prerequisite makes every hard constraint count as failed."""
        return any(not self.commonsense[name].passed for name in HARD_PREREQUISITES)

    def hard_passed(self, name: str) -> bool:
        return self.delivered and not self.hard_blocked and self.hard[name].passed

    @property
    def commonsense_pass(self) -> bool:
        return self.delivered and all(r.passed for r in self.commonsense.values())

    @property
    def hard_pass(self) -> bool:
        return self.delivered and all(self.hard_passed(name) for name in self.hard)

    @property
    def final_pass(self) -> bool:
        return self.commonsense_pass and self.hard_pass

    def failed(self) -> list[str]:
        """Names of the failed checks (hard ones counted as failed when blocked)."""
        if not self.delivered:
            return ["delivery"]
        out = [name for name, r in self.commonsense.items() if not r.passed]
        return out + [name for name in self.hard if not self.hard_passed(name)]

    def violations(self) -> list[str]:
        return [
            f"{r.name}: {v}"
            for r in (*self.commonsense.values(), *self.hard.values())
            for v in r.violations
        ]


# ------------------------------------------------------------------------------------- helpers


def _key(entity: Entity) -> tuple[str, str]:
    return (name_key(entity.name), city_key(entity.city))


def _q(entity: Entity) -> str:
    return f"'{entity.name}, {entity.city}'"


def _money(value: float) -> str:
    return f"${value:,.0f}" if float(value).is_integer() else f"${value:,.2f}"


def _days(first: int, last: int) -> str:
    return f"day {first}" if first == last else f"days {first}-{last}"


def leg_mode(day: Day) -> str | None:
    """The transport mode of a day: from the parsed leg, else from keywords in the text."""
    if day.transportation is not None:
        return day.transportation.mode
    if not day.has_value("transportation"):
        return None
    text = str(day.raw.get("transportation", "")).lower()
    for keyword, mode in (("self-driving", "self-driving"), ("taxi", "taxi"), ("flight", "flight")):
        if keyword in text:
            return mode
    return "unknown"


def _entities(day: Day) -> Iterable[tuple[str, Entity]]:
    yield from day.meals()
    for attraction in day.attractions:
        yield "attraction", attraction
    if day.accommodation is not None:
        yield "accommodation", day.accommodation


def _accommodation_runs(plan: Plan) -> list[tuple[int, int, Entity]]:
    """Consecutive days at the same accommodation: (first day, last day, entity)."""
    runs: list[tuple[int, int, Entity]] = []
    for day in plan.days:
        stay = day.accommodation
        if stay is None:
            continue
        if runs and runs[-1][1] == day.number - 1 and _key(runs[-1][2]) == _key(stay):
            runs[-1] = (runs[-1][0], day.number, runs[-1][2])
        else:
            runs.append((day.number, day.number, stay))
    return runs


def _distinct_stays(plan: Plan, ref: ReferenceInfo) -> list[tuple[int, Entity, Accommodation]]:
    """Each accommodation found in the reference, once, with the first day it is used."""
    seen: set[tuple[str, str]] = set()
    out = []
    for day in plan.days:
        stay = day.accommodation
        if stay is None or _key(stay) in seen:
            continue
        seen.add(_key(stay))
        record = ref.accommodation(stay.name, stay.city)
        if record is not None:
            out.append((day.number, stay, record))
    return out


def _restaurants_used(plan: Plan, ref: ReferenceInfo) -> list[tuple[Day, str, Restaurant]]:
    return [
        (day, meal, record)
        for day in plan.days
        for meal, entity in day.meals()
        if (record := ref.restaurant(entity.name, entity.city)) is not None
    ]


# -------------------------------------------------------------------------- commonsense checks


def check_within_sandbox(
    plan: Plan, ref: ReferenceInfo, trip: TripConstraints, *, partial: bool = False
) -> CheckResult:
    """1. Every flight, restaurant, attraction, accommodation and ground leg is in the reference."""
    found: list[str] = []
    lookups: dict[str, Callable[[str, str], object | None]] = {
        "breakfast": ref.restaurant,
        "lunch": ref.restaurant,
        "dinner": ref.restaurant,
        "attraction": ref.attraction,
        "accommodation": ref.accommodation,
    }
    categories = {"attraction": "attraction", "accommodation": "accommodation"}
    for day in plan.days:
        for problem in day.problems:
            if problem.field in ("transportation", *lookups) and problem.message != "missing":
                found.append(f"{problem.describe(day.number)} (cannot be looked up)")
        leg = day.transportation
        if leg is not None:
            found += _leg_in_sandbox(day.number, leg, ref)
        for field_name, entity in _entities(day):
            if lookups[field_name](entity.name, entity.city) is None:
                category = categories.get(field_name, "restaurant")
                hint = did_you_mean(entity.name, ref.names_in(category, entity.city))
                found.append(
                    f"day {day.number} {field_name}: {_q(entity)} is not {article(category)} "
                    f"{category}"
                    f" of the reference information{hint}"
                )
    return CheckResult.of("within_sandbox", found)


def _leg_in_sandbox(day: int, leg: Leg, ref: ReferenceInfo) -> list[str]:
    where = f"day {day} transportation"
    if leg.mode == "flight":
        number = leg.flight_number or ""
        if ref.flight(number, leg.origin, leg.dest) is not None:
            return []
        other = ref.flight_by_number(number)
        if other is not None:
            return [
                f"{where}: flight {number} flies from {other.origin} to {other.dest},"
                f" not from {leg.origin} to {leg.dest}"
            ]
        return [f"{where}: flight {number} from {leg.origin} to {leg.dest} is not in the reference"]
    if ref.ground_route(leg.mode, leg.origin, leg.dest) is None:
        return [f"{where}: no {leg.mode} route from {leg.origin} to {leg.dest} is available"]
    return []


def check_within_current_city(
    plan: Plan, ref: ReferenceInfo, trip: TripConstraints, *, partial: bool = False
) -> CheckResult:
    """2. Transport, meals, attractions and accommodation fit the day's current city."""
    found: list[str] = []
    for day in plan.days:
        if not day.cities:
            continue  # unreadable or missing current_city: complete_information reports it
        leg = day.transportation
        where = f"day {day.number}"
        if leg is not None:
            if not day.is_travel:
                found.append(
                    f"{where} transportation: a day in {day.city} has a leg from {leg.origin}"
                    f" to {leg.dest}; a travel day's current_city reads 'from A to B'"
                )
            elif (city_key(leg.origin), city_key(leg.dest)) != (
                city_key(day.origin or ""),
                city_key(day.dest or ""),
            ):
                found.append(
                    f"{where} transportation: goes from {leg.origin} to {leg.dest}, but the day"
                    f" travels from {day.origin} to {day.dest}"
                )
        allowed = {city_key(c) for c in day.cities}
        shown = " or ".join(day.cities)
        for field_name, entity in _entities(day):
            if field_name == "accommodation":
                sleep = day.sleeping_city or ""
                if city_key(entity.city) != city_key(sleep):
                    found.append(f"{where} accommodation: {_q(entity)} is not in {sleep}")
            elif city_key(entity.city) not in allowed:
                found.append(f"{where} {field_name}: {_q(entity)} is not in {shown}")
    return CheckResult.of("within_current_city", found)


def check_reasonable_city_route(
    plan: Plan,
    ref: ReferenceInfo,
    trip: TripConstraints,
    *,
    partial: bool = False,
    city_states: Mapping[str, str] | None = None,
) -> CheckResult:
    """3. Leave from org on day 1, come back on the last day, visit the right cities once each.

    ``city_states`` maps a city to its state (the benchmark's city list); without it, a 5/7-day
    trip may visit only the cities listed in the reference information.
    """
    found: list[str] = []
    days = plan.days
    if not days:
        return CheckResult.of("reasonable_city_route", [] if partial else ["the plan has no days"])
    unreadable = [d.number for d in days if not d.cities]
    if unreadable:
        return CheckResult.of(
            "reasonable_city_route",
            [f"day {n} current_city: cannot tell where the day is" for n in unreadable],
        )
    org = city_key(trip.org)
    first = days[0]
    if not first.is_travel:
        found.append(f"day 1 current_city: the trip must start by leaving {trip.org}")
    elif city_key(first.origin or "") != org:
        found.append(f"day 1 current_city: the trip leaves from {first.origin}, not {trip.org}")
    last = days[-1]
    if not partial and (not last.is_travel or city_key(last.dest or "") != org):
        found.append(f"day {last.number} current_city: the last day must return to {trip.org}")

    # The sequence of cities, with continuity between days.
    sequence: list[tuple[str, int]] = []  # (city key, day)
    shown: dict[str, str] = {}
    previous: str | None = None
    for day in days:
        cities = [city_key(c) for c in day.cities]
        shown.update({city_key(c): c for c in day.cities})
        if previous is not None and cities[0] != previous:
            found.append(
                f"day {day.number} current_city: starts in {shown[cities[0]]}, but day"
                f" {day.number - 1} ended in {shown[previous]}"
            )
        sequence += [(c, day.number) for c in cities]
        previous = cities[-1]
    blocks: list[tuple[str, int]] = []
    for city, number in sequence:
        if not blocks or blocks[-1][0] != city:
            blocks.append((city, number))
    interior = blocks[1:-1] if city_key(blocks[-1][0]) == org and len(blocks) > 1 else blocks[1:]
    seen: dict[str, int] = {}
    for city, number in interior:
        if city == org:
            found.append(f"day {number} current_city: returns to {trip.org} before the last day")
        elif city in seen:
            found.append(
                f"day {number} current_city: comes back to {shown[city]}, already left after"
                f" day {seen[city]}"
            )
        else:
            seen[city] = number
    visited = [c for c in dict.fromkeys(c for c, _ in interior) if c != org]
    wanted = trip.visiting_city_number
    if len(visited) > wanted or (not partial and len(visited) != wanted):
        names = ", ".join(shown[c] for c in visited) or "none"
        found.append(f"route: visits {len(visited)} cities ({names}), the query asks for {wanted}")
    for city in visited:
        problem = _outside_destination(city, trip, ref, city_states)
        if problem:
            found.append(f"day {_first_day(sequence, city)} current_city: {shown[city]} {problem}")
    return CheckResult.of("reasonable_city_route", found)


def _first_day(sequence: list[tuple[str, int]], city: str) -> int:
    return next(number for c, number in sequence if c == city)


def _outside_destination(
    city: str, trip: TripConstraints, ref: ReferenceInfo, city_states: Mapping[str, str] | None
) -> str | None:
    if trip.days <= 3:
        return None if city == city_key(trip.dest) else f"is not the destination {trip.dest}"
    if city_states is not None:
        state = city_states.get(city)
        if state is None:
            return "is not a city of the benchmark"
        return None if state == trip.dest else f"is in {state}, not in {trip.dest}"
    if city not in {city_key(c) for c in ref.cities}:
        return f"is not one of the reference information's cities in {trip.dest}"
    return None


def check_diverse_restaurants(
    plan: Plan, ref: ReferenceInfo, trip: TripConstraints, *, partial: bool = False
) -> CheckResult:
    """4. No restaurant appears twice in the plan (any meal, any day)."""
    first_use: dict[tuple[str, str], str] = {}
    found = []
    for day in plan.days:
        for meal, entity in day.meals():
            here = f"day {day.number} {meal}"
            if _key(entity) in first_use:
                found.append(f"{here}: {_q(entity)} was already used on {first_use[_key(entity)]}")
            else:
                first_use[_key(entity)] = here
    return CheckResult.of("diverse_restaurants", found)


def check_diverse_attractions(
    plan: Plan, ref: ReferenceInfo, trip: TripConstraints, *, partial: bool = False
) -> CheckResult:
    """5. No attraction appears twice in the plan."""
    first_use: dict[tuple[str, str], int] = {}
    found = []
    for day in plan.days:
        for entity in day.attractions:
            if _key(entity) in first_use:
                found.append(
                    f"day {day.number} attraction: {_q(entity)} was already visited on day"
                    f" {first_use[_key(entity)]}"
                )
            else:
                first_use[_key(entity)] = day.number
    return CheckResult.of("diverse_attractions", found)


def check_non_conflicting_transportation(
    plan: Plan, ref: ReferenceInfo, trip: TripConstraints, *, partial: bool = False
) -> CheckResult:
    """6. Day 1 has transport; self-driving is used for every leg or for none."""
    found = []
    if plan.days and not plan.days[0].has_value("transportation"):
        found.append("day 1 transportation: the first day must have transport")
    modes = [(day.number, mode) for day in plan.days if (mode := leg_mode(day))]
    driving = [n for n, mode in modes if mode == "self-driving"]
    others = [(n, mode) for n, mode in modes if mode in ("flight", "taxi")]
    if driving and others:
        first_other = others[0]
        for n in driving:
            found.append(
                f"day {n} transportation: self-driving cannot be mixed with the"
                f" {first_other[1]} of day {first_other[0]}"
            )
    return CheckResult.of("non_conflicting_transportation", found)


def check_minimum_nights(
    plan: Plan, ref: ReferenceInfo, trip: TripConstraints, *, partial: bool = False
) -> CheckResult:
    """7. Each consecutive stay at one accommodation lasts at least its minimum nights."""
    found = []
    last_day = plan.days[-1].number if plan.days else 0
    for first, last, entity in _accommodation_runs(plan):
        if partial and last == last_day:
            continue  # the stay may still go on
        record = ref.accommodation(entity.name, entity.city)
        nights = last - first + 1
        if record is not None and nights < record.minimum_nights:
            found.append(
                f"{_days(first, last)} accommodation: {_q(entity)} is booked for {nights}"
                f" night{'s' if nights > 1 else ''}, its minimum is {record.minimum_nights}"
            )
    return CheckResult.of("minimum_nights", found)


def check_complete_information(
    plan: Plan, ref: ReferenceInfo, trip: TripConstraints, *, partial: bool = False
) -> CheckResult:
    """8. Every field present; travel days have transport; stay days have 3 meals and sights."""
    found = []
    count = len(plan.days)
    if count > trip.days or (not partial and count != trip.days):
        found.append(f"plan: has {count} days, the trip lasts {trip.days}")
    for day in plan.days:
        where = f"day {day.number}"
        for problem in day.problems:
            if problem.message == "missing" or problem.field in ("days", "current_city"):
                found.append(problem.describe(day.number))
        if not day.cities:
            continue
        if day.is_travel and not day.has_value("transportation"):
            found.append(f"{where} transportation: a travel day needs transport")
        if not day.is_travel:
            for meal in ("breakfast", "lunch", "dinner"):
                if not day.has_value(meal):
                    found.append(f"{where} {meal}: a day in {day.city} needs {meal}")
            if not day.has_value("attraction"):
                found.append(f"{where} attraction: a day in {day.city} needs an attraction")
        if day.number < trip.days and not day.has_value("accommodation"):
            found.append(f"{where} accommodation: every night but the last needs a place to stay")
        if day.number == trip.days and day.has_value("accommodation"):
            found.append(f"{where} accommodation: the last day goes home and needs none")
    return CheckResult.of("complete_information", found)


# -------------------------------------------------------------------------------- hard checks


def _cars(trip: TripConstraints) -> int:
    return math.ceil(trip.people_number / PEOPLE_PER_CAR)


def _taxis(trip: TripConstraints) -> int:
    return math.ceil(trip.people_number / PEOPLE_PER_TAXI)


def cost_breakdown(plan: Plan, ref: ReferenceInfo, trip: TripConstraints) -> CostBreakdown:
    """Price every item from the reference information; the plan's own texts are ignored."""
    items: list[CostItem] = []
    unpriced: list[str] = []
    people = trip.people_number
    for day in plan.days:
        leg = day.transportation
        if leg is not None:
            where = f"day {day.number} transportation"
            if leg.mode == "flight":
                flight = ref.flight(leg.flight_number or "", leg.origin, leg.dest)
                if flight is None:
                    unpriced.append(f"{where}: flight {leg.flight_number}")
                else:
                    label = f"flight {flight.number} {flight.origin}-{flight.dest}"
                    items.append(
                        CostItem(
                            day.number, "transportation", label, flight.price, people, "people"
                        )
                    )
            else:
                route = ref.ground_route(leg.mode, leg.origin, leg.dest)
                if route is None or route.cost is None:
                    unpriced.append(f"{where}: {leg.mode} from {leg.origin} to {leg.dest}")
                else:
                    driving = leg.mode == "self-driving"
                    items.append(
                        CostItem(
                            day.number,
                            "transportation",
                            f"{leg.mode} {route.origin}-{route.dest}",
                            route.cost,
                            _cars(trip) if driving else _taxis(trip),
                            "cars" if driving else "taxis",
                        )
                    )
        for meal, entity in day.meals():
            restaurant = ref.restaurant(entity.name, entity.city)
            if restaurant is None:
                unpriced.append(f"day {day.number} {meal}: {_q(entity)}")
            else:
                items.append(
                    CostItem(
                        day.number, meal, str(entity), restaurant.average_cost, people, "people"
                    )
                )
        stay = day.accommodation
        if stay is not None:
            record = ref.accommodation(stay.name, stay.city)
            if record is None:
                unpriced.append(f"day {day.number} accommodation: {_q(stay)}")
            else:
                rooms = math.ceil(people / record.maximum_occupancy)
                items.append(
                    CostItem(day.number, "accommodation", str(stay), record.price, rooms, "rooms")
                )
    return CostBreakdown(items=tuple(items), unpriced=tuple(unpriced))


def check_budget(
    plan: Plan, ref: ReferenceInfo, trip: TripConstraints, *, partial: bool = False
) -> CheckResult:
    """Hard: the total cost is within the budget (items not in the reference cost nothing)."""
    total = cost_breakdown(plan, ref, trip).total
    if total <= trip.budget:
        return CheckResult.of("budget", [])
    return CheckResult.of(
        "budget",
        [
            f"plan: costs {_money(total)}, over the budget of {_money(trip.budget)} by"
            f" {_money(total - trip.budget)}"
        ],
    )


def check_room_rule(
    plan: Plan, ref: ReferenceInfo, trip: TripConstraints, *, partial: bool = False
) -> CheckResult:
    """Hard: no accommodation forbids what the query's house rule asks for."""
    rule = trip.house_rule
    if not rule:
        return CheckResult("room_rule", True, applies=False)
    forbidden = f"No {rule}"
    found = [
        f"day {n} accommodation: {_q(entity)} says '{forbidden}', the query needs {rule}"
        for n, entity, record in _distinct_stays(plan, ref)
        if forbidden.lower() in (r.lower() for r in record.house_rules)
    ]
    return CheckResult.of("room_rule", found)


def check_cuisine(
    plan: Plan, ref: ReferenceInfo, trip: TripConstraints, *, partial: bool = False
) -> CheckResult:
    """Hard: the restaurants outside ``org`` together serve every requested cuisine."""
    wanted = trip.cuisines
    if not wanted:
        return CheckResult("cuisine", True, applies=False)
    served: set[str] = set()
    for day, meal, record in _restaurants_used(plan, ref):
        entity = day.meal(meal)
        if entity is not None and city_key(entity.city) != city_key(trip.org):
            served.update(c.lower() for c in record.cuisines)
    missing = [c for c in wanted if c.lower() not in served]
    if partial or not missing:
        return CheckResult.of("cuisine", [])
    return CheckResult.of(
        "cuisine", [f"meals: no restaurant outside {trip.org} serves {c}" for c in missing]
    )


def check_room_type(
    plan: Plan, ref: ReferenceInfo, trip: TripConstraints, *, partial: bool = False
) -> CheckResult:
    """Hard: every accommodation has the requested room type (or, for 'not shared room', not)."""
    rule = trip.room_type
    if not rule:
        return CheckResult("room_type", True, applies=False)
    target = ROOM_TYPE_RULES[rule]
    found = []
    for n, entity, record in _distinct_stays(plan, ref):
        bad = (
            record.room_type == target if rule == "not shared room" else record.room_type != target
        )
        if bad:
            found.append(
                f"day {n} accommodation: {_q(entity)} is a '{record.room_type}',"
                f" the query asks for {rule}"
            )
    return CheckResult.of("room_type", found)


def check_transportation(
    plan: Plan, ref: ReferenceInfo, trip: TripConstraints, *, partial: bool = False
) -> CheckResult:
    """Hard: 'no flight' / 'no self-driving' holds on every day."""
    rule = trip.transportation
    if not rule:
        return CheckResult("transportation", True, applies=False)
    banned = TRANSPORT_RULES[rule]
    found = [
        f"day {day.number} transportation: uses {banned}, the query says {rule}"
        for day in plan.days
        if leg_mode(day) == banned
    ]
    return CheckResult.of("transportation", found)


Check = Callable[..., CheckResult]
COMMONSENSE_CHECKS: dict[str, Check] = {
    "within_sandbox": check_within_sandbox,
    "within_current_city": check_within_current_city,
    "reasonable_city_route": check_reasonable_city_route,
    "diverse_restaurants": check_diverse_restaurants,
    "diverse_attractions": check_diverse_attractions,
    "non_conflicting_transportation": check_non_conflicting_transportation,
    "minimum_nights": check_minimum_nights,
    "complete_information": check_complete_information,
}
HARD_CHECKS: dict[str, Check] = {
    "budget": check_budget,
    "room_rule": check_room_rule,
    "cuisine": check_cuisine,
    "room_type": check_room_type,
    "transportation": check_transportation,
}


def evaluate_plan(
    plan: Plan | None,
    ref: ReferenceInfo,
    trip: TripConstraints,
    *,
    city_states: Mapping[str, str] | None = None,
    partial: bool = False,
    idx: int | None = None,
    level: str | None = None,
) -> PlanEvaluation:
    """Run every check on one plan; ``None`` (or an empty plan) means no plan was delivered."""
    if plan is None or not plan.days:
        return PlanEvaluation(trip=trip, delivered=False, idx=idx, level=level)
    commonsense = {}
    for name, check in COMMONSENSE_CHECKS.items():
        if name == "reasonable_city_route":
            commonsense[name] = check(plan, ref, trip, partial=partial, city_states=city_states)
        else:
            commonsense[name] = check(plan, ref, trip, partial=partial)
    applicable = trip.applicable_hard()
    hard = {
        name: check(plan, ref, trip, partial=partial)
        for name, check in HARD_CHECKS.items()
        if name in applicable
    }
    return PlanEvaluation(
        trip=trip,
        delivered=True,
        commonsense=commonsense,
        hard=hard,
        cost=cost_breakdown(plan, ref, trip),
        idx=idx,
        level=level,
    )


def evaluate_queries(
    queries: Sequence[TravelQuery],
    plans: Mapping[int, Plan | None],
    references: Mapping[int, ReferenceInfo],
    *,
    city_states: Mapping[str, str] | None = None,
) -> list[PlanEvaluation]:
    """Evaluate the plan of every query (a query without a plan counts as not delivered)."""
    out = []
    for query in queries:
        if query.idx not in references:
            raise UsageError(f"query idx {query.idx} has no reference information")
        out.append(
            evaluate_plan(
                plans.get(query.idx),
                references[query.idx],
                query.trip,
                city_states=city_states,
                idx=query.idx,
                level=query.level,
            )
        )
    return out


# ------------------------------------------------------------------------------------- metrics


@dataclass(frozen=True)
class Metrics:
    """Counts over a set of plans; the rates are fractions in [0, 1] (0 for an empty set)."""

    plans: int = 0
    delivered: int = 0
    commonsense_checks_passed: int = 0
    commonsense_checks: int = 0
    commonsense_plans_passed: int = 0
    hard_checks_passed: int = 0
    hard_checks: int = 0
    hard_plans_passed: int = 0
    final_plans_passed: int = 0

    @staticmethod
    def _rate(part: int, whole: int) -> float:
        return part / whole if whole else 0.0

    @property
    def delivery_rate(self) -> float:
        return self._rate(self.delivered, self.plans)

    @property
    def commonsense_micro(self) -> float:
        return self._rate(self.commonsense_checks_passed, self.commonsense_checks)

    @property
    def commonsense_macro(self) -> float:
        return self._rate(self.commonsense_plans_passed, self.plans)

    @property
    def hard_micro(self) -> float:
        return self._rate(self.hard_checks_passed, self.hard_checks)

    @property
    def hard_macro(self) -> float:
        return self._rate(self.hard_plans_passed, self.plans)

    @property
    def final_pass_rate(self) -> float:
        return self._rate(self.final_plans_passed, self.plans)

    def rates(self) -> dict[str, float]:
        return {
            "delivery_rate": self.delivery_rate,
            "commonsense_micro": self.commonsense_micro,
            "commonsense_macro": self.commonsense_macro,
            "hard_micro": self.hard_micro,
            "hard_macro": self.hard_macro,
            "final_pass_rate": self.final_pass_rate,
        }


def metrics(evaluations: Iterable[PlanEvaluation]) -> Metrics:
    """Delivery, commonsense micro/macro, hard micro/macro and final pass over the plans."""
    counts = dict.fromkeys(Metrics.__dataclass_fields__, 0)
    for ev in evaluations:
        counts["plans"] += 1
        counts["commonsense_checks"] += len(COMMONSENSE)
        counts["hard_checks"] += len(ev.trip.applicable_hard())
        if not ev.delivered:
            continue
        counts["delivered"] += 1
        counts["commonsense_checks_passed"] += sum(r.passed for r in ev.commonsense.values())
        counts["commonsense_plans_passed"] += ev.commonsense_pass
        counts["hard_checks_passed"] += sum(ev.hard_passed(name) for name in ev.hard)
        counts["hard_plans_passed"] += ev.hard_pass
        counts["final_plans_passed"] += ev.final_pass
    return Metrics(**counts)


@dataclass(frozen=True)
class Scores:
    overall: Metrics
    by_level: dict[str, Metrics]
    by_days: dict[int, Metrics]


def score(evaluations: Sequence[PlanEvaluation]) -> Scores:
    """The metrics overall, per level (easy/medium/hard) and per trip length."""
    levels = sorted(
        {ev.level for ev in evaluations if ev.level},
        key=lambda lv: (LEVELS.index(lv) if lv in LEVELS else len(LEVELS), lv),
    )
    lengths = sorted({ev.trip.days for ev in evaluations})
    return Scores(
        overall=metrics(evaluations),
        by_level={lv: metrics(ev for ev in evaluations if ev.level == lv) for lv in levels},
        by_days={n: metrics(ev for ev in evaluations if ev.trip.days == n) for n in lengths},
    )
