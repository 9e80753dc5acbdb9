"""Plans of data-bound tasks: the day-by-day document, and checking a plan written by anyone.

A plan is one dict per day: ``days`` (1..N), ``current_city`` ("A" on a stay day, "from A to B"
on a travel day) and one entry per slot, each the ``write`` form of a record or ``"-"``.
:func:`check_plan` reads such a plan back against the task's data and names every rule it
breaks with its day and slot, without trusting any number written in the plan.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import z3

from fllm_cli.databound.csp import CENTS, NONE, TripModel, place_key
from fllm_cli.databound.search import Outcome
from fllm_cli.databound.spec import DataSpec, Slot, Table, clock_minutes, fill
from fllm_cli.databound.tables import Record

DASH = "-"


def build_days(
    trip: TripModel, outcome: Outcome, home_text: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Return the day dicts of a finished search and the priced items (for the cost view)."""
    if trip.check() != z3.sat:  # every decision was feasible, so this cannot fail
        raise RuntimeError("the finished plan is not satisfiable")
    model = trip.solver.model()

    def value(expr: Any) -> int:
        return model.eval(expr, True).as_long()  # type: ignore[no-any-return]

    stops = [trip.stop_name(value(s)) for s in trip.stop]
    night_stop = {d: value(trip.pos[d]) for d in trip.pos}
    days: list[dict[str, Any]] = []
    items: list[dict[str, Any]] = []
    leg_day = {0: 1, trip.k: trip.days}  # leg k (home again) only on a round trip
    for j in range(1, trip.k):
        leg_day[j] = value(trip.starts[j])
    for d in range(1, trip.days + 1):
        if d == trip.days:
            here = home_text if trip.returns else stops[night_stop[d - 1]]
        else:
            here = stops[night_stop[d]]
        before = home_text if d == 1 else stops[night_stop[d - 1]]
        entry: dict[str, Any] = {
            "days": d,
            "current_city": here if here == before else f"from {before} to {here}",
        }
        for slot in trip.spec.slots.values():
            entry[slot.name] = DASH
        days.append(entry)
    for slot, at, var, options in trip.slot_vars:
        n = value(var)
        if n == NONE or at is None:
            continue
        table, record = options[n]
        text = record.written(trip.spec.tables[table]) + slot.suffix
        unit = trip.unit_cost(options[n]) / CENTS
        if slot.per == "leg":
            day = leg_day[at]
            days[day - 1][slot.name] = text
            items.append({"day": day, "slot": slot.name, "item": text, "cost": unit})
        elif slot.per == "stay":
            nights = [d for d in night_stop if night_stop[d] == at]
            for d in nights:
                days[d - 1][slot.name] = text
            items.append(
                {
                    "day": nights[0],
                    "slot": slot.name,
                    "item": text,
                    "cost": unit * len(nights),
                    "nights": len(nights),
                }
            )
        else:
            days[at - 1][slot.name] = text
            items.append({"day": at, "slot": slot.name, "item": text, "cost": unit})
    return days, items


@dataclass
class Violation:
    rule: str
    message: str
    day: int | None = None
    slot: str | None = None

    def __str__(self) -> str:
        where = f"day {self.day}" if self.day else ""
        if self.slot:
            where = f"{where} {self.slot}".strip()
        return f"{self.rule}: {where + ': ' if where else ''}{self.message}"


@dataclass
class PlanCheck:
    violations: list[Violation] = field(default_factory=list)
    total: float = 0.0
    items: list[dict[str, Any]] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.violations


