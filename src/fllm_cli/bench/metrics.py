"""A benchmark's own metrics for data-bound domains: which apply, per plan and per run.

A scorer is chosen by what the domain declares, never by its name or file: the TravelPlanner
metrics apply to any data-bound domain whose plans are TravelPlanner's day dicts (its slots are
the benchmark's plan fields) and whose request has the benchmark's fields. A task is scored
when its line carries the benchmark's structured fields (``org``, ``dest``, ``days``, ...) and
its data is reference information; a line with neither is simply not scored.

Per plan, :meth:`Scorer.score` returns plain JSON (it goes into the results file); per run,
:meth:`Scorer.summarize` aggregates those, overall and per group. Every number comes from
:mod:`fllm_cli.travel`, the evaluator written from the benchmark's rules, which shares no code
with the planner.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, ClassVar

from fllm_cli.domain.model import Domain
from fllm_cli.errors import FllmError
from fllm_cli.kinds import kind_of
from fllm_cli.kinds.data import spec_of
from fllm_cli.travel import (
    Metrics,
    evaluate_plan,
    metrics,
    parse_plan,
    query_from_json,
    reference_from_json,
)
from fllm_cli.travel.evaluate import LEVELS, TravelQuery
from fllm_cli.travel.plan import FIELDS

MAX_VIOLATIONS = 20


class Scorer:
    """The metrics of one benchmark over data-bound plans."""

    name: ClassVar[str]
    # (summary key, table label) of the rates, in display order; rates are fractions.
    columns: ClassVar[tuple[tuple[str, str], ...]]
    # The per-plan groups the summary breaks down by (each gives a "by_<group>" table).
    groups: ClassVar[tuple[str, ...]] = ()

    def applies(self, domain: Domain) -> bool:
        """Say whether the domain's plans are this benchmark's plans."""
        raise NotImplementedError

    def check_task(self, fields: dict[str, Any], data: Any) -> bool:
        """Return whether a task can be scored; raise ValueError when its fields are wrong."""
        raise NotImplementedError

    def request(self, fields: dict[str, Any]) -> dict[str, Any] | None:
        """Return the request's values (domain field names) from the line's fields, if any."""
        return None

    def score(self, fields: dict[str, Any], data: Any, plan: Any) -> dict[str, Any]:
        """Score one plan (``None``: nothing was delivered)."""
        raise NotImplementedError

    def summarize(self, scores: list[dict[str, Any]]) -> dict[str, Any]:
        """Aggregate the scores of one strategy's plans."""
        raise NotImplementedError


