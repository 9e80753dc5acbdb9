"""A type named only after a part that asks to make it is the plan's product, not an input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fllm_cli.domain.load import load_domain
from fllm_cli.domain.model import Domain
from fllm_cli.meaning import encoder
from fllm_cli.search import interface
from fllm_cli.search.relevance import Relevance, unit_key
from tests.conftest import run_fllm

PODCAST = """\
fllm: 1
name: podcast
description: Work on podcast audio.
modalities:
  recording: {phrase: recording, description: "recorded audio"}
  transcript: {phrase: transcript, description: "the words spoken in a recording, written out"}
  notes: {phrase: notes, description: "show notes for an episode"}
tools:
  - {name: Transcriber, description: writes out the words spoken in audio,
     inputs: [recording], output: transcript}
  - {name: Hiss Remover, description: removes background hiss from audio,
     inputs: [recording], output: recording}
  - {name: Transcript Fixer, description: corrects spelling in a transcript,
     inputs: [transcript], output: transcript}
  - {name: Notes Writer, description: writes show notes from a transcript,
     inputs: [transcript], output: notes}
  - {name: Overdub, description: replaces spoken words in audio with a corrected script,
     inputs: [recording, transcript], output: recording}
"""


WRITE = "then write notes from the transcript"


def _domain(tmp_path: Path) -> Domain:
    path = tmp_path / "podcast.yaml"
    path.write_text(PODCAST)
    return load_domain(path)


def _relevance(text: str, pointed: dict[str, str]) -> Relevance:
    """Evidence with each part of ``text`` in ``pointed`` pointing at its tool."""
    parts = [" ".join(p.split()) for p in text.split(",")]
    matched = {tool: {unit_key(parts.index(part), part): 2.0} for part, tool in pointed.items()}
    return Relevance({tool: 2.0 for tool in matched}, 0.0, matched)


def test_a_type_named_after_the_part_that_makes_it_is_not_read_as_given(tmp_path: Path) -> None:
    domain = _domain(tmp_path)
    text = "Here is the audio, transcribe it, then write notes from the transcript"
    relevance = _relevance(text, {"transcribe it": "Transcriber", WRITE: "Notes Writer"})
    places = [(text.index("audio"), "recording"), (text.index("transcript"), "transcript")]
    assert interface.made_first(domain, text, relevance, places) == {"transcript"}


def test_parts_are_placed_across_line_breaks_and_repeats(tmp_path: Path) -> None:
    # The units are whitespace-collapsed; the request is not. A part broken over a line, and a
    # word that also occurs earlier, are still placed where the part really stands.
    domain = _domain(tmp_path)
    text = "the transcript: audio here,  transcribe\n  it, then write notes from the transcript"
    relevance = _relevance(text, {"transcribe it": "Transcriber", WRITE: "Notes Writer"})
    places = [(text.index("audio"), "recording"), (text.rindex("transcript"), "transcript")]
    assert interface.made_first(domain, text, relevance, places) == {"transcript"}
    assert interface.find_part(text, "transcribe it") == text.index("transcribe")
    assert interface.find_part(text, "transcript", 5) == text.rindex("transcript")
    assert interface.find_part(text, "not there") == -1


def test_a_type_named_before_it_is_made_or_reworked_in_place_stays_given(
    tmp_path: Path,
) -> None:
    domain = _domain(tmp_path)
    text = "Here is my transcript and the audio, transcribe the audio, write notes"
    pointed = {"transcribe the audio": "Transcriber", "write notes": "Notes Writer"}
    relevance = _relevance(text, pointed)
    places = [(text.index("transcript"), "transcript"), (text.index("audio"), "recording")]
    assert interface.made_first(domain, text, relevance, places) == frozenset()
    # Fixing a transcript reworks its own type: naming it after that part is no sign it is made.
    text = "Fix the spelling, then the transcript goes to notes"
    relevance = _relevance(text, {"Fix the spelling": "Transcript Fixer"})
    places = [(text.index("transcript"), "transcript")]
    assert interface.made_first(domain, text, relevance, places) == frozenset()


def test_an_interface_giving_the_made_type_loses_made_first(tmp_path: Path) -> None:
    domain = _domain(tmp_path)
    text = "Here is the audio, transcribe it, then write notes from the transcript"
    relevance = _relevance(text, {"transcribe it": "Transcriber", WRITE: "Notes Writer"})
    options = interface.feasible_interfaces(domain)

    def scores(late: frozenset[str]) -> dict[tuple[tuple[str, ...], str], float]:
        ranked = interface.rank_interfaces(
            domain, text, options, relevance, named=["recording", "transcript"], late=late,
            slack=10.0,
        )  # fmt: skip
        return {(combo, output): total for total, combo, output in ranked}

    before, after = scores(frozenset()), scores(frozenset({"transcript"}))
    both = (("recording", "transcript"), "notes")
    assert after[both] == pytest.approx(before[both] - interface.MADE_FIRST)
    alone = (("recording",), "notes")
    assert after[alone] == pytest.approx(before[alone])


@pytest.mark.skipif(not encoder.available(), reason="the encoder is not installed")
def test_explain_names_a_type_named_after_the_part_that_makes_it(tmp_path: Path) -> None:
    spec = tmp_path / "podcast.yaml"
    spec.write_text(PODCAST)
    out = tmp_path / "plan.json"
    request = "Here is the episode audio. Transcribe it, then write show notes from the transcript."
    code, _, err = run_fllm("plan", str(spec), request, "--explain", "-o", str(out))
    assert code == 0, err
    assert "transcript is named only after a part asking to make it" in " ".join(err.split())
    doc = json.loads(out.read_text())
    assert "transcript" in doc["why"]["interface"]["named_after_made"]
    code, _, err = run_fllm("verify", str(spec), str(out))
    assert code == 0, err
