"""The meaning signal: an offline sentence encoder, request parts, and plans from everyday words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fllm_cli import api
from fllm_cli.errors import UsageError
from fllm_cli.llm.simple import RandomModel, ScriptedModel
from fllm_cli.meaning import encoder
from fllm_cli.search import semantic, strategy
from tests.conftest import run_fllm

pytestmark = pytest.mark.skipif(not encoder.available(), reason="the encoder is not installed")

# A domain of our own, worded nothing like the requests below: nothing can match by words.
GARDEN = """\
fllm: 1
name: garden
description: Look after plants.
modalities:
  plant: {phrase: plant, description: "a living plant in a pot or bed"}
  report: {phrase: report, description: "a written note about a plant"}
tools:
  - {name: Irrigator, description: supplies water to dry soil, inputs: [plant], output: plant}
  - {name: Pruner, description: cuts back overgrown branches, inputs: [plant], output: plant}
  - {name: Pest Control, description: removes insects and mites, inputs: [plant], output: plant}
  - {name: Repotter, description: moves a root-bound plant into a larger container,
     inputs: [plant], output: plant}
  - {name: Inspector, description: writes a health report on a plant, inputs: [plant],
     output: report}
"""


def _tools(doc: dict) -> set[str]:
    return {w for w in doc["word"] if not w.startswith("input:")}


def test_the_encoder_embeds_meaning_offline() -> None:
    enc = encoder.shared()
    rows = enc.embed(["A man is eating food.", "Someone is having a meal.", "The sky is blue."])
    assert rows.shape == (3, 384)
    norms = (rows**2).sum(1)
    assert all(abs(n - 1.0) < 1e-4 for n in norms)
    sims = rows @ rows.T
    assert sims[0, 1] > 0.5 > sims[0, 2]  # paraphrases close, unrelated text far
    assert enc.embed(["A man is eating food."]).tolist() == rows[:1].tolist()  # cached, stable


def test_a_request_splits_into_parts_but_hyphenated_words_stay_whole() -> None:
    got = semantic.parts("It is grainy, out of focus and black-and-white; then caption it")
    assert got == ["It is grainy", "out of focus", "black-and-white", "caption it"]
    assert semantic.parts("") == []


@pytest.mark.slow
def test_everyday_words_with_nothing_in_common_pick_the_right_tools(tmp_path: Path) -> None:
    spec = tmp_path / "garden.yaml"
    spec.write_text(GARDEN)
    cases = {
        "My fern looks parched and thirsty": {"Irrigator"},
        "Little bugs are crawling all over the leaves of my basil": {"Pest Control"},
        "The hedge has grown wild, trim it back": {"Pruner"},
    }
    for request, want in cases.items():
        doc = api.plan_task(str(spec), request, ScriptedModel([]), inputs=["plant"],
                            output="plant").document  # fmt: skip
        assert doc["search"] == "meaning" and _tools(doc) == want, request
    # The words strategy has no evidence here and falls back to asking step by step.
    doc = api.plan_task(
        str(spec), "My fern looks parched and thirsty", RandomModel(0), inputs=["plant"],
        output="plant", search="words",
    ).document  # fmt: skip
    assert doc["search"] == "greedy"


@pytest.mark.slow
def test_a_photo_request_in_everyday_words_reads_as_an_image(openagi: str) -> None:
    text = (
        "My old photo is grainy, out of focus and black-and-white; "
        "tell me in one sentence what's in it"
    )
    doc = api.plan_task(openagi, text, ScriptedModel([])).document
    # Read as a photo in, a sentence out (the words-only search read it as text to text).
    assert dict(doc["inputs"]) == {"image": "image"} and doc["output"] == "text"
    assert {"Colorization", "Image Captioning"} <= _tools(doc)
    assert _tools(doc) <= {
        "Image Denoising",
        "Image Deblurring",
        "Colorization",
        "Image Captioning",
    }


def test_the_strategy_table() -> None:
    assert strategy.strategy("beam") is strategy.STRATEGIES["meaning"]
    assert api.DEFAULT_SEARCH == "meaning" and set(api.SEARCHES) >= {"meaning", "words", "greedy"}
    assert not strategy.strategy("greedy").plan_level
    with pytest.raises(UsageError, match="unknown search 'depth'"):
        strategy.strategy("depth")


def test_without_the_encoder_meaning_falls_back_to_words(
    monkeypatch: pytest.MonkeyPatch, openagi: str
) -> None:
    monkeypatch.setattr(strategy, "_encoder_available", lambda: False)
    assert strategy.strategy("meaning").usable_signals() == (("words", 1.0),)
    task = "Given noisy grayscale image, how to return the caption in German step by step?"
    doc = api.plan_task(openagi, task, ScriptedModel([]), inputs=["image"], output="text").document
    assert _tools(doc) == {
        "Image Denoising", "Colorization", "Image Captioning", "Machine Translation",
    }  # fmt: skip


@pytest.mark.slow
def test_cli_search_meaning_is_the_default(openagi: str) -> None:
    code, out, err = run_fllm(
        "plan", openagi, "is this review happy or angry?", "--model", "random:3", "-f", "json"
    )
    assert code == 0, err
    assert '"search": "meaning"' in out and '"Sentiment Analysis"' in out


LETTERS = """\
fllm: 1
name: letters
description: Work on letters.
modalities:
  letter: {phrase: letter, description: "a written letter or email"}
  table: {phrase: table, description: "a spreadsheet of rows and columns"}
