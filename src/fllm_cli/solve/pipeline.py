"""The LLMFP pipeline: define, formulate, generate code, run it, format, assess and modify.

The model never plans by itself: it states the optimisation problem, describes its variables
as checked JSON, and writes Z3 code that fllm runs in a sandbox. Runtime errors go back to the
model with the code and the traceback; a self-assessment step may replace the first wrong step,
after which the pipeline continues from there.
"""

from __future__ import annotations

import functools
import json
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from fllm_cli.content import make_language
from fllm_cli.llm.base import GenerateRequest, Model
from fllm_cli.llm.meter import RunMeter
from fllm_cli.prompts import render
from fllm_cli.solve.pddl import Check, Task, simulate
from fllm_cli.solve.problem import Problem
from fllm_cli.solve.sandbox import ExecResult, Limits, run_code
from fllm_cli.solve.schema import (
    ReplyError,
    check_formulation,
    extract_code,
    extract_json,
    reply_schema,
)


@dataclass(frozen=True)
class Settings:
    """Budgets of one solve."""

    max_attempts: int = 5
    max_rounds: int = 5
    max_tokens: int = 4096
    limits: Limits = field(default_factory=Limits)
    max_horizon: int | None = None
    max_seconds: float | None = None  # wall clock of one solve; no stage starts after it
    allow_unisolated: bool = False  # run generated code even without seccomp + Landlock


@dataclass
class SolveResult:
    """The answer to one query, in the fixed shape of its problem kind."""

    problem: str
    kind: str
    query: str
    status: str = "error"  # solver status: sat, unsat, unknown, no-solver, error
    objective: Any = None
    solution: Any = None
    plan: list[str] | None = None
    plan_check: dict[str, Any] | None = None
    horizon: int | None = None
    accepted: bool = False
    rounds: int = 0
    runs: int = 0
    error: str = ""
    isolation: str = ""  # sandbox layers in force for the last run of generated code
    stats: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Return the result as plain JSON data."""
        return asdict(self)


_STEP_QUESTIONS = {
    "DEFINITION": "Is the goal right, and are all needed constraints there and no wrong ones?",
    "FORMULATION": "Do the variables encode the query and every constraint and the goal, in a "
    "sensible order?",
    "CODE": "Does the code create every needed variable, invent no data, and answer the query?",
}


class Session:
    """One solve: the model, the problem, the stage statistics and the trace.

    Model calls go through a fork of the run meter (the caller's, when ``model`` is one), which
    enforces the query's wall-clock budget and any cost ceiling and records the trace; the
    query's own records are also kept in ``trace``.
    """

    def __init__(self, model: Model, problem: Problem, query: str, settings: Settings) -> None:
        self.model = model
        self.problem = problem
        self.query = query
        self.settings = settings
        self.trace: list[dict[str, Any]] = []
        self.meter = RunMeter.wrap(model).fork(max_seconds=settings.max_seconds, records=self.trace)
        # One child meter per stage charges that stage's usage; code runs are counted apart.
        self.stages: dict[str, RunMeter] = {}
        self.runs = 0
        self.run_seconds = 0.0

    def check_time(self, stage: str) -> None:
        """Raise once the query's time (or the run's money) is spent, naming ``stage``."""
        self.meter.check(stage)

    def vars(self, **extra: Any) -> dict[str, Any]:
        """Return the template variables every stage shares."""
        p = self.problem
        base = {
            "description": p.description.strip(),
            "background": p.background() or "(none)",
            "query": self.query.strip(),
            "objective": p.objective or "total_cost",
            "sense": p.sense,
            "multi_step": p.multi_step,
            "feedback": "",
            "definition": "",
            "has_data": bool(p.data.strip()),
        }
        base.update(extra)
        return base

    def ask(self, stage: str, prompt: str, schema: dict[str, Any] | None = None) -> str:
        """Send one prompt, record its cost and trace, and return the reply.

        With ``schema`` the reply is asked for as JSON of that schema: decoded under its grammar
        by the embedded model, through ``response_format`` by API models that take one.
        """
        meter = self.stages.get(stage)
        if meter is None:
            meter = self.stages[stage] = self.meter.fork(records=self.trace)
        grammar = _schema_grammar(json.dumps(schema, sort_keys=True)) if schema else None
        request = GenerateRequest(
            prompt=prompt,
            max_tokens=self.settings.max_tokens,
            kind=stage,
            grammar=grammar,
            schema=schema,
        )
        return meter.generate(request).text

    def stats(self) -> dict[str, Any]:
        """Return each stage's model usage and the code runs, as plain data."""
        out: dict[str, Any] = {name: m.stats.as_dict() for name, m in self.stages.items()}
        if self.runs:
            out["execute"] = {"runs": self.runs, "seconds": round(self.run_seconds, 3)}
        return out

    def run(self, code: str) -> ExecResult:
        """Run code in the sandbox (over the horizons for multi-step problems)."""
        self.check_time("execute")
        p = self.problem
        horizons = None
        setup = p.setup_code()
        if p.multi_step:
            top = self.settings.max_horizon or p.max_horizon
            horizons = list(range(1, top + 1))
            names = list(p.domain.actions) if p.domain else []
            setup += f"\n_FLLM_ACTIONS = {names!r}\n"
        start = time.perf_counter()
        result = run_code(
            code,
            setup=setup,
            objective=p.objective,
            horizons=horizons,
            limits=self.settings.limits,
            allow_unisolated=self.settings.allow_unisolated,
        )
        seconds = time.perf_counter() - start
        self.runs += 1
        self.run_seconds += seconds
        self.meter.event(
            "exec",
            kind="execute",
            code=code,
            ok=result.ok,
            error_kind=result.kind,
            status=result.status,
            objective=result.objective,
            error=result.error,
            horizon=result.horizon,
            isolation=result.isolation,
            latency=round(seconds, 4),
        )
        return result


