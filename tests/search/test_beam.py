"""Plan-level search: evidence from the domain's words, beam over valid plans, model at ties."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fllm_cli import api
from fllm_cli.llm.simple import RandomModel, ScriptedModel
from fllm_cli.search import needs
from fllm_cli.search.interface import (
    feasible_interfaces,
    infer_interface,
    rank_interfaces,
    tool_evidence,
)
from fllm_cli.search.relevance import Relevance, mentions, same_word, score, vocabulary
from fllm_cli.search.strategy import strategy
from tests.conftest import run_fllm

README_TASK = (
    "Given noisy blurry grayscale image, how to return the caption in English step by step?"
)

# A small domain that has nothing to do with OpenAGI: the mechanism must work from its words.
KITCHEN = """\
fllm: 1
name: kitchen
description: Turn ingredients into a dish.
modalities:
  food: {phrase: food, description: "something to eat, such as bread or fruit"}
  drink: {phrase: drink, description: "something to sip, such as juice or tea"}
tools:
  - {name: Slicer, description: cuts bread or fruit into thin slices, inputs: [food], output: food}
  - {name: Toaster, description: browns sliced bread until crisp, inputs: [food], output: food}
  - {name: Grill, description: chars vegetables over a flame, inputs: [food], output: food}
  - {name: Juicer, description: presses fruit into juice, inputs: [food], output: drink}
  - {name: Kettle, description: boils water for tea, inputs: [drink], output: drink}
  - {name: Freezer, description: chills a drink until icy, inputs: [drink], output: drink}
"""

TWINS = """\
fllm: 1
name: twins
description: Two tools that say the same thing.
modalities:
  doc: {phrase: document}
tools:
  - {name: Alpha Cleaner, description: removes stains from a document, inputs: [doc], output: doc}
  - {name: Beta Cleaner, description: removes stains from a document, inputs: [doc], output: doc}
  - {name: Stapler, description: binds pages together, inputs: [doc], output: doc}
