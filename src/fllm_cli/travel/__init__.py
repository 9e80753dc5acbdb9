"""TravelPlanner (Xie et al., 2024): typed reference information, plans, and the evaluator.

A pure library: no command line and no printing. ``reference`` loads a query's sandbox,
``plan`` parses the benchmark's plan format and ``evaluate`` scores plans against the 8
commonsense and 5 hard constraints (see ``docs/travelplanner.md``).
"""

from __future__ import annotations

from fllm_cli.travel.evaluate import (
    COMMONSENSE,
    HARD,
    CheckResult,
    CostBreakdown,
    CostItem,
    Metrics,
    PlanEvaluation,
    Scores,
    TravelQuery,
    TripConstraints,
    cost_breakdown,
    evaluate_plan,
    evaluate_queries,
    load_queries,
    metrics,
    query_from_json,
    score,
)
from fllm_cli.travel.plan import Day, Entity, Leg, Plan, load_plans, parse_plan, parse_plan_text
from fllm_cli.travel.reference import (
    ReferenceInfo,
    load_city_states,
    load_references,
    parse_city_states,
    reference_from_json,
)

__all__ = [
    "COMMONSENSE",
    "HARD",
    "CheckResult",
    "CostBreakdown",
    "CostItem",
    "Day",
    "Entity",
    "Leg",
    "Metrics",
    "Plan",
    "PlanEvaluation",
    "ReferenceInfo",
    "Scores",
    "TravelQuery",
    "TripConstraints",
    "cost_breakdown",
    "evaluate_plan",
    "evaluate_queries",
    "load_city_states",
    "load_plans",
    "load_queries",
    "load_references",
    "metrics",
    "parse_city_states",
    "parse_plan",
    "parse_plan_text",
    "query_from_json",
    "reference_from_json",
    "score",
]
