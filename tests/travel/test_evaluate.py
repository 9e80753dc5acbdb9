"""The TravelPlanner evaluator: gold plans pass, and each broken plan fails exactly what it breaks.

Data: tests/data/travelplanner (the benchmark's 45 training queries; see SOURCE.md there).
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from functools import cache
from typing import Any

import pytest

from fllm_cli.errors import FllmError, UsageError
from fllm_cli.travel import (
    PlanEvaluation,
    ReferenceInfo,
    TravelQuery,
    evaluate_plan,
    evaluate_queries,
    load_city_states,
    load_plans,
    load_queries,
    load_references,
    metrics,
    parse_plan,
    reference_from_json,
    score,
)
from fllm_cli.travel.evaluate import check_reasonable_city_route, query_from_json
from fllm_cli.travel.plan import parse_entity, parse_leg
from tests.conftest import DATA

TP = DATA / "travelplanner"
# Gold plan 41 is the one annotated plan that breaks the constraints as CONSTRAINTS.md states
# them: on days 4 and 5 (a stay in San Antonio) it visits attractions in San Angelo and Houston,
# and the three San Angelo ones are not in its reference information. See docs/travelplanner.md.
FLAWED_GOLD = 41


@cache
def queries() -> dict[int, TravelQuery]:
    return {q.idx: q for q in load_queries(TP / "queries.jsonl")}


@cache
def references() -> dict[int, ReferenceInfo]:
    return load_references(TP / "reference_info.jsonl")


@cache
def city_states() -> dict[str, str]:
    return dict(load_city_states(TP / "database" / "citySet_with_states.txt"))


@cache
def _gold_days() -> dict[int, list[dict[str, Any]]]:
    lines = (TP / "gold_plans.jsonl").read_text(encoding="utf-8").splitlines()
    return {row["idx"]: row["plan"] for row in map(json.loads, lines)}


def gold_days(idx: int) -> list[dict[str, Any]]:
    """A fresh, mutable copy of a gold plan's day dicts."""
    return copy.deepcopy(_gold_days()[idx])


def evaluate(idx: int, days: list[dict[str, Any]], **trip_changes: Any) -> PlanEvaluation:
    trip = replace(queries()[idx].trip, **trip_changes)
    return evaluate_plan(
        parse_plan(days), references()[idx], trip, city_states=city_states(), idx=idx
    )


def gold_evaluations() -> list[PlanEvaluation]:
    plans = load_plans(TP / "gold_plans.jsonl")
    return evaluate_queries(
        list(queries().values()), plans, references(), city_states=city_states()
    )


# ----------------------------------------------------------------------------- the gold plans


def test_the_data_is_complete() -> None:
    assert len(queries()) == 45
    assert sorted(references()) == sorted(queries()) == sorted(_gold_days())
    # The official count of hard constraints for the training split.
    assert sum(len(q.trip.applicable_hard()) for q in queries().values()) == 105


def test_every_clean_gold_plan_scores_100_percent_on_every_metric() -> None:
    clean = [ev for ev in gold_evaluations() if ev.idx != FLAWED_GOLD]
    assert len(clean) == 44
    for ev in clean:
        assert ev.failed() == [], (ev.idx, ev.violations())
    scores = score(clean)
    for group in (scores.overall, *scores.by_level.values(), *scores.by_days.values()):
        assert group.rates() == dict.fromkeys(group.rates(), 1.0)
    assert set(scores.by_level) == {"easy", "medium", "hard"}
    assert set(scores.by_days) == {3, 5, 7}


def test_gold_plans_stay_within_budget_with_the_tables_costs() -> None:
    for ev in gold_evaluations():
        assert ev.cost is not None and not ev.cost.unpriced, ev.idx
        assert 0.7 * ev.trip.budget <= ev.cost.total <= ev.trip.budget, ev.idx


