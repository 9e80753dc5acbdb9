"""The fuzzer's independent plan checker: it must agree with docs/spec.md on known plans."""

from __future__ import annotations

import json
import random

import pytest

from fuzz import checker, generate
from tests.conftest import ROOT

OPENAGI = (ROOT / "domains/openagi.yaml").read_text(encoding="utf-8")
COOKING = (ROOT / "domains/cooking.yaml").read_text(encoding="utf-8")
ANBN = (ROOT / "tests/data/specs/anbn.yaml").read_text(encoding="utf-8")

PHOTO_DESK = """
name: photo-desk
modalities:
  image: {phrase: image}
  text: text
tools:
  - {name: Denoise, inputs: [image], output: image}
  - {name: Caption, inputs: [image], output: text}
  - {name: Ask, inputs: [image, text], output: text, max_uses: 2}
task: {inputs: [image, text], outputs: [text], max_inputs: 2}
limits: {max_uses: 1, max_plan_steps: 3}
"""


def lines(*word: str) -> str:
    return "\n".join(word) + "\n"


@pytest.mark.parametrize(
    ("word", "inputs", "output", "valid"),
    [
        # the README's examples
        (
            [
                "Visual Question Answering",
                "Colorization",
                "input:image",
                "Image Classification",
                "input:image",
            ],
            ["image"],
            "text",
            True,
        ),
        (
            [
                "Visual Question Answering",
                "Colorization",
                "input:image",
                "Colorization",
                "input:image",
            ],
            ["image"],
            "text",
            False,
        ),
        (["Image Captioning", "input:image"], ["image"], "text", True),
        (
            ["Image Captioning", "input:image", "input:image"],
            ["image"],
            "text",
            False,
        ),  # extra symbol
        (["Image Captioning"], ["image"], "text", False),  # incomplete
        (["Image Captioning", "input:text"], ["image"], "text", False),  # no such input
        (["input:image"], ["image"], "image", False),  # empty plan not allowed
        (["Image Captioning", "input:image"], ["image"], "audio", False),  # unknown modality
        # every task input must be used (limits.use_every_input, on by default)
        (["Text Summarization", "input:text_2"], ["text", "text"], "text", False),
        (["Question Answering", "input:text", "input:text_2"], ["text", "text"], "text", True),
        (["Text Summarization", "input:query"], ["image", "query=text"], "text", False),
        (
            ["Visual Question Answering", "input:image", "input:query"],
            ["image", "query=text"],
            "text",
            True,
        ),
    ],
)
def test_openagi_text_plans(word: list[str], inputs: list[str], output: str, valid: bool) -> None:
    assert checker.check_plan(OPENAGI, lines(*word), inputs, output)[0] is valid


@pytest.mark.parametrize(
    ("word", "valid", "why"),
    [
        (["Ask", "Denoise", "input:image", "input:query"], True, ""),
        (["Ask", "Denoise", "input:image", "Ask", "input:image", "input:query"], True, ""),
        (
            ["Ask", "Ask", "Ask", "input:image", "input:query", "input:image", "input:query"],
            False,
            "limit",
        ),
        (
            ["Ask", "Denoise", "input:image", "Ask", "Denoise", "input:image", "input:query"],
            False,
            "limit",
        ),
        (["Ask", "input:image", "Caption", "Denoise", "input:image"], False, "never uses"),
        (["Ask", "input:image", "Caption", "Denoise", "input:image", "extra"], False, "terminal"),
        (["input:query"], False, "no tool"),
    ],
)
def test_photo_desk_rules(word: list[str], valid: bool, why: str) -> None:
    ok, reason = checker.check_plan(PHOTO_DESK, lines(*word), ["image", "query=text"], "text")
    assert ok is valid
    assert why in reason


def test_photo_desk_plan_step_cap_and_interface() -> None:
    # four tool steps break max_plan_steps: 3 even though each tool is within its limit
    g = checker.tool_grammar(
        checker._load_yaml(PHOTO_DESK.replace("max_plan_steps: 3", "max_plan_steps: 2")),
        [("image", "image"), ("query", "text")],
        "text",
    )
    assert not checker.check_word(g, ["Ask", "Denoise", "input:image", "Caption", "input:image"])[0]
    # the task interface: image is not an output, three inputs exceed max_inputs
    assert not checker.check_plan(PHOTO_DESK, lines("Denoise", "input:image"), ["image"], "image")[
        0
    ]
    assert not checker.check_plan(
        PHOTO_DESK, lines("Caption", "input:image"), ["image", "image", "text"], "text"
    )[0]


def test_plan_file_forms() -> None:
    word = ["Image Captioning", "input:image"]
    doc = {"word": word, "inputs": {"image": "image"}, "output": "text"}
    assert checker.check_plan(OPENAGI, "\ufeff" + json.dumps(doc), None, None)[0]
    text = "# a plan\nImage Captioning,   # the caption\n\ninput:image\n"
    assert checker.read_plan(text)[0] == word
    assert checker.read_plan("C# Compiler\n")[0] == ["C# Compiler"]
    assert checker.read_plan("ε\n")[0] == []


@pytest.mark.parametrize(
    ("word", "valid"),
    [
        ([], True),
        (["a", "b"], True),
        (["a", "a", "b", "b"], True),
        (["a", "b", "b"], False),
        (["b", "a"], False),
        (["a"], False),
    ],
)
def test_anbn(word: list[str], valid: bool) -> None:
    assert checker.check_plan(ANBN, lines(*word) if word else "ε\n", None, None)[0] is valid


def test_anbn_earley_agrees_with_counting() -> None:
    g = checker.grammar_grammar(checker._load_yaml(ANBN))
    rng = random.Random(5)
    for _ in range(300):
        w = rng.choices(["a", "b"], k=rng.randint(0, 8))
        n = len(w) // 2
        assert checker.earley_recognize(g, w) == (w == ["a"] * n + ["b"] * n and len(w) % 2 == 0)


def test_cooking_sets_and_limits() -> None:
    g = checker.grammar_grammar(checker._load_yaml(COOKING))
    rng = random.Random(1)
    found = 0
    for _ in range(50):
        w = generate.derive(rng, g.productions, g.start, max_len=40, limits=g.limits)
        if w is not None:
            found += 1
            assert checker.check_word(g, w)[0], w
            assert not checker.check_word(g, [*w, w[0]])[0]
    assert found


def test_limited_terminal() -> None:
    spec = ANBN.replace("a: the letter a", "a: {description: the letter a, max_uses: 2}")
    assert checker.check_plan(spec, lines("a", "a", "b", "b"), None, None)[0]
    assert not checker.check_plan(spec, lines("a", "a", "a", "b", "b", "b"), None, None)[0]


def test_unsupported_forms_are_not_guessed() -> None:
    with pytest.raises(checker.Unsupported):
        checker.check_plan("kind: automaton\nautomaton: {}\n", "x\n", None, None)
    with pytest.raises(checker.Unsupported):
        checker.check_plan("a: &x [1]\nb: *x\n", "x\n", None, None)
