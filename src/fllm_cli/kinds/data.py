"""Data-bound domains (``kind: data``): plans whose options are records of the task's data.

The domain's sections are read by :mod:`fllm_cli.databound.spec`; a task brings its data (a JSON
object, ``--data``). Planning reads the request from the task text, builds the Z3 model of the
trip, refuses an impossible request with the rules that conflict, then lets the model choose
within the feasible options (:mod:`fllm_cli.databound.search`).
"""

from __future__ import annotations

from typing import Any, ClassVar

import z3

from fllm_cli.databound.csp import TripModel
from fllm_cli.databound.document import build_days, check_plan
from fllm_cli.databound.request import Reading, RequestReader, check_given, values_of
from fllm_cli.databound.search import DataPlanner
from fllm_cli.databound.spec import DataSpec, RequestField, read_spec
from fllm_cli.databound.tables import load_tables
from fllm_cli.diagnostics import Diagnostic
from fllm_cli.domain.check import check_templates
from fllm_cli.domain.model import Domain
from fllm_cli.errors import NoPlanError, SpecError, UsageError
from fllm_cli.kinds.base import Kind, PlanJob, PlanResult
from fllm_cli.llm.base import ChoiceRequest, Model
from fllm_cli.llm.meter import RunMeter
from fllm_cli.prompts import render
from fllm_cli.search.planner import Budgets, Event

PLAN_FORMAT = 1


# A domain's sections are read once per Domain object (check, summary and planning all need
# them, and api.load_domain checks before planning). Domains hold dicts, so they are not
# hashable: the last few are kept by identity.
_SPECS: list[tuple[Domain, tuple[DataSpec | None, list[Diagnostic]]]] = []
_KEEP = 8


def spec_of(domain: Domain) -> tuple[DataSpec | None, list[Diagnostic]]:
    """Return the data spec of ``domain`` and its diagnostics, reading the sections once."""
    for known, result in _SPECS:
        if known is domain:
            return result
    result = read_spec(domain)
    _SPECS.append((domain, result))
    del _SPECS[:-_KEEP]
    return result


def data_spec(domain: Domain) -> DataSpec:
    spec, diagnostics = spec_of(domain)
    if spec is None:
        raise SpecError(diagnostics)
    return spec


