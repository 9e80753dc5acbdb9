"""What the task text says about the domain's parts: which tools it asks for, which types it names.

Pure and cheap, computed once per task. The evidence comes only from the domain file (each
plan symbol's name and description, the modalities' names and phrases) and the task text:

* words are compared by a shared prefix (``noisy`` ~ ``noise``, ``gray`` ~ ``grayscale``,
  ``caption`` ~ ``captioning``), so no language-specific stemmer is needed;
* a word counts by how rare it is among the symbols' descriptions (inverse document frequency):
  ``picture`` appears in most image tools' descriptions and says little, ``blurry`` in one;
* type words (modality names and phrases) are left out of the symbols' vocabularies: they say
  what flows between tools, not which tool the task wants;
* a symbol is *relevant* when its evidence reaches the weight of one word shared by at most two
  symbols; anything weaker is treated as no evidence.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

_WORD = re.compile(r"[^\W\d_]+")
# Words too common in any English text to be evidence (kept short and domain-free).
_COMMON = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "to",
        "in",
        "into",
        "from",
        "and",
        "or",
        "with",
        "for",
        "on",
        "by",
        "is",
        "are",
        "be",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "as",
        "at",
        "such",
        "one",
        "two",
        "some",
        "any",
        "each",
        "how",
        "what",
        "which",
        "when",
        "where",
        "step",
        "steps",
    ]
)
MIN_PREFIX = 4  # letters two words must share at least
SHARE = 0.8  # ... and at least this part of the shorter word


def words(text: str) -> list[str]:
    """Return the lower-case words of ``text`` that can carry meaning."""
    return [w for _, w in placed_words(text)]


def placed_words(text: str) -> list[tuple[int, str]]:
    """:func:`words` with where each starts in ``text``."""
    found = ((m.start(), m.group(0).lower()) for m in _WORD.finditer(text))
    return [(at, w) for at, w in found if w not in _COMMON]


def same_word(a: str, b: str) -> bool:
    """Whether two lower-case words look like forms of one word (a long enough shared prefix)."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n >= max(MIN_PREFIX, SHARE * min(len(a), len(b))) or a == b


def _any_same(word: str, others: Iterable[str]) -> bool:
    return any(same_word(word, o) for o in others)


@dataclass(frozen=True)
class Relevance:
    """Scores of each plan symbol against one task text (0 = no evidence).

    ``matched`` keeps, per symbol, the task words it matched and their weights: a task word is
    evidence for one step of a plan, so a search can credit it once (see ``gain``).
    ``extra`` is what each unit beyond a step's strongest one counts for (1: all in full); below
    1, a step that several parts of a request point at leaves the weaker parts' worth to the
    other steps they also fit.
    """

    scores: Mapping[str, float]
    threshold: float
    matched: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    extra: float = 1.0
    # What every step costs against its evidence; None keeps the words' rule (a step with
    # evidence adds it, one without costs the search's penalty).
    cost: float | None = None
    # Units that count in full beside a step's others, outside the ``extra`` rule: evidence
    # about the whole request (search/needs.py), not one more part of it.
    apart: frozenset[str] = frozenset()

    def _worth(self, units: Mapping[str, float]) -> float:
        """What a step credited with ``units`` gets: its strongest part in full, its other
        parts at ``extra``, and the units kept apart in full."""
        full = sum(v for u, v in units.items() if u in self.apart)
        rest = [v for u, v in units.items() if u not in self.apart]
        if not rest:
            return full
        top = max(rest)
        return full + top + self.extra * (sum(rest) - top)

    def net(self, value: float, penalty: float) -> float:
        """Return what a step whose evidence is ``value`` does to a plan's score."""
        if self.cost is not None:
            return value - self.cost
        return value if value > 0 else -penalty

    def gain(self, symbol: str, claimed: frozenset[str]) -> tuple[float, frozenset[str]]:
        """Return what using ``symbol`` adds when ``claimed`` task words are already used, and
        the words it claims; 0 when what is left of its evidence falls below the threshold."""
        mine = {w: v for w, v in self.matched.get(symbol, {}).items() if w not in claimed}
        value = self._worth(mine) if mine and self.extra != 1.0 else sum(mine.values())
        if value < 0 and any(u in self.apart for u in mine):
            return value, frozenset(mine)  # evidence against the tool, from the whole request
        if value <= 0 or value < self.threshold:
            return 0.0, frozenset()
        return value, frozenset(mine)

    def best_left(self, claimed: frozenset[str], among: frozenset[str] | None = None) -> float:
        """Return the most the unclaimed task words could still add (a bound for pruning),
        counting only the symbols in ``among`` when given."""
        top: dict[str, float] = {}
        for symbol, words_of in self.matched.items():
            if among is not None and symbol not in among:
                continue
            for w, v in words_of.items():
                if w not in claimed:
                    top[w] = max(top.get(w, 0.0), v)
        return sum(top.values())

    def ceiling(self, among: frozenset[str]) -> float:
        """Return the most any plan of the symbols ``among`` can score (a bound for pruning).

        With a step cost, a symbol adds at most its evidence with every unit its own, less the
        cost, and only if that is positive; without one, the unclaimed words bound it."""
        if self.cost is None:
            return self.best_left(frozenset(), among)
        total = 0.0
        for symbol in sorted(among):  # a fixed order: the same sum in every process
            units = self.matched.get(symbol)
            if units:
                total += max(0.0, self._worth(units) - self.cost)
        return total

    def of(self, symbol: str) -> float:
        """Return the symbol's score; 0 for symbols the evidence does not cover."""
        return self.scores.get(symbol, 0.0)

    def relevant(self) -> list[str]:
        """Return the symbols with evidence, best first."""
        return sorted((s for s, v in self.scores.items() if v > 0), key=lambda s: -self.scores[s])

    @property
    def silent(self) -> bool:
        """True when the text points at no symbol at all."""
        return not any(v > 0 for v in self.scores.values())

    @property
    def mute(self) -> bool:
        """True when the text says nothing about any symbol, neither for nor against it (a
        silent reading may still hold evidence against some symbols)."""
        return not any(self.scores.values())