def test_the_flawed_gold_plan_fails_exactly_where_it_leaves_its_city() -> None:
    ev = evaluate(FLAWED_GOLD, gold_days(FLAWED_GOLD))
    assert ev.failed() == [
        "within_sandbox",
        "within_current_city",
        "budget",
        "room_rule",
        "room_type",
        "transportation",
    ]
    assert all(
        v.startswith(("day 4 attraction", "day 5 attraction"))
        for r in ev.commonsense.values()
        for v in r.violations
    )
    assert ev.hard_blocked and all(r.passed for r in ev.hard.values())
    # Whole-set metrics, with plan 41 counted as it is.
    overall = score(gold_evaluations()).overall
    assert overall.delivery_rate == 1.0
    assert overall.commonsense_micro == pytest.approx((45 * 8 - 2) / (45 * 8))
    assert overall.commonsense_macro == overall.hard_macro == overall.final_pass_rate
    assert overall.final_pass_rate == pytest.approx(44 / 45)
    assert overall.hard_micro == pytest.approx((105 - 4) / 105)


def test_the_flawed_gold_plan_passes_once_its_sights_are_in_san_antonio() -> None:
    days = gold_days(FLAWED_GOLD)
    days[3]["attraction"] = "The Alamo, San Antonio(Texas);San Antonio Zoo, San Antonio(Texas);"
    days[4]["attraction"] = "Brackenridge Park, San Antonio(Texas);"
    assert evaluate(FLAWED_GOLD, days).failed() == []


@pytest.mark.parametrize("idx", [0, 20, 27, 36, 44])
def test_prefixes_of_gold_plans_pass_as_partial_plans(idx: int) -> None:
    days = gold_days(idx)
    trip = queries()[idx].trip
    for length in range(1, len(days)):
        ev = evaluate_plan(
            parse_plan(days[:length]),
            references()[idx],
            trip,
            city_states=city_states(),
            partial=True,
        )
        assert ev.failed() == [], (length, ev.violations())
        # The same prefix is not a complete plan.
        full = evaluate_plan(parse_plan(days[:length]), references()[idx], trip)
        assert "complete_information" in full.failed()


# ------------------------------------------------- mutations: each breaks exactly one constraint


def only(ev: PlanEvaluation, *names: str) -> list[str]:
    """Assert the failed checks are ``names``; return the violations of the first one."""
    assert ev.failed() == list(names), ev.violations()
    first = names[0]
    result = ev.commonsense.get(first) or ev.hard[first]
    return list(result.violations)


def test_mutation_unknown_flight_fails_sandbox() -> None:
    days = gold_days(0)
    days[0]["transportation"] = days[0]["transportation"].replace("F3573659", "F0123456")
    # Failing "within sandbox" fails every hard constraint that applies (here: the budget).
    ev = evaluate(0, days)
    assert only(ev, "within_sandbox", "budget") == [
        "day 1 transportation: flight F0123456 from St. Petersburg to Rockford is not in the"
        " reference"
    ]
    assert ev.hard["budget"].passed and ev.hard_blocked  # blocked, not over budget


def test_mutation_invented_restaurant_fails_sandbox_with_a_suggestion() -> None:
    days = gold_days(0)
    days[1]["lunch"] = "Flying Mangoes, Rockford"
    (violation,) = only(evaluate(0, days), "within_sandbox", "budget")
    assert violation.startswith("day 2 lunch: 'Flying Mangoes, Rockford' is not a restaurant")
    assert "did you mean 'Flying Mango'?" in violation


def test_mutation_unavailable_ground_route_fails_sandbox() -> None:
    days = gold_days(0)  # no road between St. Petersburg and Rockford in the reference
    days[2]["transportation"] = "Taxi, from Rockford to St. Petersburg, duration: 1 hour"
    assert only(evaluate(0, days), "within_sandbox", "budget") == [
        "day 3 transportation: no taxi route from Rockford to St. Petersburg is available"
    ]


def test_mutation_restaurant_from_another_city_fails_current_city() -> None:
    days = gold_days(20)
    days[1]["lunch"] = "Red Mesa Cantina, Philadelphia(Pennsylvania)"
    assert only(evaluate(20, days), "within_current_city") == [
        "day 2 lunch: 'Red Mesa Cantina, Philadelphia' is not in Pittsburgh"
    ]