class DataKind(Kind):
    """``kind: data``."""

    name = "data"
    takes_data: ClassVar[bool] = True

    def check(self, domain: Domain) -> list[Diagnostic]:
        spec, diagnostics = spec_of(domain)
        return diagnostics + (check_templates(domain) if spec is not None else [])

    def summary(self, domain: Domain) -> str:
        spec, _ = spec_of(domain)
        if spec is None:
            return "a data-bound domain"
        return (
            f"a data-bound domain: {len(spec.request)} request fields, {len(spec.tables)} "
            f"tables, {len(spec.slots)} slots a day, {len(spec.constraints)} rules"
        )

    def compile(self, domain, task, inputs, output, variables):  # type: ignore[no-untyped-def]
        raise UsageError(f"'{domain.name}' is a data domain: give the task's data with --data FILE")

    def overview(self, domain: Domain, variables: dict[str, str]) -> Any:
        raise UsageError(f"'{domain.name}' is a data domain: it has no automaton to draw")

    def plan_task(self, domain: Domain, job: PlanJob, model: Model) -> PlanResult:
        """Plan a task on the data it brings (``job.data``); the request is read from the text
        unless ``job.request`` gives it."""
        self.refuse_interface(domain, job.inputs, job.output)
        if job.data is None:
            raise UsageError(
                f"'{domain.name}' is a data domain: give the task's data with --data FILE"
            )
        doc, stats = self.plan_data(
            domain,
            job.task,
            job.data,
            model,
            given=job.request,
            budgets=job.budgets,
            on_event=job.on_event,
            records=job.records,
        )
        return PlanResult(doc, None, stats, job.records)

    def check_with_data(
        self, domain: Domain, plan: Any, data: Any, request: dict[str, Any] | None
    ) -> dict[str, Any]:
        """Check a plan against the task's data; the request comes from ``request``, else from
        the plan document's own ``request`` (a plan fllm made)."""
        given = request
        if given is None and isinstance(plan, dict) and isinstance(plan.get("request"), dict):
            given = plan["request"]
        if given is None:
            raise UsageError(
                "give the request's values with --constraints FILE (or a plan JSON made by fllm)"
            )
        return self.check_data_plan(domain, plan, data, given)

    def read_request(
        self,
        domain: Domain,
        task: str,
        data: Any,
        meter: RunMeter,
        given: Any = None,
        where: str = "data",
    ) -> tuple[DataSpec, dict[str, Any], dict[str, Reading]]:
        """Load the data and read the request (the model picks among candidates)."""
        spec = data_spec(domain)
        tables = load_tables(spec, data, where)
        fixed = check_given(spec, given, "--constraints") if given is not None else None
        search = tuple(domain.prompt_dirs)

        def ask(spec_field: RequestField, options: list[str]) -> int:
            prompt = render(
                "data/request.j2",
                {"task": task, "question": spec_field.question, "choices": options},
                search,
            )
            request = ChoiceRequest(prompt, tuple(options), "request")
            return meter.choose(request, field=spec_field.name).index

        readings = RequestReader(spec, tables, ask).read(task, fixed)
        return spec, tables, readings

    def plan_data(
        self,
        domain: Domain,
        task: str,
        data: Any,
        model: Any,
        *,
        given: Any = None,
        budgets: Budgets | None = None,
        on_event: Event | None = None,
        records: list[dict[str, Any]] | None = None,
        where: str = "data",
    ) -> tuple[dict[str, Any], Any]:
        """Plan a task on its data; return the plan document and the search stats."""
        meter = RunMeter.wrap(model).fork(records=records if records is not None else [])
        spec, tables, readings = self.read_request(domain, task, data, meter, given, where)
        request = values_of(readings)
        trip = TripModel(spec, tables, request)
        if trip.check() != z3.sat:
            message, hint = trip.explain()
            raise NoPlanError(message, hint=hint or None)
        # A request field named 'objective' (read from "as cheap as possible", or given by
        # --objective) turns the model's choices into a least-cost plan.
        objective = request.get("objective") if "objective" in spec.request else None
        planner = DataPlanner(
            trip, meter, task, readings, tuple(domain.prompt_dirs), budgets, on_event, objective
        )
        outcome = planner.run()
        home = str(request.get(spec.trip.home) or "")
        days, items = build_days(trip, outcome, home)
        report = check_plan(spec, tables, request, days)
        if not report.valid:  # a bug, never the user's: refuse to present it as valid
            raise NoPlanError(
                f"internal error: the planned trip breaks a rule: {report.violations[0]}"
            )
        stats = outcome.stats.as_dict()
        stats["request_calls"] = meter.calls - outcome.stats.llm_calls
        stats["llm_calls"] = meter.calls
        ms = sorted(outcome.lookahead_ms)
        stats["lookahead_ms_median"] = round(ms[len(ms) // 2], 2) if ms else 0.0
        doc = {
            "fllm_plan": PLAN_FORMAT,
            "kind": "data",
            "domain": domain.name,
            "domain_path": domain.path,
            "task": task,
            "request": {k: r.value for k, r in readings.items()},
            "read_by": {k: r.decided_by for k, r in readings.items()},
            # the other values the text supported, for fields it left open
            "read_alternatives": {
                k: [v for v in r.candidates if v != r.value]
                for k, r in readings.items()
                if r.decided_by in ("model", "larger", "smaller", "cue") and len(r.candidates) > 1
            },
            "valid": True,
            "plan": days,
            "costs": items,
            "total_cost": round(report.total, 2),
            **_money(spec),
            "stats": stats,
        }
        return doc, outcome.stats

    def check_data_plan(
        self, domain: Domain, plan: Any, data: Any, given: Any, where: str = "data"
    ) -> dict[str, Any]:
        """Check a plan written by anyone; return the report (valid, violations, cost)."""
        spec = data_spec(domain)
        tables = load_tables(spec, data, where)
        request = check_given(spec, given or {}, "the request")
        days = plan.get("plan") if isinstance(plan, dict) else plan
        report = check_plan(spec, tables, request, days)
        return {
            "valid": report.valid,
            "violations": [str(v) for v in report.violations],
            "total_cost": round(report.total, 2),
            **_money(spec),
            "days": len(days) if isinstance(days, list) else 0,
        }


def _money(spec: DataSpec) -> dict[str, Any]:
    """How a document's amounts are written, and which request field bounds the total."""
    bound, currency = spec.money()
    return {"currency": currency.as_dict(), "bound": bound}
