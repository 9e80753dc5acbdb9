"""Parse TravelPlanner's plan format: a JSON list of day dicts.

Each day has ``days``, ``current_city``, ``transportation``, ``breakfast``, ``attraction``,
``lunch``, ``dinner`` and ``accommodation``; ``"-"`` (or an empty string) means none.

Parsing is tolerant by default: the overall shape (a list of objects) must be right, but a field
that cannot be read (``"Cafe X"`` without a city, a flight without a number, a missing key) is
kept as a :class:`FieldProblem` on its day, so that the evaluator reports it as a violation of
the check it affects. ``strict=True`` turns the first such problem into a one-line
:class:`~fllm_cli.errors.UsageError` instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fllm_cli.errors import UsageError
from fllm_cli.textio import load_json, read_text

FIELDS = (
    "days",
    "current_city",
    "transportation",
    "breakfast",
    "attraction",
    "lunch",
    "dinner",
    "accommodation",
)
MEALS = ("breakfast", "lunch", "dinner")
NONE_VALUES = ("", "-")

_STATE_SUFFIX = re.compile(r"\s*\([^()]*\)\s*$")
_FROM_TO = re.compile(r"^\s*from\s+(.+?)\s+to\s+(.+?)\s*$", re.IGNORECASE)
_LEG_FROM_TO = re.compile(r"from\s+(.+?)\s+to\s+([^,]+)", re.IGNORECASE)
_FLIGHT_NUMBER = re.compile(r"flight\s+number\s*:\s*([A-Za-z0-9]+)", re.IGNORECASE)
_TIME = r"(\d{1,2}:\d{2})"
_DEPARTURE = re.compile(r"departure\s+time\s*:\s*" + _TIME, re.IGNORECASE)
_ARRIVAL = re.compile(r"arrival\s+time\s*:\s*" + _TIME, re.IGNORECASE)
_GROUND = re.compile(r"^\s*(self-driving|taxi)\b", re.IGNORECASE)


def strip_state(city: str) -> str:
    """Return ``city`` without a trailing ``(State)`` and with whitespace collapsed."""
    return " ".join(_STATE_SUFFIX.sub("", city).split())


@dataclass(frozen=True)
class Entity:
    """A restaurant, attraction or accommodation written ``"Name, City"``."""

    name: str
    city: str  # without the "(State)" suffix
    raw: str

    def __str__(self) -> str:
        return self.raw.strip()


@dataclass(frozen=True)
class Leg:
    """One transport leg: a flight, self-driving or a taxi."""

    mode: str  # "flight", "self-driving" or "taxi"
    origin: str
    dest: str
    raw: str
    flight_number: str | None = None
    departure: str | None = None
    arrival: str | None = None


@dataclass(frozen=True)
class FieldProblem:
    """A field that is missing or could not be read."""

    field: str
    message: str

    def describe(self, day: int) -> str:
        return f"day {day} {self.field}: {self.message}"


@dataclass(frozen=True)
class Day:
    number: int  # 1-based position in the plan
    raw: dict[str, Any]
    origin: str | None  # travel day: from origin to dest
    dest: str | None
    city: str | None  # stay day
    transportation: Leg | None
    breakfast: Entity | None
    lunch: Entity | None
    dinner: Entity | None
    attractions: tuple[Entity, ...]
    accommodation: Entity | None
    problems: tuple[FieldProblem, ...] = ()

    @property
    def is_travel(self) -> bool:
        return self.origin is not None

    @property
    def cities(self) -> tuple[str, ...]:
        """The cities the day may use: (origin, dest) on a travel day, (city,) on a stay day."""
        if self.origin is not None and self.dest is not None:
            return (self.origin, self.dest)
        return (self.city,) if self.city else ()

    @property
    def sleeping_city(self) -> str | None:
        return self.dest if self.is_travel else self.city

    def meal(self, name: str) -> Entity | None:
        return {"breakfast": self.breakfast, "lunch": self.lunch, "dinner": self.dinner}[name]

    def meals(self) -> Iterator[tuple[str, Entity]]:
        for name in MEALS:
            entity = self.meal(name)
            if entity is not None:
                yield name, entity

    def problem(self, field: str) -> FieldProblem | None:
        return next((p for p in self.problems if p.field == field), None)

    def has_value(self, field: str) -> bool:
        """True when the day gives a (possibly unreadable) value other than none for ``field``."""
        value = self.raw.get(field)
        return isinstance(value, (str, int)) and str(value).strip() not in NONE_VALUES


@dataclass(frozen=True)
class Plan:
    days: tuple[Day, ...]

    def __len__(self) -> int:
        return len(self.days)

    @property
    def problems(self) -> list[str]:
        return [p.describe(d.number) for d in self.days for p in d.problems]


def _is_none(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.strip() in NONE_VALUES)


def parse_entity(text: str) -> Entity:
    """Parse ``"Name, City"``; the city follows the last comma (names may contain commas)."""
    name, comma, city = text.rpartition(",")
    if not comma or not name.strip() or not strip_state(city):
        raise ValueError(f"expected 'Name, City', got '{text.strip()[:80]}'")
    return Entity(name=name.strip(), city=strip_state(city), raw=text)


def parse_attractions(text: str) -> tuple[Entity, ...]:
    """Parse ``"A, City;B, City;"`` (the final ``;`` is optional)."""
    return tuple(parse_entity(part) for part in text.split(";") if part.strip())


def parse_from_to(text: str) -> tuple[str, str] | None:
    """Parse ``"from A to B"`` (whole text) into two cities without state suffixes."""
    match = _FROM_TO.match(text)
    if not match:
        return None
    return strip_state(match.group(1)), strip_state(match.group(2))


def parse_leg(text: str) -> Leg:
    """Parse a flight (``Flight Number: F1, from A to B, ...``) or a ground leg."""
    route = _LEG_FROM_TO.search(text)
    if not route:
        raise ValueError(f"no 'from A to B' in '{text.strip()[:80]}'")
    origin, dest = strip_state(route.group(1)), strip_state(route.group(2))
    ground = _GROUND.match(text)
    if ground:
        return Leg(mode=ground.group(1).lower(), origin=origin, dest=dest, raw=text)
    number = _FLIGHT_NUMBER.search(text)
    if number:
        dep, arr = _DEPARTURE.search(text), _ARRIVAL.search(text)
        return Leg(
            mode="flight",
            origin=origin,
            dest=dest,
            raw=text,
            flight_number=number.group(1),
            departure=dep.group(1) if dep else None,
            arrival=arr.group(1) if arr else None,
        )
    raise ValueError(
        f"'{text.strip()[:80]}' is none of 'Flight Number: ...', 'Self-driving, ...', 'Taxi, ...'"
    )


def _parse_day(number: int, data: Any, where: str, strict: bool) -> Day:
    if not isinstance(data, dict):
        raise UsageError(f"{where}: day {number} must be an object, got {type(data).__name__}")
    problems: list[FieldProblem] = []

    def field(name: str) -> str | None:
        if name not in data:
            problems.append(FieldProblem(name, "missing"))
            return None
        value = data[name]
        if _is_none(value):
            return None
        if not isinstance(value, str):
            problems.append(FieldProblem(name, f"must be text, got {type(value).__name__}"))
            return None
        return value

    def read(name: str, parser: Any) -> Any:
        value = field(name)
        if value is None:
            return None
        try:
            return parser(value)
        except ValueError as exc:
            problems.append(FieldProblem(name, str(exc)))
            return None

    if "days" not in data:
        problems.append(FieldProblem("days", "missing"))
    elif isinstance(data["days"], bool) or data["days"] != number:
        problems.append(FieldProblem("days", f"expected {number}, got {data['days']!r}"))

    origin = dest = city = None
    current = field("current_city")
    if current is not None:
        route = parse_from_to(current)
        if route:
            origin, dest = route
        elif re.match(r"^\s*from\s", current, re.IGNORECASE):
            problems.append(FieldProblem("current_city", f"cannot read '{current.strip()[:80]}'"))
        else:
            city = strip_state(current)
    elif "current_city" in data and _is_none(data["current_city"]):
        problems.append(FieldProblem("current_city", "is empty"))

    transportation = read("transportation", parse_leg)
    breakfast = read("breakfast", parse_entity)
    lunch = read("lunch", parse_entity)
    dinner = read("dinner", parse_entity)
    attractions = read("attraction", parse_attractions) or ()
    accommodation = read("accommodation", parse_entity)
    if strict and problems:
        raise UsageError(f"{where}: {problems[0].describe(number)}")
    return Day(
        number=number,
        raw=data,
        origin=origin,
        dest=dest,
        city=city,
        transportation=transportation,
        breakfast=breakfast,
        lunch=lunch,
        dinner=dinner,
        attractions=attractions,
        accommodation=accommodation,
        problems=tuple(problems),
    )


def parse_plan(data: Any, where: str = "plan", *, strict: bool = False) -> Plan:
    """Parse a plan (a list of day objects); see the module docstring for tolerance."""
    if isinstance(data, dict) and "plan" in data:
        data = data["plan"]
    if not isinstance(data, list):
        raise UsageError(f"{where}: a plan must be a list of day objects")
    days = [_parse_day(n, day, where, strict) for n, day in enumerate(data, start=1)]
    return Plan(days=tuple(days))


def parse_plan_text(text: str, where: str = "plan", *, strict: bool = False) -> Plan:
    """Parse a plan from JSON text."""
    return parse_plan(load_json(text, where), where, strict=strict)


def load_plans(path: str | Path) -> dict[int, Plan | None]:
    """Read a ``{"idx", "plan"}`` JSONL file; a null or empty plan means "not delivered"."""
    text = read_text(path, "plan file")
    plans: dict[int, Plan | None] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{Path(path).name}:{number}"
        data = load_json(line, where)
        if not isinstance(data, dict) or "idx" not in data:
            raise UsageError(f"{where}: expected an object with 'idx' and 'plan'")
        idx = data["idx"]
        if isinstance(idx, bool) or not isinstance(idx, int):
            raise UsageError(f"{where}: 'idx' must be a whole number")
        if idx in plans:
            raise UsageError(f"{where}: idx {idx} appears twice")
        raw = data.get("plan")
        plans[idx] = None if raw is None or raw == [] else parse_plan(raw, f"{where} (idx {idx})")
    return plans


def plan_from_days(days: Sequence[dict[str, Any]]) -> Plan:
    """Convenience for planners: parse day dicts built in memory."""
    return parse_plan(list(days))