def check_plan(
    spec: DataSpec, tables: dict[str, list[Record]], request: dict[str, Any], plan: Any
) -> PlanCheck:
    """Check a plan (a list of day dicts) against the data and every rule of the domain."""
    out = PlanCheck()
    bad = out.violations.append
    if not isinstance(plan, list) or not all(isinstance(d, dict) for d in plan):
        bad(Violation("format", "the plan must be a JSON list of day objects"))
        return out
    days_wanted = request.get(spec.trip.days)
    if isinstance(days_wanted, int) and len(plan) != days_wanted:
        bad(
            Violation(
                "complete", f"the plan has {len(plan)} days; the request asks for {days_wanted}"
            )
        )
    places = spec.place_columns()
    index = {
        name: _index(table, tables.get(name, []), places) for name, table in spec.tables.items()
    }
    home = place_key(request.get(spec.trip.home))
    route: list[str] = []
    chosen: dict[str, list[tuple[int, tuple[str, Record]]]] = {s: [] for s in spec.slots}
    travel_days: list[int] = []
    nights_at: list[tuple[int, str, tuple[str, Record] | None]] = []
    for position, day in enumerate(plan, 1):
        city = str(day.get("current_city", "")).strip()
        if day.get("days") != position:
            bad(Violation("complete", f"'days' should be {position}", position))
        travel = city.lower().startswith("from ") and " to " in city
        if travel:
            origin, dest = city[5:].split(" to ", 1)
            ends = {place_key(origin), place_key(dest)}
            travel_days.append(position)
            route += [place_key(origin), place_key(dest)]
        elif city:
            ends = {place_key(city)}
            route.append(place_key(city))
        else:
            bad(Violation("complete", "no current_city", position))
            ends = set()
        here = place_key(dest) if travel else place_key(city)
        for slot in spec.slots.values():
            raw = day.get(slot.name, DASH)
            text = str(raw if raw is not None else DASH).strip()
            found = _read_slot(slot, text, index)
            if found is None:
                bad(
                    Violation(
                        "within data", f"'{text[:80]}' is not in the data", position, slot.name
                    )
                )
                continue
            if not found:
                if _needed(slot, travel, position, len(plan)):
                    bad(Violation("complete", "is empty", position, slot.name))
                if slot.per == "stay" and position < len(plan):
                    nights_at.append((position, here, None))
                continue
            for option in found:
                _, record = option
                if slot.per == "leg":
                    if not travel:
                        bad(
                            Violation(
                                "within current city",
                                "transport on a day without travel",
                                position,
                                slot.name,
                            )
                        )
                    elif (place_key(record[slot.origin]), place_key(record[slot.dest])) != (
                        place_key(origin),
                        place_key(dest),
                    ):
                        bad(
                            Violation(
                                "within current city",
                                f"goes from {record[slot.origin]} to {record[slot.dest]}",
                                position,
                                slot.name,
                            )
                        )
                elif place_key(record[slot.city]) not in ends:
                    bad(
                        Violation(
                            "within current city",
                            f"is in {record[slot.city]}, not {' or '.join(sorted(ends))}",
                            position,
                            slot.name,
                        )
                    )
                chosen[slot.name].append((position, option))
            if slot.per == "stay":
                nights_at.append((position, here, found[0]))
    _route(spec, request, route, home, travel_days, len(plan), bad)
    _rules(spec, request, chosen, nights_at, plan, bad, out)
    return out


def _needed(slot: Slot, travel: bool, day: int, last: int) -> bool:
    if slot.per == "leg":
        return travel
    if slot.per == "stay":
        return day < last
    return slot.need == "always" or (slot.need == "stay" and not travel)


_STATE = re.compile(r"(?<=[A-Za-z.])\s?\([A-Za-z .'-]+\)")


def _norm(text: str) -> str:
    """Compare written records without a place's ``(State)`` suffix or case; inner spacing
    counts (the official evaluator finds a name only if it is written exactly)."""
    return _STATE.sub("", text).strip().lower().replace(" ,", ",")


def _index(table: Table, records: list[Record], places: set[str]) -> dict[str, Record]:
    """Map each record's written form, and its form cut after the last place, to the record.

    The cut form lets a plan carry details after the places ("..., duration: 3 hours") that
    the data words differently; the first record in source order wins a shared key.
    """
    out: dict[str, Record] = {}
    cut = _cut(table.write, places)
    for record in records:
        out.setdefault(_norm(record.written(table)), record)
        if cut:
            out.setdefault("^" + _norm(fill(cut, record.values)), record)
    return out


