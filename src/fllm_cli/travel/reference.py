"""Typed, validated reference information of one TravelPlanner query (the planner's sandbox).

The reference information is untrusted JSON: every record is checked field by field, and a bad
record raises a one-line :class:`~fllm_cli.errors.UsageError` that names the record (section,
position and name), never a traceback.

Lookups are by ``(name, city)`` after :func:`name_key` and :func:`city_key` normalisation. A
name is compared as the official evaluator compares it: only the ends are trimmed (the plan
format cannot keep the trailing space of ``"Peaceful, beautiful home away "``); inner spacing,
line breaks and punctuation must match the record exactly ("Wok  In The Clouds" is not
"Wok In The Clouds"). City names drop a ``"(State)"`` suffix and collapse whitespace.
When a name occurs twice in one city, the first record in source order wins.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fllm_cli.errors import UsageError
from fllm_cli.textio import load_json, read_text

GROUND_MODES = ("self-driving", "taxi")
ROOM_TYPES = ("Entire home/apt", "Private room", "Shared room")

_STATE_SUFFIX = re.compile(r"\s*\([^()]*\)\s*$")


def name_key(name: str) -> str:
    """Return the comparison key of an entity name: the name with its ends trimmed."""
    return name.strip()


def city_key(city: str) -> str:
    """Return the comparison key of a city: a trailing ``(State)`` dropped, whitespace collapsed."""
    return " ".join(_STATE_SUFFIX.sub("", city).split())


@dataclass(frozen=True)
class Flight:
    number: str
    price: int | float  # per person
    dep_time: str
    arr_time: str
    date: str
    origin: str
    dest: str
    duration: str = ""
    distance_miles: float | None = None


@dataclass(frozen=True)
class Restaurant:
    name: str
    city: str
    average_cost: int | float  # per person
    cuisines: tuple[str, ...]
    rating: float | None = None


@dataclass(frozen=True)
class Attraction:
    name: str
    city: str
    latitude: float | None = None
    longitude: float | None = None
    address: str = ""
    phone: str = ""
    website: str = ""


@dataclass(frozen=True)
class Accommodation:
    name: str
    city: str
    price: int | float  # per night and room
    room_type: str
    house_rules: tuple[str, ...]  # e.g. ("No pets", "No smoking")
    minimum_nights: int
    maximum_occupancy: int
    review_rate: float | None = None


@dataclass(frozen=True)
class GroundRoute:
    mode: str  # "self-driving" or "taxi"
    origin: str
    dest: str
    available: bool
    cost: int | float | None  # per car (self-driving) or per taxi; None when unavailable
    duration_min: int | float | None = None
    distance_km: float | None = None
    text: str = ""


@dataclass(frozen=True)
class FlightSearch:
    origin: str
    dest: str
    date: str
    found: int


@dataclass(frozen=True)
class ReferenceInfo:
    """Everything a planner may use for one query, with (name, city) lookups."""

    idx: int | None
    cities: tuple[str, ...]
    attractions: tuple[Attraction, ...]
    restaurants: tuple[Restaurant, ...]
    accommodations: tuple[Accommodation, ...]
    flight_searches: tuple[FlightSearch, ...]
    flights: tuple[Flight, ...]
    ground_routes: tuple[GroundRoute, ...]
    _restaurants: dict[tuple[str, str], Restaurant] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )
    _attractions: dict[tuple[str, str], Attraction] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )
    _accommodations: dict[tuple[str, str], Accommodation] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        for table, records in (
            (self._restaurants, self.restaurants),
            (self._attractions, self.attractions),
            (self._accommodations, self.accommodations),
        ):
            for record in records:
                table.setdefault((name_key(record.name), city_key(record.city)), record)  # type: ignore[arg-type]

    def restaurant(self, name: str, city: str) -> Restaurant | None:
        return self._restaurants.get((name_key(name), city_key(city)))

    def attraction(self, name: str, city: str) -> Attraction | None:
        return self._attractions.get((name_key(name), city_key(city)))

    def accommodation(self, name: str, city: str) -> Accommodation | None:
        return self._accommodations.get((name_key(name), city_key(city)))

    def flight(self, number: str, origin: str, dest: str) -> Flight | None:
        """Return the flight with this number between these cities (the date is not compared)."""
        want = (number.strip(), city_key(origin), city_key(dest))
        for flight in self.flights:
            if (flight.number, city_key(flight.origin), city_key(flight.dest)) == want:
                return flight
        return None

    def flight_by_number(self, number: str) -> Flight | None:
        return next((f for f in self.flights if f.number == number.strip()), None)

    def ground_route(self, mode: str, origin: str, dest: str) -> GroundRoute | None:
        """Return the *available* route of ``mode`` from ``origin`` to ``dest``, if any."""
        want = (mode.lower(), city_key(origin), city_key(dest))
        for route in self.ground_routes:
            same = (route.mode, city_key(route.origin), city_key(route.dest)) == want
            if same and route.available and route.cost is not None:
                return route
        return None

    def names_in(self, category: str, city: str) -> Iterator[str]:
        """Yield the names of a ``category`` (restaurant/attraction/accommodation) in ``city``."""
        records: tuple[Restaurant | Attraction | Accommodation, ...]
        if category == "restaurant":
            records = self.restaurants
        elif category == "attraction":
            records = self.attractions
        else:
            records = self.accommodations
        want = city_key(city)
        return (r.name for r in records if city_key(r.city) == want)


# --------------------------------------------------------------------------------------- loading


class _Record:
    """Typed access to one untrusted JSON object; errors name the record."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, dict):
            raise UsageError(f"{where}: expected a JSON object, got {_type_name(data)}")
        self.data = data
        self.where = where

    def _get(self, key: str, optional: bool) -> Any:
        if key not in self.data:
            if optional:
                return None
            raise UsageError(f"{self.where}: missing field '{key}'")
        return self.data[key]

    def text(self, key: str, *, optional: bool = False, empty: bool = False) -> str:
        value = self._get(key, optional)
        if value is None and optional:
            return ""
        if not isinstance(value, str):
            raise UsageError(f"{self.where}: '{key}' must be text, got {_type_name(value)}")
        if not empty and not value.strip():
            raise UsageError(f"{self.where}: '{key}' is empty")
        return value

    def number(
        self, key: str, *, optional: bool = False, minimum: float = 0.0
    ) -> int | float | None:
        value = self._get(key, optional)
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UsageError(f"{self.where}: '{key}' must be a number, got {_type_name(value)}")
        if value != value or value in (float("inf"), float("-inf")) or value < minimum:
            raise UsageError(f"{self.where}: '{key}' must be a number >= {minimum:g}, got {value}")
        return value

    def whole(self, key: str, *, minimum: int = 0) -> int:
        value = self.number(key, minimum=minimum)
        assert value is not None
        if int(value) != value:
            raise UsageError(f"{self.where}: '{key}' must be a whole number, got {value}")
        return int(value)

    def texts(self, key: str) -> tuple[str, ...]:
        value = self._get(key, False)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{self.where}: '{key}' must be a list of text")
        return tuple(v.strip() for v in value)

    def flag(self, key: str) -> bool:
        value = self._get(key, False)
        if not isinstance(value, bool):
            raise UsageError(f"{self.where}: '{key}' must be true or false")
        return value