def test_mutation_wrong_destination_fails_the_route() -> None:
    assert only(evaluate(20, gold_days(20), dest="Ohio"), "reasonable_city_route") == [
        "day 1 current_city: Pittsburgh is in Pennsylvania, not in Ohio",
        "day 3 current_city: Philadelphia is in Pennsylvania, not in Ohio",
    ]


def test_mutation_wrong_number_of_cities_fails_the_route() -> None:
    assert only(evaluate(20, gold_days(20), visiting_city_number=3), "reasonable_city_route") == [
        "route: visits 2 cities (Pittsburgh, Philadelphia), the query asks for 3"
    ]


def test_a_revisit_fails_the_route() -> None:
    def day(city: str) -> dict[str, Any]:
        return {"current_city": city}

    trip = replace(queries()[27].trip, visiting_city_number=2)  # St. Louis, California
    cities = [
        "from St. Louis to San Diego",
        "San Diego",
        "from San Diego to Long Beach",
        "from Long Beach to San Diego",
        "San Diego",
        "San Diego",
        "from San Diego to St. Louis",
    ]
    plan = parse_plan([day(c) for c in cities])
    result = check_reasonable_city_route(plan, references()[27], trip, city_states=city_states())
    assert result.violations == (
        "day 4 current_city: comes back to San Diego, already left after day 1",
    )


def test_mutation_repeated_restaurant_fails_diversity() -> None:
    days = gold_days(0)
    days[2]["lunch"] = "Dial A Cake, Rockford"
    assert only(evaluate(0, days), "diverse_restaurants") == [
        "day 3 lunch: 'Dial A Cake, Rockford' was already used on day 2 breakfast"
    ]


def test_mutation_repeated_attraction_fails_diversity() -> None:
    days = gold_days(0)
    days[2]["attraction"] = "Burpee Museum of Natural History, Rockford;" + days[2]["attraction"]
    assert only(evaluate(0, days), "diverse_attractions") == [
        "day 3 attraction: 'Burpee Museum of Natural History, Rockford' was already visited"
        " on day 2"
    ]


def test_mutation_self_driving_mixed_with_flights_fails_transportation() -> None:
    days = gold_days(20)
    days[2]["transportation"] = (
        "Self-driving, from Pittsburgh(Pennsylvania) to Philadelphia(Pennsylvania), cost: 24"
    )
    assert only(evaluate(20, days), "non_conflicting_transportation") == [
        "day 3 transportation: self-driving cannot be mixed with the flight of day 1"
    ]


def test_mutation_no_transport_on_day_one_fails_transportation() -> None:
    days = gold_days(0)
    days[0]["transportation"] = "-"
    ev = evaluate(0, days)
    # A travel day without transport is also incomplete, which blocks the hard constraints.
    assert ev.failed() == ["non_conflicting_transportation", "complete_information", "budget"]


def test_mutation_short_stay_fails_minimum_nights() -> None:
    days = gold_days(0)
    for day in days[:2]:
        day["accommodation"] = "The heart of Brooklyn, Rockford"
    assert only(evaluate(0, days), "minimum_nights") == [
        "days 1-2 accommodation: 'The heart of Brooklyn, Rockford' is booked for 2 nights,"
        " its minimum is 30"
    ]


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda d: d[1].pop("lunch"), "day 2 lunch: missing"),
        (lambda d: d[1].update(dinner="-"), "day 2 dinner: a day in Rockford needs dinner"),
        (
            lambda d: d[1].update(attraction="-"),
            "day 2 attraction: a day in Rockford needs an attraction",
        ),
        (
            lambda d: d[1].update(accommodation="-"),
            "day 2 accommodation: every night but the last needs a place to stay",
        ),
        (lambda d: d.pop(), "plan: has 2 days, the trip lasts 3"),
    ],
)
def test_mutation_dropped_field_fails_complete_information(change: Any, expected: str) -> None:
    days = gold_days(0)
    change(days)
    ev = evaluate(0, days)
    violations = ev.commonsense["complete_information"].violations
    assert expected in violations
    # Dependent failures: without the last day there is no return home; without a bed on
    # day 2 the stay of day 1 lasts one night, under its minimum of 2.
    also = {"plan": ["reasonable_city_route"], "day 2 accommodation": ["minimum_nights"]}
    before = next((v for k, v in also.items() if expected.startswith(k)), [])
    assert ev.failed() == [*before, "complete_information", "budget"], ev.violations()


