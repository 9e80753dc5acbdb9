"""Free-text plans → grammar words."""

from __future__ import annotations

import pytest

from fllm_cli import api
from fllm_cli.api import load_domain
from fllm_cli.bench.parse import ParseError, parse_plan, segments
from fllm_cli.domain.model import Task

IMAGE_TO_TEXT = Task("t", (("image", "image"),), "text")
IMAGE_AND_TEXT = Task("t", (("image", "image"), ("text", "text")), "text")


@pytest.fixture
def domain(openagi: str):  # type: ignore[no-untyped-def]
    return load_domain(openagi)


def test_chain_in_stated_order_nests_outputs(domain) -> None:  # type: ignore[no-untyped-def]
    text = "Step 1: use image-denoising.\nStep 2: Apply the IMAGE CAPTIONING model."
    assert parse_plan(text, domain, IMAGE_TO_TEXT) == [
        "Image Captioning",
        "Image Denoising",
        "input:image",
    ]


def test_names_match_with_plurals_aliases_and_spelling(domain) -> None:  # type: ignore[no-untyped-def]
    text = "1. Denoising\n2. colorisation of the picture\n3. image captionings"
    assert parse_plan(text, domain, IMAGE_TO_TEXT) == [
        "Image Captioning",
        "Colorization",
        "Image Denoising",
        "input:image",
    ]


def test_longest_match_wins(domain) -> None:  # type: ignore[no-untyped-def]
    text = "Step 1: Visual Question Answering"
    assert parse_plan(text, domain, IMAGE_AND_TEXT)[0] == "Visual Question Answering"


def test_two_input_tool_takes_previous_output_and_task_input(domain) -> None:  # type: ignore[no-untyped-def]
    text = "Setp 1: Image Deblurring\nSetp 2: Visual Question Answering"
    assert parse_plan(text, domain, IMAGE_AND_TEXT) == [
        "Visual Question Answering",
        "Image Deblurring",
        "input:image",
        "input:text",
    ]


def test_explicit_step_references_set_the_data_flow(domain) -> None:  # type: ignore[no-untyped-def]
    text = (
        "Step 1: Image Captioning\nStep 2: Image Classification\n"
        "Step 3: Question Answering on the outputs of steps 2 and 1"
    )
    word = parse_plan(text, domain, IMAGE_AND_TEXT)
    assert word == [
        "Question Answering",
        "Image Classification",
        "input:image",
        "Image Captioning",
        "input:image",
    ]


def test_an_unused_earlier_output_fills_a_later_slot(domain) -> None:  # type: ignore[no-untyped-def]
    text = "Step 1: Image Captioning\nStep 2: Image Classification\nStep 3: Question Answering"
    assert parse_plan(text, domain, IMAGE_AND_TEXT) == [
        "Question Answering",
        "Image Classification",
        "input:image",
        "Image Captioning",
        "input:image",
    ]


def test_wrong_order_leaves_a_step_unused(domain) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ParseError, match="'Image Captioning' is never used"):
        parse_plan("Step 1: Image Captioning\nStep 2: Image Denoising", domain, IMAGE_TO_TEXT)


def test_wrong_final_modality_fails_verification(domain) -> None:  # type: ignore[no-untyped-def]
    word = parse_plan("Step 1: Image Denoising", domain, IMAGE_TO_TEXT)
    problem = api.compile_problem(domain, inputs=["image"], output="text")
    verdict = api.verify(problem, word)
    assert not verdict.valid
    assert "outputs image" in verdict.reason


def test_unknown_tool_is_named(domain) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ParseError, match="'Image Inpainting' is not a tool"):
        parse_plan("Step 1: Image Inpainting\nStep 2: Image Captioning", domain, IMAGE_TO_TEXT)


def test_text_without_tools_and_empty_text(domain) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ParseError, match="names no tool"):
        parse_plan("I would look at the picture and describe it.", domain, IMAGE_TO_TEXT)
    with pytest.raises(ParseError, match="model produced no plan"):
        parse_plan("  ", domain, IMAGE_TO_TEXT)


def test_missing_input_modality_is_explained(domain) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ParseError, match="needs text input"):
        parse_plan("Step 1: Text Summarization", domain, IMAGE_TO_TEXT)


def test_segments_stop_at_a_new_problem() -> None:
    segs = segments("Step 1: A\nStep 2: B\nProblem: another\nStep 1: C")
    assert [s.label for s in segs] == [1, 2]
