"""A learned reading of which tools a request needs.

The meaning signal (:mod:`fllm_cli.search.semantic`) compares each part of a request with each
tool's text and takes the parts that stand out; this reader learns from examples how a
request's words, in their context, point at a tool's purpose. Each word of the request is read
by the encoder in context (its contextual state) and by the clause it stands in, as the role
reader (:mod:`fllm_cli.search.roles`) reads them. A word's pull towards a tool is a weighted sum
of four similarities (its state's and its clause's to the tool's text, each also measured
against the other tools of the domain, in standard deviations), the domain's size (the log of
its number of tools) and two learned low-rank maps from the word's state and clause to the
tools' texts; a tool's score is a soft maximum over the words. The score is the log-odds that
the tool is one of the plan's steps.

The weights (five scalars, a bias, a context detector and two rank-8 maps) were fitted by
``bench/train_needs.py`` on the synthetic tool domains of ``bench/synthetic/``, fields that no
held-out measurement set covers, and on the same requests in smaller random cuts of their
domains, so that the size term is learned for domains of three tools as well as fifteen. They
were then tuned by ``bench/tune_readers.py`` together with a small change to the encoder's top
four layers (rank 8 per matrix), which this reader alone reads through: MiniLM as published
puts some purposes far from the words that ask for them. Nothing here names a domain or a word.

As planner evidence, every tool gets one unit: its log-odds times ``WEIGHT`` when above 0 (the
request likely needs it), times ``AGAINST`` when below (a step that uses it costs more). The
unit is credited to one step only, and counts in full beside the parts of the request the
meaning signal found for that step (``Relevance.apart``): it is a reading of the whole
request, not one more part of it. Both weights were chosen on the validation sets with
``bench/weight_variants.py``; docs/benchmarks.md has the figures.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from fllm_cli.search.relevance import Relevance
from fllm_cli.search.roles import (
    Adapter,
    Encoder,
    Through,
    check_shapes,
    context,
    load_weights,
    save_weights,
)
from fllm_cli.search.semantic import tool_texts

if TYPE_CHECKING:
    import numpy as np

WEIGHTS = Path(__file__).with_name("needs.npz")
SIMILARITIES = 5  # channels per word and tool, see similarities()
WEIGHT = 0.4  # evidence per unit of a tool's log-odds above 0, against a step's cost of 1
AGAINST = 0.75  # ... and per unit below 0, against the tool (docs/benchmarks.md: a zone
# below 0 that said nothing was measured and dropped)
UNIT = "the request as a whole"  # how an explanation names the reader's evidence


def similarities(state: np.ndarray, clause: np.ndarray, tools: np.ndarray) -> np.ndarray:
    """SIMILARITIES x W x J: each word's state and clause against each tool's text, raw and
    standardised across the domain's tools (how far the tool stands out for that word), and
    the log of the number of tools (the fewer tools a domain has, the likelier each one is a
    step: in a three-tool domain most plans use one of three, in a fifteen-tool one of fifteen).
    """
    import numpy as np

    out = []
    for rows in (state @ tools.T, clause @ tools.T):
        mean, spread = rows.mean(1, keepdims=True), rows.std(1, keepdims=True) + 1e-6
        out += [rows, (rows - mean) / spread]
    out.append(np.full_like(out[0], math.log(max(tools.shape[0], 1))))
    return np.stack(out)


@dataclass(frozen=True)
class NeedModel:
    """``mix`` weighs the similarities, ``bias`` shifts every tool, ``cue`` lets a word's
    context say how much it asks for anything, and ``left``/``right`` (state) and
    ``clause_left``/``clause_right`` (clause) are low-rank maps to the tools' texts."""

    mix: np.ndarray  # (SIMILARITIES,)
    bias: np.ndarray  # (1,)
    cue: np.ndarray  # (384,)
    left: np.ndarray  # (384, R)
    right: np.ndarray  # (384, R)
    clause_left: np.ndarray  # (384, R)
    clause_right: np.ndarray  # (384, R)
    adapter: Adapter = field(default_factory=dict)  # the encoder change it reads through

    @staticmethod
    def fields() -> tuple[str, ...]:
        return ("mix", "bias", "cue", "left", "right", "clause_left", "clause_right")

    @classmethod
    def load(cls, path: Path | None = None) -> NeedModel:
        arrays, adapter = load_weights(WEIGHTS if path is None else path, cls.fields())
        rank = arrays["left"].shape[-1] if arrays["left"].ndim == 2 else -1
        check_shapes(arrays, {
            "mix": (SIMILARITIES,), "bias": (1,), "cue": (384,), "left": (384, rank),
            "right": (384, rank), "clause_left": (384, rank), "clause_right": (384, rank),
        })  # fmt: skip
        return cls(**arrays, adapter=adapter)

    def save(self, path: Path) -> None:
        save_weights(path, {k: getattr(self, k) for k in self.fields()}, self.adapter)


def scores(
    model: NeedModel, state: np.ndarray, clause: np.ndarray, tools: np.ndarray
) -> np.ndarray:
    """Each tool's log-odds of being needed (J,), from the request's W words."""
    import numpy as np

    z = np.tensordot(model.mix, similarities(state, clause, tools), axes=(0, 0))
    z += (state @ model.left) @ (tools @ model.right).T
    z += (clause @ model.clause_left) @ (tools @ model.clause_right).T
    z += (state @ model.cue)[:, None]
    top = z.max(0)
    out: np.ndarray = top + np.log(np.exp(z - top).sum(0)) + model.bias[0]
    return out


_MODEL: dict[str, NeedModel | None] = {}
_LOCK = threading.Lock()


def shipped_model() -> NeedModel | None:
    """The fitted weights shipped with fllm (None when the file is missing or unreadable)."""
    with _LOCK:
        if "model" not in _MODEL:  # tried once per process, not per plan
            try:
                _MODEL["model"] = NeedModel.load()
            except (OSError, KeyError, ValueError):
                _MODEL["model"] = None
        return _MODEL["model"]


THROUGH = Through()


def read(encoder: Encoder, described: Mapping[str, str], text: str) -> dict[str, float]:
    """Each tool's log-odds of being needed by ``text``; empty without weights or words."""
    model = shipped_model()
    if model is None or not described:
        return {}
    through = THROUGH(encoder, model.adapter)
    if through is None:  # the weights were fitted through changes this encoder cannot take
        return {}
    read = context(through, text)
    if read is None:
        return {}
    _, state, clause = read
    names = list(described)
    texts = tool_texts(described)
    found = scores(model, state, clause, through.embed([texts[n] for n in names], lasting=True))
    return {n: float(v) for n, v in zip(names, found)}


def worth(odds: float) -> float:
    """A tool's evidence from its log-odds: for it above 0, against it below."""
    return (WEIGHT if odds > 0 else AGAINST) * odds


def relevance(encoder: Encoder, described: Mapping[str, str], text: str) -> Relevance:
    """The reader's evidence for the planner: one unit per tool, for or against it (see the
    module note); silent without weights."""
    odds = read(encoder, described, text)
    matched = {n: {f"{UNIT} ({n})": round(worth(v), 4)} for n, v in odds.items()}
    scores_ = {n: sum(m.values()) for n, m in matched.items()}
    return Relevance(scores_, 0.0, matched, apart=frozenset(u for m in matched.values() for u in m))