def test_mutation_budget_below_cost_fails_budget() -> None:
    ev = evaluate(0, gold_days(0))
    assert ev.cost is not None and ev.cost.total == 1608
    assert only(evaluate(0, gold_days(0), budget=1607), "budget") == [
        "plan: costs $1,608, over the budget of $1,607 by $1"
    ]


def test_mutation_no_pets_accommodation_fails_the_house_rule() -> None:
    days = gold_days(44)  # house rule: pets
    for day in days[2:4]:
        day["accommodation"] = "Large bright artistic apartment, Cleveland(Ohio)"
    assert only(evaluate(44, days), "room_rule") == [
        "day 3 accommodation: 'Large bright artistic apartment, Cleveland' says 'No pets',"
        " the query needs pets"
    ]


def test_mutation_private_room_fails_entire_room() -> None:
    days = gold_days(31)  # room type: entire room
    for day in days[:2]:
        day["accommodation"] = "Private room in Manhattan, Washington"
    assert only(evaluate(31, days), "room_type") == [
        "day 1 accommodation: 'Private room in Manhattan, Washington' is a 'Private room',"
        " the query asks for entire room"
    ]


def test_mutation_missing_cuisine_fails_cuisine() -> None:
    days = gold_days(15)  # cuisines: American, French; Biryaniwala is the only French one
    days[1]["breakfast"] = "Lokenath Sweets, Norfolk"
    assert only(evaluate(15, days), "cuisine") == [
        "meals: no restaurant outside Fort Lauderdale serves French"
    ]


def test_mutation_flight_under_no_flight_fails_transportation() -> None:
    assert only(evaluate(0, gold_days(0), transportation="no flight"), "transportation") == [
        "day 1 transportation: uses flight, the query says no flight",
        "day 3 transportation: uses flight, the query says no flight",
    ]
    driving = evaluate(1, gold_days(1), transportation="no self-driving")
    assert only(driving, "transportation")[0].startswith("day 1 transportation: uses self-driving")


# ------------------------------------------------------------------------------------ metrics


def test_metrics_count_undelivered_plans_and_blocked_hard_constraints() -> None:
    trip = queries()[30].trip  # hard: 1 budget + 3 local constraints
    ref = references()[30]
    missing = evaluate_plan(None, ref, trip)
    broken_days = gold_days(30)
    broken_days[1]["lunch"] = "Nowhere Diner, Fayetteville"
    broken = evaluate_plan(parse_plan(broken_days), ref, trip, city_states=city_states())
    good = evaluate_plan(parse_plan(gold_days(30)), ref, trip, city_states=city_states())
    m = metrics([missing, broken, good])
    assert (m.plans, m.delivered) == (3, 2)
    assert m.commonsense_checks == 24 and m.commonsense_checks_passed == 7 + 8
    assert m.hard_checks == 12 and m.hard_checks_passed == 4  # the broken plan's are blocked
    assert m.commonsense_macro == m.hard_macro == m.final_pass_rate == pytest.approx(1 / 3)
    assert m.delivery_rate == pytest.approx(2 / 3)
    assert metrics([]).final_pass_rate == 0.0


def test_cost_breakdown_uses_people_cars_and_rooms() -> None:
    ev = evaluate(20, gold_days(20))  # 6 people
    assert ev.cost is not None
    by_unit = {(item.field, item.unit): item.multiplier for item in ev.cost.items}
    assert by_unit[("transportation", "people")] == 6  # flights
    assert by_unit[("transportation", "taxis")] == 2  # ceil(6 / 4)
    assert by_unit[("lunch", "people")] == 6
    assert ev.cost.total == sum(ev.cost.by_field().values())
    assert "accommodation" in ev.cost.by_field()


# ------------------------------------------------------------------------- parsing and loading


