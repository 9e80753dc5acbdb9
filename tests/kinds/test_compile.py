"""Each kind compiles a small shipped domain to a ``Compiled`` whose automaton accepts exactly
the valid plans: a known valid plan is accepted, known invalid ones are rejected with where and
why, and a plan the kind itself finds (a random model choosing) verifies."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from fllm_cli.automaton.pda import PDA
from fllm_cli.domain.load import load_domain
from fllm_cli.domain.variables import resolve_vars
from fllm_cli.errors import UsageError
from fllm_cli.kinds import Compiled, PlanJob, kind_of
from fllm_cli.llm.simple import RandomModel
from fllm_cli.search.strategy import STRATEGIES
from tests.conftest import ROOT, SPECS

EXAMPLES = ROOT / "domains" / "examples"
GREEDY = STRATEGIES["greedy"]  # step by step, as in the paper: no sentence encoder needed

# The cooking plan of Eq. 5 (domains/cooking.yaml), in derivation order: S -> a A B,
# B -> a C E, C -> a F, F -> b A G, G -> c d, E -> b H, H -> e f; each seasoning set A is a run
# of its elements.
COOKING = ["a", "A:salt", "a", "a", "b", "A:ginger", "A:sugar", "c", "d", "b", "e", "f"]


class Case(NamedTuple):
    path: Path
    inputs: list[str]
    output: str | None
    valid: list[str]
    invalid: list[tuple[list[str], int, str]]  # (word, 1-based position, part of the reason)


CASES = {
    "grammar-anbn": Case(
        SPECS / "anbn.yaml", [], None, ["a", "a", "b", "b"],
        [(["a", "b", "b"], 3, "'b'"), (["a", "a", "b"], 4, "incomplete"),
         (["a", "c"], 2, "unknown step 'c'")],
    ),
    "grammar-cooking": Case(
        ROOT / "domains" / "cooking.yaml", [], None, COOKING,
        [(COOKING[:-1], len(COOKING), "incomplete"), (["b", *COOKING[1:]], 1, "'b'")],
    ),
    "tools-textbox": Case(
        EXAMPLES / "textbox.yaml", ["text"], "number", ["word_count", "input:text"],
        [(["word_count"], 2, "incomplete"), (["count_items", "input:text"], 2, "input:text"),
         (["word_count", "input:list"], 2, "input:list")],
    ),
    "automaton-study_day": Case(
        EXAMPLES / "study_day.yaml", [], None, ["reading", "exercises", "review"],
        [(["reading", "exercises"], 3, "incomplete"), (["review"], 1, "review"),
         (["reading", "reading", "review"], 2, "reading")],
    ),
}  # fmt: skip


def _compile(case: Case) -> Compiled:
    domain = load_domain(case.path)
    variables = resolve_vars(domain, None)  # the defaults (study_day has one)
    return kind_of(domain).compile(domain, "a task", case.inputs, case.output, variables)


def _pda_accepts(pda: PDA, word: list[str]) -> bool:
    """Whether some run of the automaton reads all of ``word`` and accepts."""
    return any(pos == len(word) and pda.is_accepting(c) for pos, c in pda.run(word))


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_automaton_accepts_the_valid_plan_and_rejects_the_invalid(name: str) -> None:
    case = CASES[name]
    compiled = _compile(case)
    assert isinstance(compiled, Compiled)
    assert _pda_accepts(compiled.pda, case.valid)
    for word, _, _ in case.invalid:
        assert not _pda_accepts(compiled.pda, word), word


@pytest.mark.parametrize("name", sorted(CASES))
def test_verify_names_the_first_wrong_position(name: str) -> None:
    case = CASES[name]
    compiled = _compile(case)
    verdict = compiled.verify(case.valid)
    assert verdict.valid, verdict.reason
    for word, position, reason in case.invalid:
        verdict = compiled.verify(word)
        assert not verdict.valid, word
        assert (verdict.position, reason in verdict.reason) == (position, True), verdict


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_valid_plan_has_steps_and_a_document(name: str) -> None:
    case = CASES[name]
    compiled = _compile(case)
    verdict = compiled.verify(case.valid)
    steps = compiled.steps(verdict)
    # Numbered in execution order: "Step 1: <the domain's step text>", or "1. a" without one.
    assert steps and all(re.match(rf"(Step {i}: |{i}\. )\S", s) for i, s in enumerate(steps, 1))
    doc = compiled.verified_document(verdict, model="test")
    assert doc["valid"] is True and doc["word"] == case.valid
    assert doc["domain"] == compiled.domain.name
    assert compiled.check_document(doc, verdict).valid
    with pytest.raises(ValueError):  # only a valid verdict has a document
        compiled.verified_document(compiled.verify(case.invalid[0][0]))


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_plan_the_kind_finds_verifies(name: str, seed: int) -> None:
    case = CASES[name]
    domain = load_domain(case.path)
    kind = kind_of(domain)
    job = PlanJob("a task", inputs=case.inputs, output=case.output, strategy=GREEDY)
    result = kind.plan_task(domain, job, RandomModel(seed))
    doc = result.document
    assert doc["valid"] is True and doc["model"] == f"random:{seed}"
    compiled = kind.compile(domain, "a task", case.inputs, case.output, dict(doc.get("vars", {})))
    assert compiled.verify(doc["word"]).valid
    assert _pda_accepts(compiled.pda, doc["word"])
    assert doc["stats"]["llm_calls"] == result.stats.llm_calls


def test_the_automaton_fills_in_the_scenario_variables() -> None:
    domain = load_domain(EXAMPLES / "study_day.yaml")
    compiled = kind_of(domain).compile(domain, "", [], None, {"subject": "topology"})
    steps = compiled.steps(compiled.verify(["reading", "exercises", "review"]))
    assert steps[0] == "Step 1: Read the chapter on topology."


def test_a_tool_plan_must_read_the_given_inputs() -> None:
    domain = load_domain(EXAMPLES / "textbox.yaml")
    compiled = kind_of(domain).compile(domain, "", ["text"], "text", {})
    assert compiled.verify(["shout", "input:text"]).valid
    assert compiled.verify(["shout", "first_sentence", "input:text"]).valid
    # Each tool at most once (limits.max_uses: 1).
    assert not compiled.verify(["shout", "shout", "input:text"]).valid


@pytest.mark.parametrize(
    "path", [SPECS / "anbn.yaml", EXAMPLES / "study_day.yaml"], ids=["grammar", "automaton"]
)
def test_kinds_without_an_interface_refuse_one(path: Path) -> None:
    domain = load_domain(path)
    with pytest.raises(UsageError, match="--input/--output do not apply"):
        kind_of(domain).compile(domain, "", ["text"], "text", {})


def test_a_tool_task_with_no_plan_is_refused_before_any_model_call() -> None:
    domain = load_domain(EXAMPLES / "textbox.yaml")
    compiled = kind_of(domain).compile(domain, "", ["number"], "list", {})
    message, _ = compiled.no_plan()
    assert "no valid plan can produce a list output" in message
    with pytest.raises(Exception, match="no valid plan"):
        compiled.check_solvable()


def test_overview_draws_the_automaton_without_a_task() -> None:
    domain = load_domain(EXAMPLES / "textbox.yaml")
    pda = kind_of(domain).overview(domain, {})
    assert pda.transitions and pda.start in pda.states


# ---------------------------------------------------------------- the data kind

TRIP = EXAMPLES / "conference_trip.yaml"


def _trip() -> tuple[Any, dict[str, Any], dict[str, Any]]:
    data = json.loads((EXAMPLES / "conference_trip.data.json").read_text(encoding="utf-8"))
    request = json.loads((EXAMPLES / "conference_trip.request.json").read_text(encoding="utf-8"))
    return load_domain(TRIP), data, request


def test_a_data_domain_does_not_compile_without_its_data() -> None:
    domain, _, _ = _trip()
    kind = kind_of(domain)
    with pytest.raises(UsageError, match="--data FILE"):
        kind.compile(domain, "a trip", [], None, {})
    with pytest.raises(UsageError, match="no automaton to draw"):
        kind.overview(domain, {})
    with pytest.raises(UsageError, match="--data FILE"):
        kind.plan_task(domain, PlanJob("a trip", strategy=GREEDY), RandomModel(0))


def test_a_data_plan_the_kind_finds_checks_and_a_broken_one_does_not() -> None:
    domain, data, request = _trip()
    kind = kind_of(domain)
    job = PlanJob("A conference trip", data=data, request=request, strategy=GREEDY)
    doc = kind.plan_task(domain, job, RandomModel(1)).document
    assert doc["valid"] is True and len(doc["plan"]) == request["days"]
    assert doc["total_cost"] <= request["budget"]
    # The plan carries its request, so it checks on its own.
    report = kind.check_with_data(domain, doc, data, None)
    assert report == {**report, "valid": True, "violations": [], "days": 3}
    short = kind.check_with_data(domain, doc["plan"][:-1], data, request)
    assert not short["valid"] and any("2 days" in v for v in short["violations"])
    poor = kind.check_with_data(domain, doc, data, {**request, "budget": 100})
    assert not poor["valid"] and any(v.startswith("budget:") for v in poor["violations"])


def test_kinds_without_data_refuse_it() -> None:
    domain = load_domain(SPECS / "anbn.yaml")
    kind = kind_of(domain)
    with pytest.raises(UsageError, match="apply to data domains"):
        kind.plan_task(domain, PlanJob("t", data={"x": []}, strategy=GREEDY), RandomModel(0))
    with pytest.raises(UsageError, match="--data applies to data domains"):
        kind.check_with_data(domain, {}, {}, None)
