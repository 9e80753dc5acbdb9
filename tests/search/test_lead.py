"""A part whose best tool is far ahead of the others asks for that tool (semantic.LEAD)."""

from __future__ import annotations

import pytest

from fllm_cli import api
from fllm_cli.domain.load import load_domain
from fllm_cli.llm.simple import RandomModel
from fllm_cli.meaning import encoder
from fllm_cli.search import semantic


def test_the_lead_is_counted_in_standard_deviations_and_only_for_the_best() -> None:
    assert semantic._lead(0.30, [0.30, 0.20], 0.05) == pytest.approx(2.0)
    assert semantic._lead(0.20, [0.30, 0.20], 0.05) == 0.0  # not the part's best tool
    assert semantic._lead(0.30, [0.30, 0.30], 0.05) == 0.0  # tied with another tool
    assert semantic._lead(0.30, [0.30], 0.05) == 0.0  # nothing to lead
    assert semantic._lead(0.30, [0.30, 0.10], 0.0) == 0.0  # a flat row says nothing


needs_encoder = pytest.mark.skipif(not encoder.available(), reason="the encoder is not installed")


def _tools(domain: str, request: str) -> set[str]:
    doc = api.plan_task(domain, request, RandomModel(1)).document
    return {w for w in doc["word"] if not w.startswith("input:")}


@needs_encoder
@pytest.mark.usefixtures("readers_silent")
@pytest.mark.parametrize(
    ("request_text", "main"),
    [
        ("Describe this picture in a sentence, in Italian.", "Image Captioning"),
        ("Summarize the article, in French.", "Text Summarization"),
    ],
)
def test_a_short_part_that_clearly_points_at_one_tool_brings_it_in(
    openagi: str, monkeypatch: pytest.MonkeyPatch, request_text: str, main: str
) -> None:
    """ "in Italian" is only modestly similar to Machine Translation, too little to pay for a
    step; but no other tool comes near it, and that lead is what makes it a request.

    The learned readers are silent throughout: the tool reader also reads "in French" as
    translation, and with it silent the role reader reads "in Italian" as a text given; the
    lead's own effect is what this tests."""
    domain = load_domain(openagi)
    described = {t.name: t.description for t in domain.tools}
    worth = semantic.relevance(encoder.shared(), described, request_text).matched
    [part] = worth["Machine Translation"]  # the one unit pointing there: "in Italian"
    assert part.endswith(request_text.rstrip(".").rsplit(", ", 1)[1])
    assert worth["Machine Translation"][part] > semantic.STEP_COST
    assert _tools(openagi, request_text) == {main, "Machine Translation"}

    monkeypatch.setattr(semantic, "LEAD", 0.0)
    worth = semantic.relevance(encoder.shared(), described, request_text).matched
    assert worth["Machine Translation"][part] < semantic.STEP_COST
    assert _tools(openagi, request_text) == {main}
