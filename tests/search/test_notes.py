"""Notes: model-written text for automaton steps, inside a content language (issue #18)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fllm_cli import api
from fllm_cli.llm.simple import ScriptedModel
from tests.conftest import ROOT, run_fllm

STUDY = str(ROOT / "domains" / "examples" / "study_day.yaml")
TASK = "Study for tomorrow's exam"


def test_notes_are_written_in_their_languages_and_retried_once() -> None:
    # The one choice (reading first), then: a goal line; "ten" (not an integer) then 12;
    # "maybe" and "perhaps" (never yes/no), so that note is left out with the reason.
    model = ScriptedModel(["1", "Understand eigenvalues.", "ten", "12", "maybe", "perhaps"])
    trace: list[dict] = []
    doc = api.plan_task(STUDY, TASK, model, search="greedy", trace=trace).document
    steps = doc["steps"]
    assert [s["input"] for s in steps] == ["reading", "exercises", "review"]
    assert steps[0]["note"] == "Understand eigenvalues." and steps[1]["note"] == "12"
    assert "note" not in steps[2] and "not yes or no" in steps[2]["note_error"]
    assert doc["stats"]["llm_calls"] == 6 and not model.answers
    retry = model.prompts[3]  # the second ask for the exercise count shows the problem
    assert "was not accepted" in retry and "How many exercises?" in retry
    assert "Read the chapter on linear algebra." in model.prompts[1]  # the plan is in the prompt
    notes = [r for r in trace if r.get("kind") == "note"]
    assert len(notes) == 5
    # The document verifies, notes included; a note outside its language does not.
    problem = api.compile_problem(STUDY, task=TASK)
    assert api.verify(problem, doc["word"], doc).valid
    doc["steps"][1]["note"] = "a dozen"
    verdict = api.verify(problem, doc["word"], doc)
    assert not verdict.valid and "the note of step 2 is not a whole number" in verdict.reason


def test_a_back_end_failing_during_the_notes_costs_the_notes_not_the_plan(tmp_path: Path) -> None:
    answers = tmp_path / "a.txt"
    answers.write_text("1\n", encoding="utf-8")  # the choice, then nothing for the notes
    out = tmp_path / "plan.json"
    code, _, err = run_fllm("plan", STUDY, TASK, "--search", "greedy", "--model",
                            f"scripted:{answers}", "-o", str(out))  # fmt: skip
    assert code == 0, err
    steps = json.loads(out.read_text())["steps"]
    assert len(steps) == 3 and all("note" not in s for s in steps)
    assert all("ran out of answers" in s["note_error"] for s in steps)


def test_the_notes_stay_within_max_llm_calls() -> None:
    # The choice and one note call: the invalid "x" is not asked again (no call left).
    model = ScriptedModel(["2", "x", "y", "5"])
    budgets = api.Budgets(max_llm_calls=2)
    doc = api.plan_task(STUDY, TASK, model, search="greedy", budgets=budgets).document
    assert doc["stats"]["llm_calls"] == 2 and list(model.answers) == ["y", "5"]
    first, *rest = doc["steps"]
    assert "not a whole number" in first["note_error"]
    assert all("no model calls were left" in s["note_error"] for s in rest)


def test_no_notes_when_no_model_calls_are_left() -> None:
    model = ScriptedModel(["2"])
    budgets = api.Budgets(max_llm_calls=1)
    doc = api.plan_task(STUDY, TASK, model, search="greedy", budgets=budgets).document
    assert all("note" not in s and "no model calls" in s["note_error"] for s in doc["steps"])


@pytest.mark.slow
@pytest.mark.local_model
def test_the_embedded_model_writes_notes_verify_accepts(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    code, _, err = run_fllm(
        "plan", STUDY, TASK, "--search", "greedy", "--model", "local", "--no-cache",
        "-o", str(out), timeout=300,
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out.read_text())
    assert all("note" in s for s in doc["steps"]), doc["steps"]  # decoded under the grammar
    assert doc["steps"][-1]["note"] in ("yes", "no")
    code, _, err = run_fllm("verify", STUDY, str(out))
    assert code == 0, err


@pytest.mark.parametrize(
    ("note", "needle"),
    [
        ("{ask: Say it., language: 'regex:(a'}", "note.language"),
        ("{language: line}", "a note needs 'ask'"),
        ("{ask: Say it., max_tokens: 9999}", "note.max_tokens is at most 2000"),
        ("{ask: Say it., colour: red}", "colour"),
        ("{ask: '{{ nope }}'}", "note.ask uses undefined variable 'nope'"),
        ("just words", "a note must be a mapping"),
    ],
)
def test_a_bad_note_is_a_located_error(note: str, needle: str, tmp_path: Path) -> None:
    text = Path(STUDY).read_text(encoding="utf-8")
    ask = "Write the goal of this session in one short line."
    first = f'note: {{ask: "{ask}", language: line, max_tokens: 30}}'
    spec = tmp_path / "bad.yaml"
    spec.write_text(text.replace(first, f"note: {note}", 1), encoding="utf-8")
    code, out, err = run_fllm("validate", str(spec))
    assert code == 1 and needle in out, out + err
    assert "bad.yaml:" in out and "Traceback" not in out + err
