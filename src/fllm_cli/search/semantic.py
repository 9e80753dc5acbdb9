"""Evidence from meaning: which tools a request needs, by sentence embeddings of its parts.

A request is cut into *parts* (clauses and list items: "my old photo is grainy", "out of
focus", "tell me in one sentence what's in it"). Each part is embedded, and so is each tool's
name and description from the domain file. A part is evidence for the tools it is about:
those whose similarity to it is above a floor and close to the part's best tool. In the beam
(:mod:`fllm_cli.search.beam`) a part is evidence for one step only, so two parts that both
say "blurry" cannot bring in two tools, and one part that fits two tools supports whichever
the rest of the plan needs.

Nothing here is tied to a domain: the parts come from the request's punctuation and
coordination, the tools' texts from the domain file.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from fllm_cli.search.relevance import Relevance, placed_words, same_word, unit_key, words

FLOOR = 0.22  # similarity below which a part says nothing about a tool
MARGIN = 0.06  # a part supports the tools within this of its best one
STANDOUT = 1.5  # ... and that stand out of the part's row (standard deviations above its mean)
SCALE = 10.0  # similarity points -> evidence units (a penalty is 1.0)
EXTRA = 0.25  # worth of a step's second and later parts (see Relevance.extra)
STEP_COST = 1.0  # what each step costs against its evidence (see Relevance.cost)
WORD_WEIGHT = 0.5  # a single word's evidence against a whole part's
MIN_WORD = 3  # letters of a word worth embedding alone
PART_TYPE_MARGIN = 0.05  # a part closer to a type than to its best tool by this says no tool
WORD_TYPE_MARGIN = 0.10  # a word must be nearer its best tool than every type by this
WORD_STANDOUT = 2.0  # a word must stand out further than a part: single words match loosely
LEAD = 0.5  # a part's extra worth per standard deviation (of its row) its best tool leads by

# Where a request splits into parts: punctuation, and coordinating words standing alone (not
# inside "black-and-white").
_SPLIT = re.compile(
    r"[;:,.!?\n()]+|(?<![\w-])(?:and|then|also|plus|but|after that|afterwards|finally)(?![\w-])",
    re.IGNORECASE,
)


if TYPE_CHECKING:
    import numpy as np


class Embedder(Protocol):
    def embed(self, texts: list[str], lasting: bool = False) -> np.ndarray: ...


def parts(text: str) -> list[str]:
    """Return the request's parts that hold at least one content word, in order."""
    out = []
    for piece in _SPLIT.split(text):
        piece = " ".join(piece.split())
        if piece and words(piece):
            out.append(piece)
    return out or ([text.strip()] if text.strip() else [])


def units(text: str) -> list[tuple[str, float]]:
    """Return the request's evidence units and their weights: each part in full, and each of a
    part's content words at ``WORD_WEIGHT`` (a clause such as "noisy blurry grayscale image"
    asks for three things, and only its words can say so one step each)."""
    out: list[tuple[str, float]] = []
    seen: set[str] = set()
    for piece in parts(text):
        out.append((piece, 1.0))
        content = [w for w in words(piece) if len(w) >= MIN_WORD]
        if len(content) > 1:
            for w in content:
                if w not in seen:
                    seen.add(w)
                    out.append((w, WORD_WEIGHT))
    return out


def _reach(n: int) -> float:
    """Seven tenths of the most standard deviations one of ``n`` values can stand out."""
    return 0.7 * math.sqrt(max(n - 1, 0))


def _lead(sim: float, top_two: list[float], spread: float) -> float:
    """By how many standard deviations of its row ``sim`` stands above the row's next value,
    when it is the row's best (else 0). A part whose best tool is far ahead of every other
    clearly asks for that tool, even when the similarity itself is modest ("in Italian" and
    Machine Translation); measured in the row's spread, it reads the same on any encoder's
    scale."""
    if len(top_two) < 2 or sim < top_two[0] or spread <= 0.0:
        return 0.0
    return (sim - top_two[1]) / spread


def tool_texts(described: Mapping[str, str]) -> dict[str, str]:
    """The text embedded for each symbol: its name and what it does."""
    return {name: f"{name}: {text}" if text else name for name, text in described.items()}


def type_text(phrase: str, description: str) -> str:
    """The text embedded for a data type: its phrase and what it is."""
    return f"{phrase}: {description}" if description else phrase


def similarities(
    encoder: Embedder, described: Mapping[str, str], task: str, types: Sequence[str] = ()
) -> tuple[list[tuple[str, float]], list[str], np.ndarray, np.ndarray | None]:
    """Return (the request's units and weights, symbols, unit x symbol cosine similarities,
    each unit's best similarity to a type, or None without types); each unit embedded once."""
    texts = tool_texts(described)
    symbols = list(texts)
    found = units(task)
    if not symbols or not found:
        return found, symbols, encoder.embed([])[:0, :0], None
    rows = encoder.embed([u for u, _ in found])
    sims = rows @ encoder.embed([texts[s] for s in symbols], lasting=True).T
    type_best = (rows @ encoder.embed(list(types), lasting=True).T).max(1) if types else None
    return found, symbols, sims, type_best


