"""Strategies on data-bound domains (a kind that takes data): planning with the task's records.

* ``formal``: ``api.plan_task`` on the task's data; the request is read from the task text.
* ``formal-given``: the same, with the request's values taken from the task line (its
  ``request``, or the benchmark's structured fields) — the ablation without request reading.
* ``zero-shot``: the benchmark's sole-planning baseline. The model is shown the request and every
  record of the data (as the plan must write it, with its other fields) and writes the whole plan
  as JSON (``prompts/data/zero_shot.j2``). A model that decodes under a grammar is held to a JSON
  schema of the day format; a reply that still does not read as a list of day objects is a plan
  not delivered (``error_kind: parse``), never a crash.
* ``gold``: the task's gold plan, as it is: checks the data, the scorer and the domain's rules.

A delivered plan is checked with the domain's own rules (``fllm verify --data``) against the
request when the line gives it; ``valid`` says whether it keeps them. A plan that breaks them is
still kept in the row, since a benchmark's scorer judges every delivered plan.
"""

from __future__ import annotations

import json
import re
import threading
from functools import lru_cache
from typing import Any

from fllm_cli import api
from fllm_cli.bench.tasks import BenchTask
from fllm_cli.content import make_language
from fllm_cli.databound.spec import Constraint, DataSpec, Slot, templates_fields
from fllm_cli.databound.tables import load_tables
from fllm_cli.domain.model import Domain
from fllm_cli.errors import FllmError, UsageError
from fllm_cli.kinds.data import PLAN_FORMAT, data_spec
from fllm_cli.llm.base import GenerateRequest
from fllm_cli.llm.meter import RunMeter
from fllm_cli.prompts import render
from fllm_cli.search.planner import Budgets
from fllm_cli.textio import json_depth

DATA_STRATEGIES = ("formal", "formal-given", "zero-shot", "gold")
TEMPLATE = "data/zero_shot.j2"
MAX_TOKENS = 3072  # a 7-day plan of TravelPlanner is about 1,500 tokens of JSON
MAX_DAYS = 31
MAX_REPLY_DEPTH = 16
# Z3's default context, which the data kind's look-ahead uses, is not thread-safe: in one process
# formal units plan one at a time (--concurrency still overlaps the baselines' model calls, and
# --executor ray runs formal units in parallel processes).
_SOLVER = threading.Lock()


class PlanParseError(ValueError):
    """A reply that holds no plan: the message says why, in one line."""


class TaskDataError(FllmError):
    """The task lacks something a strategy needs (its request fields, its gold plan)."""


def run_data(
    domain: Domain,
    task: BenchTask,
    strategy: str,
    meter: RunMeter,
    row: dict[str, Any],
    budgets: Budgets,
    model_name: str,
) -> list[dict[str, Any]]:
    """Run one data-bound task with ``strategy``; fill ``row``; return the choice trace."""
    if task.data is None:
        raise TaskDataError("the task has no data (give --data FILE.jsonl or a 'data' object)")
    if strategy in ("formal", "formal-given"):
        return _formal(domain, task, strategy == "formal-given", meter, row, budgets, model_name)
    if strategy == "zero-shot":
        _zero_shot(domain, task, meter, row, model_name)
    elif strategy == "gold":
        if task.gold is None:
            raise TaskDataError("the task has no gold plan (give --gold FILE.jsonl)")
        _check(domain, task, task.gold, row, model_name)
    else:
        raise UsageError(f"'{strategy}' does not apply to data domains")
    return []


def _formal(
    domain: Domain,
    task: BenchTask,
    given: bool,
    meter: RunMeter,
    row: dict[str, Any],
    budgets: Budgets,
    model_name: str,
) -> list[dict[str, Any]]:
    if given and task.request is None:
        raise TaskDataError("formal-given needs the request's fields on the task line")
    trace: list[dict[str, Any]] = []
    with _SOLVER:
        result = api.plan_task(
            domain,
            task.text,
            meter,
            data=task.data,
            request=task.request if given else None,
            budgets=budgets,
            trace=trace,
        )
    doc = result.document
    doc["model"] = model_name
    row["stats"] = {**doc["stats"], **meter.summary()}
    row.update(valid=True, plan=doc)
    return trace


def _zero_shot(
    domain: Domain, task: BenchTask, meter: RunMeter, row: dict[str, Any], model_name: str
) -> None:
    spec = data_spec(domain)
    prompt = render(TEMPLATE, prompt_vars(domain, spec, task), tuple(domain.prompt_dirs))
    grammar = plan_grammar(day_fields(spec), *trip_lengths(spec))
    gen = meter.generate(
        GenerateRequest(prompt, max_tokens=MAX_TOKENS, kind="bench", grammar=grammar)
    )
    row["reply"] = gen.text
    try:
        days = parse_reply(gen.text)
    except PlanParseError as exc:
        row.update(valid=False, plan=None, error=str(exc), error_kind="parse")
        return
    _check(domain, task, days, row, model_name)


def _check(
    domain: Domain, task: BenchTask, days: list[Any], row: dict[str, Any], model_name: str
) -> None:
    """Check a delivered plan with the domain's rules; the row keeps it either way."""
    report = api.verify_data(domain, days, task.data, task.request or {})
    doc = {
        "fllm_plan": PLAN_FORMAT,
        "kind": "data",
        "domain": domain.name,
        "domain_path": domain.path,
        "task": task.text,
        "model": model_name,
        "request": task.request,
        "valid": report["valid"],
        "violations": report["violations"],
        "plan": days,
        "total_cost": report["total_cost"],
    }
    row.update(valid=report["valid"], plan=doc)
    if not report["valid"]:
        first = report["violations"][0] if report["violations"] else "breaks a rule"
        more = len(report["violations"]) - 1
        row.update(error=first + (f" (and {more} more)" if more > 0 else ""), error_kind="verify")