def test_entities_keep_commas_in_names_and_drop_state_suffixes() -> None:
    e = parse_entity("Red Ginger Sushi, Grill & Bar, Philadelphia(Pennsylvania)")
    assert (e.name, e.city) == ("Red Ginger Sushi, Grill & Bar", "Philadelphia")
    # The plan format cannot keep a name's trailing space; lookups ignore it.
    stay = parse_entity("Peaceful, beautiful home away , Denver")
    assert references()[4].accommodation(stay.name, stay.city) is not None


def test_legs_are_parsed() -> None:
    flight = parse_leg(
        "Flight Number: F3947470, from Nashville to Pittsburgh(Pennsylvania),"
        " Departure Time: 09:54, Arrival Time: 12:15"
    )
    assert (flight.mode, flight.flight_number, flight.origin, flight.dest) == (
        "flight",
        "F3947470",
        "Nashville",
        "Pittsburgh",
    )
    assert (flight.departure, flight.arrival) == ("09:54", "12:15")
    taxi = parse_leg("Taxi, from Sault Ste. Marie to Pellston(Michigan), duration: 1 hour")
    assert (taxi.mode, taxi.origin, taxi.dest) == ("taxi", "Sault Ste. Marie", "Pellston")


def test_unreadable_fields_are_reported_not_raised() -> None:
    days = gold_days(0)
    days[1]["lunch"] = "Flying Mango"  # no city
    days[0]["transportation"] = "by boat"
    plan = parse_plan(days)
    assert plan.problems == [
        "day 1 transportation: no 'from A to B' in 'by boat'",
        "day 2 lunch: expected 'Name, City', got 'Flying Mango'",
    ]
    ev = evaluate(0, days)
    assert "within_sandbox" in ev.failed()
    with pytest.raises(UsageError, match=r"^plan: day 1 transportation: no 'from A to B'"):
        parse_plan(days, strict=True)


@pytest.mark.parametrize(
    "data, message",
    [
        ({"plan": 3}, "plan: a plan must be a list of day objects"),
        (["day one"], "plan: day 1 must be an object, got str"),
    ],
)
def test_bad_plan_shapes_are_one_line_errors(data: Any, message: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_plan(data)
    assert info.value.one_line() == message


def _reference_line(idx: int) -> dict[str, Any]:
    lines = (TP / "reference_info.jsonl").read_text(encoding="utf-8").splitlines()
    return dict(json.loads(lines[idx]))


@pytest.mark.parametrize(
    "section, position, change, message",
    [
        (
            "restaurants",
            1,
            {"average_cost": "cheap"},
            "restaurants[1] 'Flying Mango': 'average_cost' must be a number, got text",
        ),
        ("accommodations", 0, {"minimum_nights": 1.5}, "'minimum_nights' must be a whole number"),
        ("accommodations", 0, {"room_type": "Castle"}, "unknown room_type 'Castle'"),
        ("accommodations", 0, {"maximum_occupancy": 0}, "'maximum_occupancy' must be a number"),
        ("flights", 0, {"price": None}, "flights[0] 'F3573659': 'price' must be a number"),
        ("ground_transport", 0, {"mode": "horse"}, "unknown mode 'horse'"),
        ("attractions", 2, {"name": ""}, "attractions[2]: 'name' is empty"),
    ],
)
def test_bad_reference_records_are_named(
    section: str, position: int, change: dict[str, Any], message: str
) -> None:
    data = _reference_line(0)
    data[section] = list(data[section])
    data[section][position] = {**data[section][position], **change}
    with pytest.raises(FllmError) as info:
        reference_from_json(data, "reference_info.jsonl:1")
    text = info.value.one_line()
    assert text.startswith("reference_info.jsonl:1 (idx 0): ") and message in text
    assert "\n" not in text


def test_bad_queries_are_one_line_errors() -> None:
    raw = json.loads((TP / "queries.jsonl").read_text(encoding="utf-8").splitlines()[0])
    for change, message in [
        ({"people_number": 0}, "'people_number' must be a whole number >= 1"),
        ({"local_constraint": {"room type": "castle"}}, "unknown room type 'castle'"),
        ({"budget": "lots"}, "'budget' must be a number"),
    ]:
        with pytest.raises(UsageError, match=message):
            query_from_json({**raw, **change}, "queries.jsonl:1")