def relevance(
    encoder: Embedder, described: Mapping[str, str], task: str, types: Sequence[str] = ()
) -> Relevance:
    """Score each symbol by the request's parts that are about it.

    ``types`` are the texts of the data types the symbols pass along ("table: a spreadsheet or
    table of rows and columns"). A single word closer to a type than to any tool names what
    flows ("spreadsheet"), not what to do with it, and is no evidence for a tool; so is a word
    that is not clearly (``WORD_TYPE_MARGIN``) nearer its tool than every type: "voice" in "this
    voice memo" is nearer reading aloud than a recording, but only just, and it names the
    recording.
    """
    found, symbols, sims, type_best = similarities(encoder, described, task, types)
    pieces = [u for u, _ in found]
    weights = [w for _, w in found]
    matched: dict[str, dict[str, float]] = {s: {} for s in symbols}
    for i, piece in enumerate(pieces):
        row = sims[i]
        if not len(row):
            continue
        best = float(row.max())
        if type_best is not None and float(type_best[i]) >= best + (
            -WORD_TYPE_MARGIN if weights[i] != 1.0 else PART_TYPE_MARGIN
        ):
            continue  # a type word, or a part that only says what data there is
        mean, spread = float(row.mean()), float(row.std())
        top_two = sorted((float(v) for v in row), reverse=True)[:2]
        for j, symbol in enumerate(symbols):
            sim = float(row[j])
            # Among n values none lies more than sqrt(n - 1) deviations above the mean: small
            # domains get a proportionally lower bar.
            need = min(STANDOUT if weights[i] == 1.0 else WORD_STANDOUT, _reach(len(row)))
            stands_out = len(row) < 3 or sim >= mean + need * spread
            if sim >= FLOOR and sim >= best - MARGIN and stands_out:
                value = weights[i] * (SCALE * (sim - FLOOR) + 0.5)
                if weights[i] == 1.0:  # a whole part: how clearly it picks this tool
                    value += LEAD * _lead(sim, top_two, spread)
                matched[symbol][unit_key(i, piece)] = round(value, 4)
    scores = {s: sum(m.values()) for s, m in matched.items()}
    return Relevance(scores, 0.0, {s: m for s, m in matched.items() if m}, EXTRA, STEP_COST)


TYPE_FLOOR = 0.27  # similarity from which a single word names a type
TYPE_MARGIN = 0.03  # ... and by which it must prefer that type to every other


def type_places(
    encoder: Embedder,
    described: Mapping[str, str],
    types: Mapping[str, tuple[str, str]],
    task: str,
) -> list[tuple[int, str]]:
    """Return (where in the request, type) for each word that names a type, in order.

    A word names a type when it is one of the type's own words (its name or phrase), or when
    its meaning is closer to that type's text than to every other type (by ``TYPE_MARGIN``)
    and to every symbol's text, and close enough (``TYPE_FLOOR``): "photo" names an image,
    "spreadsheet" a table, "scanned" a scanned page, while "blurry" names a tool's purpose.
    """
    names = list(types)
    own = {n: words(f"{n} {phrase}") for n, (phrase, _) in types.items()}
    placed = [(at, w) for at, w in placed_words(task) if len(w) >= MIN_WORD]
    content = [w for _, w in placed]
    if not names or not content:
        return []
    texts = [type_text(p, d) for p, d in types.values()]
    rows = encoder.embed(content)
    by_type = rows @ encoder.embed(texts, lasting=True).T
    tools = tool_texts(described)
    by_tool = rows @ encoder.embed(list(tools.values()), lasting=True).T if tools else None
    found: list[tuple[int, str]] = []
    for i, w in enumerate(content):
        exact = [n for n in names if any(same_word(w, f) for f in own[n])]
        if len(exact) == 1:
            found.append((placed[i][0], exact[0]))
            continue
        row = by_type[i]
        order = row.argsort()[::-1]
        best = float(row[order[0]])
        second = float(row[order[1]]) if len(order) > 1 else -1.0
        tool_best = float(by_tool[i].max()) if by_tool is not None else -1.0
        if best >= TYPE_FLOOR and best - second >= TYPE_MARGIN and best >= tool_best:
            found.append((placed[i][0], names[int(order[0])]))
    return found


def type_mentions(
    encoder: Embedder,
    described: Mapping[str, str],
    types: Mapping[str, tuple[str, str]],
    task: str,
) -> list[str]:
    """Return the types the request names, in the order it names them (:func:`type_places`)."""
    return [t for _, t in type_places(encoder, described, types, task)]