tools:
  - {name: Comparer, description: lists what differs between an old and a new version,
     inputs: [letter, letter], output: letter}
  - {name: Polisher, description: rewrites text in a formal business tone, inputs: [letter],
     output: letter}
  - {name: Extractor, description: copies the figures of a letter into a spreadsheet,
     inputs: [letter], output: table}
"""


def test_a_tool_fed_the_same_input_twice_is_counted(openagi: str) -> None:
    from fllm_cli.search.interface import self_pairs

    domain = api.load_domain(openagi)
    vqa = ["Visual Question Answering", "Colorization", "input:image",
           "Image Classification", "input:image"]  # fmt: skip
    assert self_pairs(domain, vqa) == 0  # an image and a text about it: a fine plan
    qa_self = ["Question Answering", "input:document", "input:document"]
    assert self_pairs(domain, qa_self) == 1
    assert self_pairs(domain, ["Question Answering", "input:document", "input:query"]) == 0


@pytest.mark.slow
def test_comparing_versions_reads_two_inputs_and_type_words_are_not_tools(
    tmp_path: Path,
) -> None:
    spec = tmp_path / "letters.yaml"
    spec.write_text(LETTERS)
    doc = api.plan_task(
        str(spec), "Here is my old cover letter and the new one. What changed?", ScriptedModel([])
    ).document
    assert sorted(dict(doc["inputs"]).values()) == ["letter", "letter"]
    assert _tools(doc) == {"Comparer"}
    # "spreadsheet" names the table type: it says what flows, not to run the Extractor.
    rel = semantic.relevance(
        encoder.shared(),
        {"Extractor": "copies the figures of a letter into a spreadsheet"},
        "the big quarterly spreadsheet",
        ["table: a spreadsheet of rows and columns"],
    )
    assert "spreadsheet" in [u for u, _ in semantic.units("the big quarterly spreadsheet")]
    extractor = rel.matched.get("Extractor", {})
    assert not any(unit.split(" ", 1)[1] == "spreadsheet" for unit in extractor)
    # A part that only says what data there is ("Here is the spreadsheet") is no tool's either.
    described = {
        "Extractor": "copies the figures of a letter into a spreadsheet",
        "Polisher": "rewrites text in a formal business tone",
        "Comparer": "lists what differs between an old and a new version",
    }
    types = ["table: a spreadsheet of rows and columns", "letter: a written letter or email"]
    rel = semantic.relevance(
        encoder.shared(), described, "Here is the spreadsheet. Make it formal", types
    )
    assert set(rel.matched) == {"Polisher"}
    assert "#3 Make it formal" in rel.matched["Polisher"]


@pytest.mark.slow
def test_explain_says_what_made_each_step_relevant(openagi: str, tmp_path: Path) -> None:
    request = "is this review happy or angry? \x1b[31m"  # a control sequence must not reach us
    out = tmp_path / "plan.json"
    code, _, err = run_fllm(
        "plan", openagi, request, "--model", "random:1", "--explain", "-o", str(out)
    )
    assert code == 0, err
    assert "Why" in err and "Sentiment Analysis" in err and "is this review happy or angry" in err
    assert "interface: the best plan's evidence" in err and "\x1b[31m" not in err
    doc = json.loads(out.read_text())
    (step,) = doc["why"]["steps"]
    assert step["tool"] == "Sentiment Analysis" and step["evidence"][0]["signal"] == "meaning"
    assert doc["why"]["interface"]["ranked"][0]["inputs"] == ["text"]
    # The first unit pointing at a tool says what the request brings, the last one (a word of
    # its only part) what it wants back. "happy" would come later, but it is less than
    # semantic.WORD_TYPE_MARGIN nearer Sentiment Analysis (0.24) than the image type (0.17).
    reading = doc["why"]["interface"]
    assert reading["first_asked"] == {
        "part": "is this review happy or angry", "tool": "Sentiment Analysis", "inputs": ["text"],
    }  # fmt: skip
    assert reading["last_asked"] == {
        "part": "review", "tool": "Sentiment Analysis", "output": "text",
    }  # fmt: skip
    # What fllm writes, fllm reads back: the plan with its explanation verifies.
    code, _, err = run_fllm("verify", openagi, str(out))
    assert code == 0, err


def test_explain_of_a_step_by_step_plan_says_the_model_chose(openagi: str) -> None:
    code, _, err = run_fllm(
        "plan", openagi, "Given an image, caption it", "--model", "random:2", "--search",
        "greedy", "--input", "image", "--output", "text", "--explain",
    )  # fmt: skip
    assert code == 0, err
    assert "interface: given" in err and "chosen by the model (greedy search)" in err


def test_types_are_read_by_meaning_in_the_order_named() -> None:
    """Words that share nothing with a type's name or text still name it by meaning; a word
    about a tool's purpose names no type."""
    types = {
        "scan": ("scanned page", "a photographed or scanned paper page, an image of text"),
        "table": ("table", "a spreadsheet or table of rows and columns"),
        "chart": ("chart", "a graph or diagram drawn from figures"),
    }
    described = {"Deskew": "straightens a crooked page", "Plotter": "draws figures"}
    read = strategy.STRATEGIES["meaning"].read_types
    assert read(described, types, "I photographed it; draw a graph from the spreadsheet") == [
        "scan", "chart", "table",
    ]  # fmt: skip
    assert read(described, types, "straighten it please") == []
    # The words strategy reads types by their own words only.
    assert strategy.STRATEGIES["words"].read_types(described, types, "a spreadsheet") == ["table"]


def test_the_types_named_tip_the_interface_only_below_a_tool() -> None:
    from fllm_cli.search.interface import TYPE_FIT, _named

    named = ["scan", "document"]
    right = _named(("scan",), "document", named)
    # An interface lacking a type named, or with an input never named, fits worse...
    assert _named(("document",), "document", named) < right
    assert _named(("scan", "table"), "document", named) < right
    # ...and so does one that leaves a named type out, whichever type was named last.
    assert _named(("scan",), "scan", named) < right
    assert _named(("document",), "scan", named) == _named(("scan",), "document", named)
    # A type fit stays below what one tool's evidence is worth (a step costs 1.0).
    assert right - _named(("document",), "document", named) < 1.0
    assert TYPE_FIT < 0.5
