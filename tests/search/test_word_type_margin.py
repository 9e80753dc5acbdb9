"""A single word counts for a tool only when it is clearly nearer that tool than every data type
(semantic.WORD_TYPE_MARGIN): "voice" in "this voice memo" names the recording it is about."""

from __future__ import annotations

import numpy as np
import pytest

from fllm_cli.search import semantic

TOOLS = {
    "Narrator": "reads a text aloud in a synthetic voice",
    "Transcriber": "writes down the words spoken in a recording",
    "Shortener": "cuts a text down to its main points",
    "Tagger": "labels a recording by its topic",
}
RECORDING = "recording: spoken audio, such as a voice memo"
TEXT = "text: written words"


class Encoder:
    """Hand-made vectors: each tool text and type text is an axis of its own, a word is a mix of
    them, and anything else lies on an axis of its own (similar to nothing)."""

    def __init__(self, words: dict[str, dict[str, float]]) -> None:
        self.axes = [*semantic.tool_texts(TOOLS).values(), RECORDING, TEXT, "elsewhere"]
        self.words = words

    def embed(self, texts: list[str], lasting: bool = False) -> np.ndarray:
        rows = []
        for text in texts:
            row = np.zeros(len(self.axes))
            if text in self.axes:
                row[self.axes.index(text)] = 1.0
            for axis, value in self.words.get(text, {}).items():
                row[self.axes.index(axis)] = value
            row[-1] = max(0.0, 1.0 - float(row @ row)) ** 0.5  # the rest: unit length
            rows.append(row)
        return np.array(rows).reshape(len(texts), len(self.axes))


def _word_evidence(tool_sim: float, type_sim: float) -> dict[str, float]:
    narrator = semantic.tool_texts(TOOLS)["Narrator"]
    enc = Encoder({"voice": {narrator: tool_sim, RECORDING: type_sim}})
    rel = semantic.relevance(enc, TOOLS, "this voice memo", [RECORDING, TEXT])
    return dict(rel.matched.get("Narrator", {}))


def test_a_word_only_just_nearer_a_tool_than_a_type_names_the_type() -> None:
    assert _word_evidence(0.53, 0.47) == {}  # nearer the tool, but by less than the margin


def test_a_word_clearly_nearer_a_tool_is_evidence_for_it() -> None:
    assert list(_word_evidence(0.53, 0.40)) == ["#1 voice"]


def test_without_the_margin_the_word_would_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semantic, "WORD_TYPE_MARGIN", 0.0)
    assert list(_word_evidence(0.53, 0.47)) == ["#1 voice"]