"""


def _domain(tmp_path: Path, text: str, name: str = "d.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _tools(doc: dict) -> list[str]:
    return [w for w in doc["word"] if not w.startswith("input:")]


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("noisy", "noise", True),
        ("gray", "grayscale", True),
        ("caption", "captioning", True),
        ("blurry", "blurry", True),
        ("class", "classification", True),
        ("given", "gives", True),  # a known weakness of prefixes, kept out of descriptions
        ("text", "texture", True),  # likewise: a whole short word that starts a longer one
        ("image", "imply", False),
        ("text", "test", False),
        ("sum", "summary", False),  # too short to say anything
    ],
)
def test_words_match_by_a_long_enough_shared_prefix(a: str, b: str, same: bool) -> None:
    assert same_word(a, b) is same


def test_rare_words_weigh_more_and_type_words_are_ignored() -> None:
    vocab = vocabulary(
        {"A": "sharpens a blurry picture", "B": "sharpens a noisy picture", "C": "sharpens"},
        ["picture"],
    )
    assert "picture" not in vocab["A"] | vocab["B"] | vocab["C"]
    rel = score(vocab, "my blurry photo")
    assert rel.relevant() == ["A"] and rel.of("B") == 0 and not rel.silent
    assert score(vocab, "nothing to see here").silent
    # A word shared by every symbol is no evidence at all.
    assert score(vocab, "it sharpens").silent
    # Evidence only against a symbol is silent (nothing points at one) but not mute.
    against = Relevance({"A": -1.0, "B": 0.0}, 0.0)
    assert against.silent and not against.mute and Relevance({"A": 0.0}, 0.0).mute


def test_a_task_word_is_credited_once() -> None:
    vocab = vocabulary(
        {"X": "generation of text", "Y": "generation of pictures", "Z": "a summary"}, []
    )
    rel = score(vocab, "generate something")
    value, claimed = rel.gain("X", frozenset())
    assert value > 0 and claimed == {"generate"}
    assert rel.gain("Y", claimed) == (0.0, frozenset())


def test_mentions_follow_the_text_order() -> None:
    forms = {"image": ["image", "picture"], "text": ["text", "caption"]}
    assert mentions("From a picture, write a caption", forms) == ["image", "text"]


@pytest.mark.slow
def test_the_readme_task_gets_exactly_the_four_tools_without_asking(openagi: str) -> None:
    model = ScriptedModel([])  # any question would fail: the evidence decides alone
    result = api.plan_task(openagi, README_TASK, model)
    doc = result.document
    assert doc["search"] == "meaning"
    assert sorted(_tools(doc)) == [
        "Colorization", "Image Captioning", "Image Deblurring", "Image Denoising",
    ]  # fmt: skip
    assert model.prompts == [] and doc["stats"]["llm_calls"] == 0
    problem = api.compile_problem(openagi, inputs=["image"], output="text", task=README_TASK)
    assert api.verify(problem, doc["word"]).valid


def test_greedy_search_is_the_papers_step_by_step_mode(openagi: str) -> None:
    model = RandomModel(3)
    result = api.plan_task(
        openagi, README_TASK, model, inputs=["image"], output="text", search="greedy"
    )
    assert result.document["search"] == "greedy"
    assert result.document["stats"]["choice_points"] > 0


@pytest.mark.slow
def test_another_domain_plans_from_its_own_words(tmp_path: Path) -> None:
    spec = _domain(tmp_path, KITCHEN)
    doc = api.plan_task(spec, "Cut the bread into slices, then toast them", RandomModel(0)).document
    assert doc["search"] == "meaning" and set(_tools(doc)) == {"Toaster", "Slicer"}
    doc = api.plan_task(spec, "I have fruit and want icy juice", RandomModel(0)).document
    assert set(_tools(doc)) == {"Juicer", "Freezer"}


@pytest.mark.slow
def test_the_interface_comes_from_the_words_and_the_types_named(tmp_path: Path) -> None:
    domain = api.load_domain(_domain(tmp_path, KITCHEN))
    text = "Given some fruit, how do I get a drink that is icy?"
    relevance = tool_evidence(domain, text, strategy("meaning"))
    assert relevance is not None
    ranked = rank_interfaces(domain, text, feasible_interfaces(domain), relevance)
    assert (ranked[0][1], ranked[0][2]) == (("food",), "drink")
    inputs, output, asked = infer_interface(domain, text, ScriptedModel([]), [], strategy("beam"))
    assert (inputs, output, asked) == (["food"], "drink", [])


@pytest.mark.slow
def test_ties_are_put_to_the_model_as_whole_plans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The learned tool reader embeds each tool's name with its description, so it would tell
    # the twins apart by "Alpha" and "Beta"; with it silent the evidence ties exactly.
    monkeypatch.setattr(needs, "_MODEL", {"model": None})
    spec = _domain(tmp_path, TWINS)
    trace: list[dict] = []
    model = ScriptedModel(["2"])
    doc = api.plan_task(
        spec, "Remove the stains from this document", model, inputs=["doc"], output="doc",
        trace=trace,
    ).document  # fmt: skip
    assert _tools(doc) == ["Beta Cleaner"]  # the second candidate, as the model answered
    (record,) = [r for r in trace if r["type"] == "choice"]
    assert record["candidates"] is True and record["options"] == ["Alpha Cleaner", "Beta Cleaner"]
    assert "Which set of steps does the task need?" in model.prompts[0]
    assert doc["stats"]["choice_points"] == 1 and doc["stats"]["llm_calls"] == 1


@pytest.mark.usefixtures("readers_silent")
def test_evidence_that_says_nothing_falls_back_to_step_by_step(tmp_path: Path) -> None:
    spec = _domain(tmp_path, TWINS)
    doc = api.plan_task(spec, "Do something", RandomModel(1), inputs=["doc"], output="doc").document
    assert doc["search"] == "greedy" and doc["stats"]["choice_points"] >= 1


def test_evidence_only_against_tools_plans_the_least_opposed_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the tool reader rates every tool unlikely and nothing speaks for any, the beam still
    ranks the plans by that evidence: the plan is the one it opposes least, with no model call,
    not a chain of steps a small model guessed one at a time."""
    odds = {"Slicer": -3.0, "Toaster": -3.0, "Grill": -3.0, "Juicer": -2.0, "Kettle": -0.2}
    monkeypatch.setattr(needs, "read", lambda encoder, described, text: dict(odds))
    spec = _domain(tmp_path, KITCHEN)
    model = RandomModel(1)
    doc = api.plan_task(spec, "xyzzy plugh", model, inputs=["food"], output="drink").document
    assert doc["search"] == "meaning"
    # Every plan needs the Juicer; the Kettle, though the least opposed tool, is a step more.
    assert _tools(doc) == ["Juicer"]
    assert doc["stats"]["llm_calls"] == 0 and doc["stats"]["choice_points"] == 0
    (step,) = doc["why"]["steps"]
    assert step["tool"] == "Juicer" and step["net"] < 0  # explained by the evidence against
    assert [e["signal"] for e in step["evidence"]] == ["needs"]


@pytest.mark.slow
def test_cli_search_flag(openagi: str) -> None:
    code, out, err = run_fllm("plan", openagi, README_TASK, "--model", "random:1", "-f", "json")
    assert code == 0, err
    assert json.loads(out)["search"] == "meaning"
    code, out, err = run_fllm(
        "plan", openagi, README_TASK, "--model", "random:1", "--search", "depth", "-f", "json"
    )
    assert code == 2 and "unknown search 'depth'" in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_a_plan_too_long_for_the_beam_falls_back_to_asking(tmp_path: Path) -> None:
    # A chain of 420 tools whose outputs are all far away: every plan is longer than the beam's
    # depth cap, so evidence cannot rank the interfaces; the interface is then asked for.
    n = 420
    lines = ["fllm: 1", "name: chain", "modalities:"]
    lines += [f"  m{i}: {{phrase: stage {i}}}" for i in range(n + 1)]
    lines += [f"task: {{inputs: [m0], outputs: [m{n}, m{n - 1}]}}", "tools:"]
    tool = "  - {{name: T{0}, description: bl{1}ify, inputs: [m{0}], output: m{2}}}"
    lines += [tool.format(i, _letters(i), i + 1) for i in range(n)]
    spec = tmp_path / "chain.yaml"
    spec.write_text("\n".join(lines) + "\n", encoding="utf-8")
    trace: list[dict] = []
    doc = api.plan_task(str(spec), f"please bl{_letters(5)}ify it", RandomModel(1), trace=trace)
    doc = doc.document
    assert doc["valid"] and doc["output"] in (f"m{n}", f"m{n - 1}")
    assert any(r.get("kind") == "interface" for r in trace)  # asked, not ranked


def _letters(i: int) -> str:
    """A word of letters only for ``i`` (the relevance tokenizer splits digits off)."""
    out = ""
    for _ in range(3):
        i, r = divmod(i, 26)
        out += chr(97 + r)
    return out