def _type_name(value: Any) -> str:
    return {
        type(None): "null",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "text",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)


def _section(data: dict[str, Any], key: str, where: str) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise UsageError(f"{where}: '{key}' must be a list, got {_type_name(value)}")
    return value


def _label(item: Any, section: str, position: int, where: str) -> str:
    name = item.get("name") or item.get("number") if isinstance(item, dict) else None
    shown = f" '{str(name)[:60]}'" if isinstance(name, str) and name else ""
    return f"{where}: {section}[{position}]{shown}"


def _flight(r: _Record) -> Flight:
    return Flight(
        number=r.text("number").strip(),
        price=_req(r.number("price")),
        dep_time=r.text("dep_time"),
        arr_time=r.text("arr_time"),
        date=r.text("date"),
        origin=r.text("origin"),
        dest=r.text("dest"),
        duration=r.text("duration", optional=True, empty=True),
        distance_miles=_opt_float(r.number("distance_miles", optional=True)),
    )


def _restaurant(r: _Record) -> Restaurant:
    return Restaurant(
        name=r.text("name"),
        city=r.text("city"),
        average_cost=_req(r.number("average_cost")),
        cuisines=r.texts("cuisines"),
        rating=_opt_float(r.number("rating", optional=True)),
    )


def _attraction(r: _Record) -> Attraction:
    return Attraction(
        name=r.text("name"),
        city=r.text("city"),
        latitude=_opt_float(r.number("latitude", optional=True, minimum=-90)),
        longitude=_opt_float(r.number("longitude", optional=True, minimum=-180)),
        address=r.text("address", optional=True, empty=True),
        phone=r.text("phone", optional=True, empty=True),
        website=r.text("website", optional=True, empty=True),
    )


