"""End to end with the scripted model: hand-written replies give the ground-truth optimum."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fllm_cli.content import make_language
from fllm_cli.llm.base import GenerateRequest, Generation
from fllm_cli.llm.simple import ScriptedModel
from fllm_cli.solve.pipeline import Settings, parse_assessment, solve
from fllm_cli.solve.problem import load_problem
from fllm_cli.solve.sandbox import Limits
from fllm_cli.solve.schema import check_formulation, reply_schema

from .scripts import (
    DEFINITION,
    FORMULATION,
    MC,
    MS,
    STEPS_FORMULATION,
    assessment,
    code,
    formatted,
)

ROOT = Path(__file__).resolve().parents[2]
PROBLEMS = ROOT / "domains" / "problems"
FAST = Settings(limits=Limits(timeout=8, memory_mb=512))


def problem(name: str):
    return load_problem(PROBLEMS / f"{name}.yaml")


def test_coffee_what_if_reaches_ground_truth() -> None:
    model = ScriptedModel(
        [DEFINITION, FORMULATION, code("coffee"), formatted({"total_cost": 2520}), assessment(MC)]
    )
    query = "What would happen if cafe1 experienced a 23% rise in demand for light coffee?"
    result = solve(problem("coffee"), query, model, FAST)
    assert (result.status, result.objective, result.accepted) == ("sat", 2520, True)
    assert result.solution == {"total_cost": 2520}
    bench = json.loads((PROBLEMS / "data" / "coffee.benchmark.json").read_text())
    truth = {q["GT EXEC RESULT"] for q in bench["questions"] if q["QUESTION"] == query}
    assert truth == {2520.0}
    kinds = [h["kind"] for h in model.history]
    assert kinds == ["definer", "formulator", "codegen", "formatter", "assess"]
    assert query in model.prompts[0] and "capacity_in_supplier" in model.prompts[0]


def test_workforce_question_reaches_ground_truth() -> None:
    model = ScriptedModel(
        [DEFINITION, FORMULATION, code("workforce"), formatted({"total_cost": 220}), assessment(MC)]
    )
    result = solve(problem("workforce"), "What if Gu's shift capacity is capped at 6?", model, FAST)
    assert (result.status, result.objective) == ("sat", 220)


def test_blocksworld_finds_optimal_plan_and_checks_it() -> None:
    plan = [
        "(unstack b c)",
        "(put-down b)",
        "(unstack c a)",
        "(put-down c)",
        "(pick-up b)",
        "(stack b a)",
        "(pick-up c)",
        "(stack c b)",
    ]
    model = ScriptedModel(
        [STEPS_FORMULATION, code("blocksworld"), formatted({"plan": plan}), assessment(MS)]
    )
    rows = [json.loads(line) for line in (PROBLEMS / "data" / "blocksworld.jsonl").open()]
    row = next(r for r in rows if r["id"] == 3)
    result = solve(problem("blocksworld"), row["query"], model, FAST)
    assert result.horizon == row["optimal_length"] == 8
    assert result.plan_check == {"valid": True, "reason": "valid", "length": 8}
    assert "T = 8" in model.prompts[2]  # the formatter sees the horizon fllm found


def test_invalid_formatted_plan_is_reported_to_assessment() -> None:
    model = ScriptedModel(
        [
            STEPS_FORMULATION,
            code("blocksworld"),
            formatted({"plan": ["(stack b a)"]}),
            assessment(MS),
        ]
    )
    query = (PROBLEMS / "data" / "blocksworld.jsonl").open().readlines()[1]
    result = solve(problem("blocksworld"), json.loads(query)["query"], model, FAST)
    assert result.plan_check is not None and not result.plan_check["valid"]
    assert "is NOT valid" in model.prompts[-1]


def test_syntax_error_goes_back_with_traceback_and_code() -> None:
    broken = "```python\nsolver = Optimize(\n```"
    model = ScriptedModel(
        [DEFINITION, FORMULATION, broken, code("coffee"), formatted({}), assessment(MC)]
    )
    result = solve(
        problem("coffee"), "What if demand for light coffee at cafe1 increased by 23%?", model, FAST
    )
    repair = model.prompts[3]
    assert "SyntaxError" in repair and "solver = Optimize(" in repair
    assert result.objective == 2520 and result.runs == 2


def test_runtime_errors_stop_after_the_attempt_budget() -> None:
    bad = "```python\nsolver = Optimize()\nundefined_name + 1\n```"
    model = ScriptedModel([DEFINITION, FORMULATION, bad, bad, bad, assessment(MC)])
    settings = Settings(max_attempts=3, max_rounds=1, limits=Limits(timeout=8))
    result = solve(problem("coffee"), "q", model, settings)
    assert result.status == "error" and result.runs == 3 and "NameError" in result.error
    assert "NameError" in model.prompts[-1]  # the assessment sees the error


def test_wrong_formulation_is_sent_back_by_self_assessment() -> None:
    wrong = (
        "```python\nsolver = Optimize()\nx = Int('x')\nsolver.add(x >= 0)\n"
        "total_cost = x\nsolver.minimize(total_cost)\n```"
    )
    model = ScriptedModel(
        [
            DEFINITION,
            FORMULATION,
            wrong,
            formatted({"total_cost": 0}),
            assessment(MC, wrong="CODE", fix="NULL"),
            code("coffee"),
            formatted({"total_cost": 2520}),
            assessment(MC),
        ]
    )
    result = solve(
        problem("coffee"), "What if demand for light coffee at cafe1 increased by 23%?", model, FAST
    )
    assert result.rounds == 2 and result.accepted and result.objective == 2520
    regenerate = model.prompts[5]
    assert "the cost misses roasting" in regenerate  # the reviewer's reason reaches codegen


def test_formulation_fix_from_assessment_replaces_the_step() -> None:
    fix = json.dumps(
        {
            "variable_1": {
                "name": "x",
                "SMT_variable": True,
                "number_of_variables": 1,
                "data_source": None,
                "value": "fixed",
                "specific_requirement": "minimize",
            }
        }
    )
    model = ScriptedModel(
        [
            DEFINITION,
            FORMULATION,
            code("coffee"),
            formatted({}),
            assessment(MC, wrong="FORMULATION", fix=fix),
            code("coffee"),
            formatted({}),
            assessment(MC),
        ]
    )
    result = solve(problem("coffee"), "q", model, FAST)
    assert result.accepted and '"value": "fixed"' in model.prompts[5]


def test_malformed_formulation_gets_one_correction_with_the_error() -> None:
    model = ScriptedModel(
        [
            DEFINITION,
            '{"variable_1": {"name": "x"}}',
            FORMULATION,
            code("coffee"),
            formatted({}),
            assessment(MC),
        ]
    )
    solve(problem("coffee"), "q", model, FAST)
    correction = model.prompts[2]
    assert "missing required field 'SMT_variable'" in correction
    assert '{"variable_1": {"name": "x"}}' in correction


@pytest.mark.parametrize(
    "reply,ok",
    [
        ("[[CODE]]\nRating: 1\nFix:\nNULL\n[[END]]", True),
        ("[[CODE]]\nRating: 0\nFix:\nsolver=1\n[[END]]", False),
    ],
)
def test_parse_assessment(reply: str, ok: bool) -> None:
    (verdict,) = parse_assessment(reply, ["CODE"])
    assert verdict.ok is ok and (verdict.fix is None) is ok


def test_an_approved_run_without_a_solver_result_is_not_accepted() -> None:
    """The model may rate everything right although no solver ran: fllm sends the code back."""
    nothing = "```python\nprint('I computed it in my head: 2520')\n```"
    model = ScriptedModel(
        [DEFINITION, FORMULATION, nothing, assessment(MC), nothing, assessment(MC)]
    )
    settings = Settings(max_rounds=2, limits=Limits(timeout=8))
    result = solve(problem("coffee"), "q", model, settings)
    assert result.status not in ("sat", "unsat") and not result.accepted
    assert result.rounds == 2
    assert any("produced no solver result" in p for p in model.prompts[3:])


class _Recording(ScriptedModel):
    """A scripted model that keeps every generation request."""

    def __init__(self, answers: list[str]) -> None:
        super().__init__(answers)
        self.requests: list[GenerateRequest] = []

    def generate(self, request: GenerateRequest) -> Generation:
        self.requests.append(request)
        return super().generate(request)


@pytest.mark.parametrize("multi_step", [False, True])
def test_the_formulator_is_asked_for_json_of_its_schema(multi_step: bool) -> None:
    if multi_step:
        name, query = "blocksworld", "(define (problem p) (:domain blocksworld))"
        answers = [STEPS_FORMULATION, "not code", "not code", "not code", assessment(MS)]
    else:
        name, query = "coffee", "What if demand at cafe1 rises by 23%?"
        answers = [DEFINITION, FORMULATION, "not code", "not code", "not code", assessment(MC)]
    model = _Recording(answers)
    solve(problem(name), query, model, Settings(max_attempts=1, max_rounds=1, limits=FAST.limits))
    asked = {r.kind: r for r in model.requests}
    formulator = asked["formulator"]
    assert formulator.schema == reply_schema(multi_step) and formulator.grammar
    assert all(
        r.schema is None and r.grammar is None for r in model.requests if r is not formulator
    )
    # What the decoder may write is what the checker accepts: the scripted (valid) reply is in
    # the grammar's language, and a reply the checker refuses is not.
    language = make_language("json-schema", formulator.schema)
    reply = STEPS_FORMULATION if multi_step else FORMULATION
    assert language.check(reply.strip()) is None
    assert not check_formulation(reply, multi_step)[1]
    assert language.check('{"variable_1": {"name": "x"}}') is not None