def _cut(template: str, places: set[str]) -> str:
    """The template up to its last place or name field (what follows may be worded freely)."""
    names = "|".join(re.escape(p) for p in sorted(places | {"name"}))
    ends = [m.end() for m in re.finditer(rf"\{{(?i:{names})\}}", template)]
    return template[: max(ends)] if ends and max(ends) < len(template) else ""


def _lookup(index: dict[str, Record], text: str) -> Record | None:
    key = _norm(text)
    if key in index:
        return index[key]
    for length in range(len(key), 0, -1):  # the longest cut form the text starts with
        if key[length - 1 : length + 1] in (",", ", ") or length == len(key):
            found = index.get("^" + key[:length].rstrip(", "))
            if found is not None:
                return found
    return None


def _read_slot(
    slot: Slot, text: str, index: dict[str, dict[str, Record]]
) -> list[tuple[str, Record]] | None:
    """Return the records a slot's text names ([] for '-'); None if one is not in the data."""
    if text in ("", DASH):
        return []
    parts = [p for p in text.split(slot.suffix)] if slot.suffix else [text]
    out = []
    for part in (p.strip() for p in parts):
        if not part:
            continue
        record = next(
            (r for t in slot.tables if (r := _lookup(index.get(t, {}), part)) is not None), None
        )
        if record is None:
            return None
        out.append((record.table, record))
    return out


def _route(
    spec: DataSpec,
    request: dict[str, Any],
    route: list[str],
    home: str,
    travel_days: list[int],
    n: int,
    bad: Any,
) -> None:
    count = spec.trip.stops_count
    want = count if isinstance(count, int) else count.get(n, 0)
    if not route:
        return
    returns = spec.trip.end == "home"
    where = request.get(spec.trip.home)
    if route[0] != home or (route[-1] != home) == returns:
        end = f"start and end at {where}" if returns else f"start at {where} and end elsewhere"
        bad(Violation("route", f"the trip must {end}"))
    blocks: list[str] = []
    for place in route:
        if not blocks or blocks[-1] != place:
            blocks.append(place)
    visited = blocks[1:-1] if returns else blocks[1:]
    if len(set(visited)) != len(visited) or home in visited:
        bad(Violation("route", "a place is visited twice"))
    if want and len(set(visited)) != want:
        bad(Violation("route", f"visits {len(set(visited))} place(s); the trip visits {want}"))
    if 1 not in travel_days:
        bad(Violation("route", "day 1 must travel from home"))