def _accommodation(r: _Record) -> Accommodation:
    room_type = r.text("room_type")
    if room_type not in ROOM_TYPES:
        raise UsageError(
            f"{r.where}: unknown room_type '{room_type}' (expected one of {ROOM_TYPES})"
        )
    return Accommodation(
        name=r.text("name"),
        city=r.text("city"),
        price=_req(r.number("price")),
        room_type=room_type,
        house_rules=r.texts("house_rules"),
        minimum_nights=r.whole("minimum_nights"),
        maximum_occupancy=r.whole("maximum_occupancy", minimum=1),
        review_rate=_opt_float(r.number("review_rate", optional=True)),
    )


def _ground(r: _Record) -> GroundRoute:
    mode = r.text("mode").strip().lower()
    if mode not in GROUND_MODES:
        raise UsageError(f"{r.where}: unknown mode '{mode}' (expected self-driving or taxi)")
    available = r.flag("available")
    cost = r.number("cost", optional=True)
    if available and cost is None:
        raise UsageError(f"{r.where}: an available route needs a 'cost'")
    return GroundRoute(
        mode=mode,
        origin=r.text("origin"),
        dest=r.text("dest"),
        available=available,
        cost=cost,
        duration_min=r.number("duration_min", optional=True),
        distance_km=_opt_float(r.number("distance_km", optional=True)),
        text=r.text("text", optional=True, empty=True),
    )


def _search(r: _Record) -> FlightSearch:
    return FlightSearch(
        origin=r.text("origin"), dest=r.text("dest"), date=r.text("date"), found=r.whole("found")
    )


def _req(value: int | float | None) -> int | float:
    assert value is not None  # only called on non-optional fields
    return value


def _opt_float(value: int | float | None) -> float | None:
    return None if value is None else float(value)


def reference_from_json(data: Any, where: str = "reference information") -> ReferenceInfo:
    """Validate one reference-information object (a line of ``reference_info.jsonl``)."""
    top = _Record(data, where)
    idx = top.data.get("idx")
    if idx is not None and (isinstance(idx, bool) or not isinstance(idx, int)):
        raise UsageError(f"{where}: 'idx' must be a whole number")
    if idx is not None:
        where = f"{where} (idx {idx})"
    cities = _section(top.data, "cities", where)
    if not all(isinstance(c, str) and c.strip() for c in cities):
        raise UsageError(f"{where}: 'cities' must be a list of city names")

    def build(section: str, make: Any) -> tuple[Any, ...]:
        return tuple(
            make(_Record(item, _label(item, section, n, where)))
            for n, item in enumerate(_section(top.data, section, where))
        )

    return ReferenceInfo(
        idx=idx,
        cities=tuple(cities),
        attractions=build("attractions", _attraction),
        restaurants=build("restaurants", _restaurant),
        accommodations=build("accommodations", _accommodation),
        flight_searches=build("flight_searches", _search),
        flights=build("flights", _flight),
        ground_routes=build("ground_transport", _ground),
    )


def iter_jsonl(path: str | Path, what: str) -> Iterator[tuple[str, Any]]:
    """Yield (``file:line``, parsed object) for every non-blank line of a JSONL file."""
    text = read_text(path, what)
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            where = f"{Path(path).name}:{number}"
            yield where, load_json(line, where)


def load_references(path: str | Path) -> dict[int, ReferenceInfo]:
    """Read ``reference_info.jsonl``: one object per line, keyed by ``idx`` (else line order)."""
    found: dict[int, ReferenceInfo] = {}
    for n, (where, data) in enumerate(iter_jsonl(path, "reference-information file")):
        ref = reference_from_json(data, where)
        key = ref.idx if ref.idx is not None else n
        if key in found:
            raise UsageError(f"{where}: idx {key} appears twice")
        found[key] = ref
    return found


def parse_city_states(text: str, where: str = "city list") -> dict[str, str]:
    """Parse ``citySet_with_states.txt``: one ``City<TAB>State`` per line."""
    states: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            raise UsageError(f"{where}:{number}: expected 'City<TAB>State', got '{line[:60]}'")
        states[city_key(parts[0])] = parts[1].strip()
    return states


def load_city_states(path: str | Path) -> Mapping[str, str]:
    """Read the benchmark's city -> state table."""
    return parse_city_states(read_text(path, "city list"), Path(path).name)
