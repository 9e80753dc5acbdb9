"""TextModel's choose: parse the reply, correct once, then fall back to the first option."""

from __future__ import annotations

import pytest

from fllm_cli.errors import BackendError
from fllm_cli.llm import ChoiceRequest, parse_choice
from fllm_cli.llm.base import CORRECTION
from fllm_cli.llm.simple import ScriptedModel

OPTIONS = ("Image Denoising", "Colorization", "Image Captioning")
REQUEST = ChoiceRequest(prompt="Pick a tool.\n1. ...\n2. ...\n3. ...", options=OPTIONS)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("2", 1),
        ("Option 3.", 2),
        ("I pick 7, no, 1", 0),  # 7 is not an option; the first listed number wins
        ("colorization", 1),
        ("Use Image Captioning then colorization", 2),  # the earliest text match wins
        ("", None),
        ("none of them", None),
    ],
)
def test_parse_choice(reply: str, expected: int | None) -> None:
    assert parse_choice(reply, OPTIONS) == expected


def test_first_reply_parsed() -> None:
    model = ScriptedModel(["The answer is 2"])
    result = model.choose(REQUEST)
    assert (result.index, result.fallback, result.calls) == (1, False, 1)
    assert result.raw == "The answer is 2"


def test_correction_then_success() -> None:
    model = ScriptedModel(["I am not sure", "3"])
    result = model.choose(REQUEST)
    assert (result.index, result.fallback, result.calls) == (2, False, 2)
    second = model.prompts[1]
    assert second.startswith(REQUEST.prompt)
    assert second.endswith(CORRECTION.format(reply="I am not sure", n=3))


def test_fallback_to_first_option_after_two_bad_replies() -> None:
    model = ScriptedModel(["hmm", "still nothing"])
    result = model.choose(REQUEST)
    assert (result.index, result.fallback, result.calls) == (0, True, 2)
    assert len(result.exchanges) == 2


def test_callable_answer_sees_options() -> None:
    model = ScriptedModel([lambda prompt, options: options[-1]])
    assert model.choose(REQUEST).index == 2


def test_scripted_runs_out_cleanly() -> None:
    with pytest.raises(BackendError, match="ran out of answers"):
        ScriptedModel([]).choose(REQUEST)