def check_data(domain: Domain, data: Any) -> None:
    """Raise UsageError (one line) when a task's data does not fit the domain's tables."""
    load_tables(data_spec(domain), data, "the task's data")


# ------------------------------------------------------------------------------ the prompt


def day_fields(spec: DataSpec) -> tuple[str, ...]:
    """Return the keys of a day object, in the order a plan writes them."""
    return ("days", "current_city", *spec.slots)


def prompt_vars(domain: Domain, spec: DataSpec, task: BenchTask) -> dict[str, Any]:
    """Return the variables of the zero-shot prompt: the task, its records, the plan format."""
    tables = load_tables(spec, task.data, "the task's data")
    shown = []
    for name, table in spec.tables.items():
        written = {f.lower() for f in templates_fields(table.write)}
        hidden = written | set(table.constants) | ({table.keep} if table.keep else set())
        records = []
        for record in tables[name]:
            details = [
                f"{key} {_text(value)}"
                for key, value in record.values.items()
                if key not in hidden and value is not None
            ]
            records.append({"written": record.written(table), "details": "; ".join(details)})
        shown.append({"name": name, "records": records})
    slots = [_slot(slot) for slot in spec.slots.values()]
    count = spec.trip.stops_count
    stops = (
        [{"days": None, "count": count}]
        if isinstance(count, int)
        else [{"days": d, "count": c} for d, c in sorted(count.items())]
    )
    example = {"days": 1, "current_city": "from A to B", **dict.fromkeys(spec.slots, "...")}
    return {
        "task": task.text,
        "domain": domain.name,
        "description": domain.description,
        "tables": shown,
        "slots": slots,
        "stops": stops,
        "rules": [_rule(c) for c in spec.constraints],
        "fields": list(day_fields(spec)),
        "example": json.dumps(example, ensure_ascii=False),
    }


def _slot(slot: Slot) -> dict[str, Any]:
    return {
        "name": slot.name,
        "per": slot.per,
        "tables": list(slot.tables),
        "need": slot.need,
        "suffix": slot.suffix,
    }


def _rule(constraint: Constraint) -> str:
    text = constraint.describe()
    if constraint.rule == "total" and constraint.cost:
        costs = "; ".join(
            f"each {table} record costs {e.text}" for table, e in constraint.cost.items()
        )
        text += f" ({costs})"
    return text


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def trip_lengths(spec: DataSpec) -> tuple[int, int]:
    """Return the fewest and most days of a trip the domain plans (its ``stops`` by days)."""
    count = spec.trip.stops_count
    if isinstance(count, dict) and count:
        return min(count), max(count)
    return 1, MAX_DAYS


@lru_cache(maxsize=8)
def plan_grammar(fields: tuple[str, ...], min_days: int = 1, max_days: int = MAX_DAYS) -> str:
    """Return the GBNF of a plan: a JSON list of day objects with ``fields`` in order.

    The number of days is bounded by the trip lengths the domain declares, so a model that keeps
    writing days stops at the longest trip instead of running out of tokens.
    """
    properties: dict[str, Any] = {
        key: {"type": "integer" if key == "days" else "string"} for key in fields
    }
    schema = {
        "type": "array",
        "minItems": max(1, min_days),
        "maxItems": max(1, min_days, max_days),
        "items": {"type": "object", "properties": properties},
    }
    return make_language("json-schema", schema).gbnf()


# ------------------------------------------------------------------------------ the reply

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)


def parse_reply(text: str) -> list[dict[str, Any]]:
    """Return the plan a reply writes: a JSON list of day objects (or ``{"plan": [...]}``).

    The JSON may stand alone, sit in a fenced block, or follow some prose; the first value that
    reads as a plan wins.
    """
    if not text.strip():
        raise PlanParseError("model produced no plan")
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    problem = "the reply holds no JSON list of day objects"
    for candidate in candidates:
        for start in [i for i, ch in enumerate(candidate) if ch in "[{"][:20]:
            piece = candidate[start:]
            if json_depth(piece) > MAX_REPLY_DEPTH:
                raise PlanParseError(f"the reply nests JSON deeper than {MAX_REPLY_DEPTH} levels")
            try:
                value, _ = decoder.raw_decode(piece)
            except (ValueError, RecursionError):
                continue
            if isinstance(value, dict) and isinstance(value.get("plan"), list):
                value = value["plan"]
            if isinstance(value, list):
                days = _days(value)
                if isinstance(days, str):
                    problem = days
                    continue
                return days
    if text.count("[") > text.count("]"):
        problem = "the reply's JSON is cut short (it ran out of tokens?)"
    raise PlanParseError(problem)


def _days(value: list[Any]) -> list[dict[str, Any]] | str:
    """Return the day objects of a parsed list, or why it is not a plan."""
    if not value:
        return "the plan is an empty list"
    bad = next((n for n, day in enumerate(value, 1) if not isinstance(day, dict)), None)
    if bad is not None:
        return f"day {bad} of the plan is not a JSON object"
    if len(value) > MAX_DAYS:
        return f"the plan has {len(value)} days (at most {MAX_DAYS})"
    return [{str(k): v for k, v in day.items()} for day in value]