@functools.lru_cache(maxsize=4)
def _schema_grammar(schema: str) -> str:
    return make_language("json-schema", schema).gbnf()


def define(s: Session, feedback: str = "") -> str:
    """DEFINER: the goal, decision variables and constraints in words."""
    return s.ask("definer", render("solve/definer.j2", s.vars(feedback=feedback))).strip()


def formulate(s: Session, definition: str, feedback: str = "") -> str:
    """FORMULATOR: the JSON description of every variable, checked; one correction allowed."""
    name = "solve/formulator_steps.j2" if s.problem.multi_step else "solve/formulator.j2"
    prompt = render(name, s.vars(definition=definition, feedback=feedback))
    schema = reply_schema(s.problem.multi_step)
    reply = s.ask("formulator", prompt, schema)
    value, errors = check_formulation(reply, s.problem.multi_step)
    if errors:
        fix = render(
            "solve/correction.j2",
            {"prompt": prompt, "reply": reply, "errors": "; ".join(errors[:12])},
        )
        reply = s.ask("formulator", fix, schema)
        value, errors = check_formulation(reply, s.problem.multi_step)
    if errors:
        # Still unusable: the code generator gets the raw text, assessment may fix it later.
        return reply.strip()
    return json.dumps(value, indent=1)


def generate(s: Session, definition: str, formulation: str, feedback: str = "") -> str:
    """CODE GENERATOR: Python + Z3 code from the formulation."""
    prompt = render(
        "solve/codegen.j2",
        s.vars(definition=definition, formulation=formulation, feedback=feedback),
    )
    return extract_code(s.ask("codegen", prompt))


def execute(s: Session, code: str, definition: str, formulation: str) -> tuple[str, ExecResult]:
    """Run the code; on a runtime error send code and traceback back, up to the attempt budget."""
    result = s.run(code)
    attempts = 1
    while not result.ok and attempts < s.settings.max_attempts:
        base = render("solve/codegen.j2", s.vars(definition=definition, formulation=formulation))
        prompt = render(
            "solve/repair.j2",
            {
                "prompt": base.strip(),
                "code": code.strip(),
                "error": f"({result.kind}) {result.error}",
            },
        )
        code = extract_code(s.ask("repair", prompt))
        result = s.run(code)
        attempts += 1
    return code, result


def format_result(s: Session, run: ExecResult, definition: str) -> tuple[Any, str]:
    """RESULT FORMATTER: the fixed JSON answer and a short check of it."""
    actions = ""
    if s.problem.domain:
        actions = ", ".join(
            f"({a.name}{''.join(' ' + p.lstrip('?') for p in a.params)})"
            for a in s.problem.domain.actions.values()
        )
    prompt = render(
        "solve/formatter.j2",
        s.vars(
            feedback=run.feedback(),
            definition=definition,
            output_format=s.problem.output_format,
            actions=actions,
        ),
    )
    reply = s.ask("formatter", prompt)
    head, _, check = reply.partition("Check:")
    head = head.split("JSON:", 1)[-1]
    if "RUNTIME ERROR" in head or "CANNOT FIND SOLUTION" in head:
        return None, check.strip()
    try:
        return extract_json(head), check.strip()
    except ReplyError as exc:
        return None, f"(the formatted answer could not be read: {exc}) {check.strip()}"


# Solver outcomes that answer the query (unsat answers it too: nothing satisfies it).
SOLVED = ("sat", "unsat")
NO_RESULT = (
    "the code ran but produced no solver result: it must build a z3 Solver or Optimize, add the "
    "constraints and call check()"
)


@dataclass
class Verdict:
    """The self-assessment of each step: rating and optional replacement."""

    label: str
    ok: bool
    reasoning: str
    fix: str | None


def assess(s: Session, steps: dict[str, str], feedback: str, check: str) -> list[Verdict]:
    """SELF ASSESS: rate each step; return verdicts in step order."""
    items = [{"label": k, "text": v, "question": _STEP_QUESTIONS[k]} for k, v in steps.items()]
    prompt = render(
        "solve/assess.j2", s.vars(steps=items, labels=list(steps), feedback=feedback, check=check)
    )
    return parse_assessment(s.ask("assess", prompt), list(steps))


