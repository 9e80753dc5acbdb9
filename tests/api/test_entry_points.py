"""The api's entry points that the command line (and the MCP server) call instead of lower
packages: one set-up for verifying a plan file, spec kinds, typed input values, exports."""

from __future__ import annotations

import json

import pytest

from fllm_cli import api
from fllm_cli.errors import UsageError
from tests.conftest import ROOT

OPENAGI = str(ROOT / "domains" / "openagi.yaml")
TASK = "Given noisy blurry grayscale image, how to return the caption in English step by step?"


@pytest.fixture(scope="module")
def plan_doc() -> dict[str, object]:
    result = api.plan_task(
        OPENAGI, TASK, "random:1", inputs=["image"], output="text", search="words"
    )
    return dict(result.document)


def test_verify_plan_reads_the_interface_from_the_plan_document(
    plan_doc: dict[str, object],
) -> None:
    word, doc = api.read_plan_file(json.dumps(plan_doc), "plan.json")
    problem, verdict = api.verify_plan(OPENAGI, word, doc)
    assert verdict.valid and problem.steps(verdict)
    # What the call gives wins over the document: another output type makes the plan invalid.
    _, other = api.verify_plan(OPENAGI, word, doc, output="image")
    assert not other.valid


def test_verify_plan_of_a_text_plan_needs_the_interface_from_the_call(
    plan_doc: dict[str, object],
) -> None:
    text = "\n".join(plan_doc["word"])  # type: ignore[arg-type]
    word, doc = api.read_plan_file(text, "plan.txt")
    assert doc is None
    _, verdict = api.verify_plan(OPENAGI, word, doc, inputs=["image"], output="text")
    assert verdict.valid


@pytest.mark.parametrize(
    ("spec", "kind", "summary"),
    [
        ("domains/openagi.yaml", "domain", None),
        ("domains/agents/react.sexp", "agent", "agent spec"),
        ("domains/problems/coffee.yaml", "problem", "problem"),
    ],
)
def test_spec_kinds_and_their_diagnostics(spec: str, kind: str, summary: str | None) -> None:
    path = str(ROOT / spec)
    assert api.spec_kind(path) == kind
    diagnostics, said = api.diagnose(path)
    assert not [d for d in diagnostics if d.severity == "error"]
    if summary is not None:
        assert said == summary


def test_input_values_are_typed_by_the_plan_and_misuse_names_the_flag() -> None:
    doc = {"inputs": {"n": "number", "text": "text"}}
    assert api.input_values(["n=3", "text=3"], doc, "--input") == {"n": 3, "text": "3"}
    with pytest.raises(UsageError, match="bad --value 'n': write NAME=VALUE"):
        api.input_values(["n"], doc, "--value")


def test_export_plan_writes_json_for_the_rich_view(plan_doc: dict[str, object]) -> None:
    assert json.loads(api.export_plan(plan_doc, "rich")) == json.loads(
        api.export_plan(plan_doc, "json")
    )
    assert api.plan_steps(plan_doc)[0].startswith("Step 1:")


def test_automaton_renderings_are_a_table() -> None:
    pda = api.automaton(OPENAGI, inputs=["image"], output="text")
    for fmt in api.PDA_FORMATS:
        assert api.render_pda(pda, fmt).strip()
    headers, rows, facts = api.pda_table(pda)
    assert rows and all(len(r) == len(headers) for r in rows) and facts


def test_shown_value_joins_lists() -> None:
    assert api.shown_value(["Rome", "Paris"]) == "Rome, Paris"
    assert api.shown_value(3) == "3"