def unit_key(place: int, text: str) -> str:
    """The key of a request unit that keeps its place in the request ("#3 chart it")."""
    return f"#{place} {text}"


_PLACED = re.compile(r"(?:\w+:)?#(\d+) (.*)", re.DOTALL)


def unit_place(key: str) -> tuple[int, str] | None:
    """Return (place, text) of a unit key written by :func:`unit_key`, also once a signal's
    name prefixes it ("meaning:#3 chart it"); None for units with no place (bare words)."""
    found = _PLACED.fullmatch(key)
    return (int(found.group(1)), found.group(2)) if found else None


def vocabulary(described: Mapping[str, str], type_words: Iterable[str]) -> dict[str, set[str]]:
    """Return each symbol's content words (its name and description, type words removed)."""
    types = {w for t in type_words for w in words(t)}
    return {
        symbol: {w for w in words(text) if not _any_same(w, types)}
        for symbol, text in described.items()
    }


def score(vocab: Mapping[str, set[str]], task: str) -> Relevance:
    """Score every symbol of ``vocab`` against the task text."""
    n = len(vocab)
    if n == 0:
        return Relevance({}, 0.0)
    task_words = set(words(task))
    spread: dict[str, int] = {}
    for mine in vocab.values():
        for w in mine:
            if w not in spread:
                spread[w] = sum(1 for other in vocab.values() if _any_same(w, other))
    threshold = math.log(n / 2) if n > 2 else 0.0
    out: dict[str, float] = {}
    matched: dict[str, dict[str, float]] = {}
    for symbol, mine in vocab.items():
        hits: dict[str, float] = {}
        for w in mine:
            for t in task_words:
                if same_word(w, t):
                    hits[t] = max(hits.get(t, 0.0), math.log(n / spread[w]))
        value = sum(hits.values())
        out[symbol] = value if value >= threshold and value > 0 else 0.0
        matched[symbol] = hits if out[symbol] else {}
    return Relevance(out, threshold, matched)


def mentions(task: str, phrases: Mapping[str, Iterable[str]]) -> list[str]:
    """Return the names of ``phrases`` in the order the task text mentions them.

    ``phrases`` maps a name (a modality) to the words that stand for it (its name, phrase and
    any synonyms its description lists).
    """
    found: list[str] = []
    for w in words(task):
        for name, forms in phrases.items():
            if _any_same(w, forms):
                found.append(name)
                break
    return found