def parse_assessment(reply: str, labels: list[str]) -> list[Verdict]:
    """Read ``[[LABEL]] Rating: n Fix: ... [[END]]`` blocks; missing steps count as right."""
    verdicts = []
    for label in labels:
        match = re.search(
            rf"\[\[{label}\]\](.*?)(?:\[\[END\]\]|(?=\[\[[A-Z]+\]\])|\Z)", reply, re.DOTALL
        )
        if not match:
            verdicts.append(Verdict(label, True, "", None))
            continue
        body = match.group(1)
        rating = re.search(r"Rating:\s*\**\s*([01])", body)
        reasoning = body.split("Rating:")[0].replace("Reasoning:", "").strip()
        fix = body.split("Fix:", 1)[1].strip() if "Fix:" in body else ""
        if fix.upper().startswith("NULL") or not fix:
            fix = None
        verdicts.append(Verdict(label, rating is None or rating.group(1) == "1", reasoning, fix))
    return verdicts


def read_plan(answer: Any) -> list[str] | None:
    """Return the action list of a formatted multi-step answer."""
    if isinstance(answer, dict):
        value = answer.get("plan")
        if value is None:
            value = next((v for v in answer.values() if isinstance(v, list)), None)
        answer = value
    if isinstance(answer, list):
        return [s if isinstance(s, str) else " ".join(map(str, s)) for s in answer]
    return None


def solve(
    problem: Problem,
    query: str,
    model: Model,
    settings: Settings | None = None,
    session: Session | None = None,
) -> SolveResult:
    """Answer ``query`` on ``problem`` with the full pipeline."""
    settings = settings or Settings()
    s = session or Session(model, problem, query, settings)
    task = problem.task_for(query) if problem.multi_step and problem.domain else None
    result = SolveResult(problem.name, problem.kind, query)
    definition = "" if problem.multi_step else define(s)
    formulation = formulate(s, definition)
    code = generate(s, definition, formulation)
    for round_no in range(1, settings.max_rounds + 1):
        result.rounds = round_no
        code, run = execute(s, code, definition, formulation)
        _fill(result, run)
        feedback, check = run.feedback(), ""
        if run.ok and run.status == "sat":
            answer, check = format_result(s, run, definition)
            result.solution = answer
            if task is not None and problem.domain is not None:
                feedback += "\n" + _check_plan(result, problem, task, answer)
        steps = {"DEFINITION": definition} if definition else {}
        steps.update({"FORMULATION": formulation, "CODE": code})
        verdicts = assess(s, steps, feedback, check)
        wrong = next((v for v in verdicts if not v.ok), None)
        if wrong is None and result.status not in SOLVED:
            # The model may approve a run that answered nothing; fllm does not.
            wrong = Verdict("CODE", False, NO_RESULT, None)
        if wrong is None:
            result.accepted = True
            break
        if round_no == settings.max_rounds:
            break
        definition, formulation, code = _modify(s, wrong, definition, formulation, code)
    result.runs = s.runs
    result.stats = s.stats()
    return result


def _fill(result: SolveResult, run: ExecResult) -> None:
    result.status = run.status if run.ok else "error"
    result.error = "" if run.ok else f"{run.kind}: {run.error.strip().splitlines()[-1:]}"
    result.objective = run.objective if run.ok else None
    result.horizon = run.horizon
    result.isolation = run.isolation
    result.solution = None
    result.plan = None
    result.plan_check = None


def _check_plan(result: SolveResult, problem: Problem, task: Task, answer: Any) -> str:
    """Simulate the returned plan; record and describe the outcome."""
    assert problem.domain is not None
    plan = read_plan(answer)
    if plan is None:
        check = Check(False, "the formatted answer has no action list", 0)
    else:
        check = simulate(problem.domain, task, plan)
    result.plan = plan
    result.plan_check = asdict(check)
    result.objective = check.length if check.valid else result.objective
    verdict = "is valid" if check.valid else f"is NOT valid: {check.reason}"
    return f"fllm simulated the formatted plan against the domain rules: the plan {verdict}."


def _modify(
    s: Session, wrong: Verdict, definition: str, formulation: str, code: str
) -> tuple[str, str, str]:
    """Replace the first wrong step (by its fix or by asking again) and redo the later ones."""
    note = wrong.reasoning or "the step was judged wrong"
    if wrong.label == "DEFINITION":
        definition = wrong.fix or define(s, feedback=note)
        formulation = formulate(s, definition)
        return definition, formulation, generate(s, definition, formulation)
    if wrong.label == "FORMULATION":
        value, errors = check_formulation(wrong.fix or "", s.problem.multi_step)
        if wrong.fix and not errors:
            formulation = json.dumps(value, indent=1)
        else:
            formulation = formulate(s, definition, feedback=note)
        return definition, formulation, generate(s, definition, formulation)
    if wrong.fix and "solver" in wrong.fix:
        return definition, formulation, extract_code(wrong.fix)
    return definition, formulation, generate(s, definition, formulation, feedback=note)