def _rules(
    spec: DataSpec,
    request: dict[str, Any],
    chosen: dict[str, list[tuple[int, tuple[str, Record]]]],
    nights_at: list[tuple[int, str, tuple[str, Record] | None]],
    plan: list[dict[str, Any]],
    bad: Any,
    out: PlanCheck,
) -> None:
    people = dict(request)
    for c in spec.constraints:
        wanted = request.get(c.request) if c.request else None
        if c.rule == "different":
            seen: dict[tuple[str, int], int] = {}
            order = list(spec.slots)
            picks = sorted(
                (
                    (day, order.index(slot), slot, option)
                    for slot in c.slots
                    for day, option in chosen.get(slot, [])
                ),
                key=lambda pick: pick[:2],
            )
            for day, _, slot, (table, record) in picks:
                key = (table, record.index)
                if key in seen:
                    bad(
                        Violation(
                            "different",
                            f"'{record.written(spec.tables[table])}' again "
                            f"(first on day {seen[key]})",
                            day,
                            slot,
                        )
                    )
                else:
                    seen[key] = day
        elif c.rule == "cover" and wanted:
            served = {
                v.lower()
                for slot in c.slots
                for _, (_, r) in chosen.get(slot, [])
                for v in (r[c.column] or ())
            }
            missing = [w for w in wanted if w.lower() not in served]
            if missing:
                where = "/".join(c.slots)
                bad(Violation("cover", f"no {where} has {c.column} {', '.join(missing)}"))
        elif c.rule == "forbid" and wanted:
            rule = c.value.replace("{value}", str(wanted)).lower()
            for slot in c.slots:
                for day, (_, r) in chosen.get(slot, []):
                    if rule in {str(v).lower() for v in (r[c.column] or ())}:
                        bad(Violation("request", f"'{r['name']}' says '{rule}'", day, slot))
        elif c.rule == "match" and wanted:
            allowed = {v.lower() for v in c.values.get(str(wanted), ())}
            for slot in c.slots:
                for day, (_, r) in chosen.get(slot, []):
                    if allowed and str(r[c.column]).lower() not in allowed:
                        bad(
                            Violation(
                                "request",
                                f"{c.column} '{r[c.column]}' does not fit '{wanted}'",
                                day,
                                slot,
                            )
                        )
        elif c.rule == "in_town":
            _in_town(spec, c, chosen, plan, bad)
        elif c.rule == "same_kind":
            groups = [{v.lower() for v in g} for g in c.groups]
            kinds = {
                next((n for n, g in enumerate(groups) if str(r[c.column]).lower() in g), -1)
                for slot in c.slots
                for _, (_, r) in chosen.get(slot, [])
            }
            if len(kinds) > 1:
                bad(Violation("same kind", f"{'/'.join(c.slots)} mixes kinds that cannot be mixed"))
        elif c.rule == "min_nights":
            run_start = 0
            for i, (_day, _, option) in enumerate(nights_at):
                nxt = nights_at[i + 1][2] if i + 1 < len(nights_at) else None
                if option is not None and (
                    nxt is None or nxt[1].index != option[1].index or nxt[0] != option[0]
                ):
                    length = i - run_start + 1
                    need = option[1][c.column] or 0
                    if length < need:
                        bad(
                            Violation(
                                "min nights",
                                f"'{option[1]['name']}' needs {math.ceil(need)} nights, "
                                f"got {length}",
                                nights_at[run_start][0],
                                c.slots[0],
                            )
                        )
                if nxt is None or option is None or nxt[1].index != option[1].index:
                    run_start = i + 1
        elif c.rule == "total":
            total = 0.0
            for slot_name, slot_picks in chosen.items():
                for day, (table, record) in slot_picks:
                    if table in c.cost:
                        try:
                            cost = float(c.cost[table]({**people, **record.values}))
                        except Exception:
                            cost = 0.0
                        out.items.append(
                            {
                                "day": day,
                                "slot": slot_name,
                                "item": record.written(spec.tables[table]),
                                "cost": cost,
                            }
                        )
                        total += cost
            out.total = total
            bound = request.get(c.at_most)
            if isinstance(bound, (int, float)) and total > bound + 1e-9:
                show = spec.currency(c.at_most).show
                bad(Violation("budget", f"total {show(total)} exceeds {c.at_most} {show(bound)}"))


def _in_town(
    spec: DataSpec,
    c: Any,
    chosen: dict[str, list[tuple[int, tuple[str, Record]]]],
    plan: list[dict[str, Any]],
    bad: Any,
) -> None:
    """On a travel day, each timed day slot is where the traveller is at its time."""
    legs = {day: record for day, (_, record) in chosen.get(c.slots[0], [])}
    for name, (opens, closes) in c.times.items():
        slot = spec.slots[name]
        for day, (_, record) in chosen.get(name, []):
            leg = legs.get(day)
            city = str(plan[day - 1].get("current_city", "")) if day <= len(plan) else ""
            if leg is None or not city.lower().startswith("from ") or " to " not in city:
                continue
            origin, dest = (place_key(p) for p in city[5:].split(" to ", 1))
            where = place_key(record[slot.city])
            dep, arr = clock_minutes(leg[c.departs]), clock_minutes(leg[c.arrives])
            hours = f"{_clock(opens)}-{_clock(closes)}"
            if where == dest and arr is not None and arr > closes - 60:
                bad(Violation("in town", f"in {record[slot.city]} ({hours}), but the "
                              f"{c.slots[0]} arrives at {_clock(arr)}", day, name))  # fmt: skip
            elif where == origin and dest != origin and dep is not None and dep < opens + 60:
                bad(Violation("in town", f"in {record[slot.city]} ({hours}), but the "
                              f"{c.slots[0]} leaves at {_clock(dep)}", day, name))  # fmt: skip


def _clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"
