"""The runner-up reading: exact within the slack asked for, and reported only when close."""

from __future__ import annotations

from pathlib import Path

import pytest

from fllm_cli import api
from fllm_cli.search import interface
from fllm_cli.search.strategy import strategy

ROOT = Path(__file__).resolve().parents[2]
REQUESTS = [  # written for this test: each has more than one plausible reading
    "Make a picture from my prompt, then answer my question about it: is it raining?",
    "Here is a story and a question about it: who is the hero?",
    "Fill in the blanked words of my sentence, then translate it to German",
    "Summarise this article and draw an illustration for it",
    "What animal is in this blurry photo, and say it in French",
]


def _without(options: interface.Interfaces, combo: tuple[str, ...], output: str) -> list:
    left = [
        (c, [o for o in outs if (sorted(c), o) != (sorted(combo), output)]) for c, outs in options
    ]
    return [(c, outs) for c, outs in left if outs]


@pytest.mark.slow
@pytest.mark.parametrize("text", REQUESTS)
def test_with_slack_every_reading_that_close_is_scored_exactly(text: str) -> None:
    """Ranking again without the best reading gives, first, the exact runner-up: with slack the
    list holds it at the same score whenever it is within the slack; without, it may not."""
    domain = api.load_domain(str(ROOT / "domains" / "openagi.yaml"))
    relevance = interface.tool_evidence(domain, text, strategy("meaning"))
    assert relevance is not None
    options = interface.feasible_interfaces(domain)
    slack = 2.0  # wide, so that most requests have a runner-up inside it
    ranked = interface.rank_interfaces(domain, text, options, relevance, slack=slack)
    plain = interface.rank_interfaces(domain, text, options, relevance)
    assert ranked[0] == plain[0]  # the slack never changes the chosen reading or its score
    top, combo, output = ranked[0]
    second = interface.rank_interfaces(domain, text, _without(options, combo, output), relevance)
    if second and second[0][0] >= top - slack:
        assert ranked[1][0] == pytest.approx(second[0][0])


def test_a_close_second_is_noted_with_how_far_behind_it_is() -> None:
    ranked = [(3.0, ("text",), "text"), (2.9, ("text", "text"), "text"), (1.0, ("image",), "text")]
    reading: dict = {}
    interface._note_close(reading, ranked, 0)
    assert reading["close"] == {"inputs": ["text", "text"], "output": "text", "behind": 0.1}
    far: dict = {}
    interface._note_close(far, [ranked[0], ranked[2]], 0)
    assert "close" not in far
    tied = [(3.0, ("text",), "text"), (3.0, ("image",), "text")]
    picked: dict = {}  # the model took the second of two tied readings: the other is the close one
    interface._note_close(picked, tied, 1)
    assert picked["close"] == {"inputs": ["text"], "output": "text", "behind": 0.0}
    alone: dict = {}
    interface._note_close(alone, ranked[:1], 0)
    assert "close" not in alone