class TravelPlannerMetrics(Scorer):
    """TravelPlanner (Xie et al., 2024): delivery, commonsense and hard micro/macro, final pass."""

    name = "travelplanner"
    columns = (
        ("delivery_rate", "delivery %"),
        ("commonsense_micro", "CS micro %"),
        ("commonsense_macro", "CS macro %"),
        ("hard_micro", "hard micro %"),
        ("hard_macro", "hard macro %"),
        ("final_pass_rate", "final %"),
    )
    groups = ("level", "days")
    # The structured fields a scoreable line has; without all of them it is not scored.
    NEEDED = ("org", "dest", "days", "visiting_city_number", "people_number", "budget")
    # TravelPlanner's fields, by the name of the request field they give.
    REQUEST = (
        "org",
        "dest",
        "days",
        "dates",
        "people_number",
        "budget",
        "house_rule",
        "cuisine",
        "room_type",
        "transportation",
    )

    def applies(self, domain: Domain) -> bool:
        if not kind_of(domain).takes_data:
            return False
        spec, _ = spec_of(domain)
        if spec is None:
            return False
        slots = {"days", "current_city", *spec.slots}
        return slots == set(FIELDS) and set(self.REQUEST) <= set(spec.request)

    def check_task(self, fields: dict[str, Any], data: Any) -> bool:
        present = [key for key in self.NEEDED if key in fields]
        if not present:
            return False
        self._query(fields)
        try:
            reference_from_json(data, "the task's data")
        except FllmError as exc:
            raise ValueError(exc.message) from None
        return True

    def _query(self, fields: dict[str, Any]) -> TravelQuery:
        try:
            return query_from_json(fields, "the task's TravelPlanner fields")
        except FllmError as exc:
            raise ValueError(exc.message) from None

    def request(self, fields: dict[str, Any]) -> dict[str, Any] | None:
        if not all(key in fields for key in self.NEEDED):
            return None
        local = fields.get("local_constraint") or {}
        return {
            "org": fields["org"],
            "dest": fields["dest"],
            "days": fields["days"],
            "dates": fields.get("date") or None,
            "people_number": fields["people_number"],
            "budget": fields["budget"],
            "house_rule": local.get("house rule"),
            "cuisine": local.get("cuisine"),
            "room_type": local.get("room type"),
            "transportation": local.get("transportation"),
        }

    def score(self, fields: dict[str, Any], data: Any, plan: Any) -> dict[str, Any]:
        query = self._query(fields)
        reference = reference_from_json(data, "the task's data")
        parsed = None
        if plan:
            try:
                parsed = parse_plan(plan, "plan")
            except FllmError:
                parsed = None  # not a list of day objects: nothing usable was delivered
        ev = evaluate_plan(parsed, reference, query.trip, idx=query.idx, level=query.level)
        return {
            "metrics": self.name,
            "delivered": ev.delivered,
            "commonsense_pass": ev.commonsense_pass,
            "hard_pass": ev.hard_pass,
            "final_pass": ev.final_pass,
            "failed": ev.failed(),
            "violations": ev.violations()[:MAX_VIOLATIONS],
            "counts": asdict(metrics([ev])),
            "group": {"level": query.level or "all", "days": str(query.trip.days)},
        }

    def summarize(self, scores: list[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {"scored": len(scores), **_rates(scores)}
        for group in self.groups:
            names = sorted(
                {str(s["group"].get(group)) for s in scores},
                key=lambda g: _group_order(group, g),
            )
            out[f"by_{group}"] = {
                name: {
                    "tasks": len(mine),
                    **_rates(mine),
                }
                for name in names
                if (mine := [s for s in scores if str(s["group"].get(group)) == name])
            }
        return out


def _rates(scores: list[dict[str, Any]]) -> dict[str, float]:
    """Sum the per-plan counts and return the benchmark's rates over them (fractions)."""
    totals = dict.fromkeys(Metrics.__dataclass_fields__, 0)
    for s in scores:
        for key in totals:
            totals[key] += int(s["counts"].get(key, 0))
    return {key: round(value, 4) for key, value in Metrics(**totals).rates().items()}


def _group_order(group: str, name: str) -> tuple[int, int, str]:
    if group == "level":
        return (LEVELS.index(name) if name in LEVELS else len(LEVELS), 0, name)
    return (0, int(name), name) if name.isdigit() else (1, 0, name)


SCORERS: dict[str, Scorer] = {s.name: s for s in (TravelPlannerMetrics(),)}


def scorer_for(domain: Domain) -> Scorer | None:
    """Return the benchmark metrics that apply to the domain's plans, if any."""
    return next((s for s in SCORERS.values() if s.applies(domain)), None)


def reward(scores: dict[str, Any] | None, valid: bool) -> float:
    """Return a plan's reward for ``--record``: reference F1, else the share of checks passed."""
    if not scores:
        return 1.0 if valid else 0.0
    if "f1" in scores:
        return float(scores["f1"])
    counts = scores.get("counts") or {}
    total = counts.get("commonsense_checks", 0) + counts.get("hard_checks", 0)
    passed = counts.get("commonsense_checks_passed", 0) + counts.get("hard_checks_passed", 0)
    return round(passed / total, 4) if total else 0.0
