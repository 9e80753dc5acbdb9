"""How plans are decided: the table of search strategies and the relevance signals they combine.

A strategy names how a plan is chosen inside the automaton:

* ``meaning`` (the default): whole valid plans are scored by what the request *means* — its
  parts against the tools' descriptions through an offline sentence encoder
  (:mod:`fllm_cli.search.semantic`), with shared words as a weak second signal — and the model
  is asked only among tied plans;
* ``words``: the same plan-level search with shared words alone (the earlier default);
* ``greedy``: the paper's mode, the model picks at every choice point.

A signal turns (the symbols' descriptions, the type words, the request) into a
:class:`~fllm_cli.search.relevance.Relevance`. A new signal is one function and one row of
:data:`SIGNALS`; a new strategy is one row of :data:`STRATEGIES`. Nothing else in the search
asks which strategy runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fllm_cli.errors import UsageError
from fllm_cli.search.beam import PENALTY
from fllm_cli.search.proposal import Proposal
from fllm_cli.search.relevance import Relevance, mentions, score, unit_place, vocabulary, words

if TYPE_CHECKING:
    from fllm_cli.domain.model import Domain
    from fllm_cli.search.roles import Reading

# The types (modalities) a domain's symbols pass between them: name -> (phrase, description).
Types = Mapping[str, tuple[str, str]]
Signal = Callable[[Mapping[str, str], Types, str], Relevance]


def _words(described: Mapping[str, str], types: Types, text: str) -> Relevance:
    named = {name: f"{name} {what}" for name, what in described.items()}
    return score(vocabulary(named, [f"{n} {p}" for n, (p, _) in types.items()]), text)


def _meaning(described: Mapping[str, str], types: Types, text: str) -> Relevance:
    # Imported here: NumPy and the encoder's weights load only when meaning is asked for.
    from fllm_cli.meaning.encoder import shared
    from fllm_cli.search import semantic

    type_texts = [semantic.type_text(phrase, what) for phrase, what in types.values()]
    return semantic.relevance(shared(), described, text, type_texts)


def _encoder_available() -> bool:
    from fllm_cli.meaning.encoder import available

    return available()


def _needs(described: Mapping[str, str], types: Types, text: str) -> Relevance:
    from fllm_cli.meaning.encoder import shared
    from fllm_cli.search import needs

    return needs.relevance(shared(), described, text)


SIGNALS: dict[str, Signal] = {"words": _words, "meaning": _meaning, "needs": _needs}
ENCODED = frozenset({"meaning", "needs"})  # the signals that need the sentence encoder
WORDS_WEIGHT = 0.1  # shared words beside meaning: a weak signal, never the decider
MODEL_VOTE = 3.0  # a tool the model proposed: more than any part's meaning usually gives


@dataclass(frozen=True)
class Strategy:
    """One way of deciding a plan. ``signals`` maps signal names to their weights; a strategy
    with no signals plans step by step, asking the model at every choice point."""

    name: str
    summary: str
    signals: tuple[tuple[str, float], ...] = ()
    # What a capable model proposed for this request (search/proposal.py): its tools are
    # evidence of weight MODEL_VOTE each and its interface is preferred; the automaton still
    # decides what is valid.
    proposal: Proposal | None = None

    @property
    def plan_level(self) -> bool:
        return bool(self.signals)

    def usable_signals(self) -> tuple[tuple[str, float], ...]:
        """The signals that can run here (meaning needs its encoder installed)."""
        out = tuple(
            (name, w) for name, w in self.signals if name not in ENCODED or _encoder_available()
        )
        if self.signals and not any(name == "meaning" for name, _ in out):
            # Without the encoder, words are all there is: give them their full weight.
            return tuple((name, 1.0) for name, _ in out)
        return out

    @property
    def reads_meaning(self) -> bool:
        """Whether the meaning signal runs here (it is one of the strategy's signals and its
        encoder is installed)."""
        return any(name == "meaning" for name, _ in self.usable_signals())

    def read_types(self, described: Mapping[str, str], types: Types, text: str) -> list[str]:
        """Return the types (modality names) the request names, in order: by meaning when
        the meaning signal runs, else by the words of each type's name, phrase and
        description."""
        if self.reads_meaning:
            from fllm_cli.meaning.encoder import shared
            from fllm_cli.search import semantic

            return semantic.type_mentions(shared(), described, types, text)
        forms = {name: words(f"{name} {phrase} {what}") for name, (phrase, what) in types.items()}
        return mentions(text, forms)

    def type_places(
        self, described: Mapping[str, str], types: Types, text: str
    ) -> list[tuple[int, str]]:
        """Return where the request names each type when the meaning signal runs, else []."""
        if not self.reads_meaning:
            return []
        from fllm_cli.meaning.encoder import shared
        from fllm_cli.search import semantic

        return semantic.type_places(shared(), described, types, text)

    def read_roles(self, domain: Domain, text: str) -> Reading | None:
        """Return the learned reading of what the request gives and wants back
        (:mod:`fllm_cli.search.roles`) when the meaning signal runs, else None."""
        if not self.reads_meaning:
            return None
        from fllm_cli.meaning.encoder import shared
        from fllm_cli.search import roles

        return roles.read(shared(), domain, text)

    def evidence(self, described: Mapping[str, str], types: Types, text: str) -> Relevance | None:
        """Return the request's evidence about the symbols, or None (plan step by step)."""
        signals = self.usable_signals()
        if not signals:
            return None
        parts = [(name, SIGNALS[name](described, types, text), weight) for name, weight in signals]
        if self.proposal is not None and self.proposal.tools:
            # One unit per proposed tool: a unit is credited to one step only, and each tool
            # the model proposed is its own piece of evidence.
            voted = {
                t: {f"proposed {t}": MODEL_VOTE} for t in self.proposal.tools if t in described
            }
            parts.append(("model", Relevance({t: MODEL_VOTE for t in voted}, 0.0, voted), 1.0))
        return combine(parts)


def combine(parts: list[tuple[str, Relevance, float]]) -> Relevance:
    """Add weighted relevances; each unit is keyed ``SIGNAL:UNIT`` so signals stay distinct
    and an explanation can say which signal found it."""
    matched: dict[str, dict[str, float]] = {}
    for name, rel, weight in parts:
        for symbol, units in rel.matched.items():
            mine = matched.setdefault(symbol, {})
            for unit, value in units.items():
                mine[f"{name}:{unit}"] = value * weight
    scores = {s: sum(u.values()) for s, u in matched.items()}
    threshold = min((rel.threshold * w for _, rel, w in parts), default=0.0)
    costs = [rel.cost for _, rel, _ in parts if rel.cost is not None]
    extra = min((rel.extra for _, rel, _ in parts), default=1.0)
    apart = frozenset(f"{name}:{unit}" for name, rel, _ in parts for unit in rel.apart)
    return Relevance(scores, threshold, matched, extra, max(costs, default=None), apart)


def credit(relevance: Relevance, scored: frozenset[str], word: list[str]) -> list[dict[str, Any]]:
    """Say, for each scored step of a plan (in the order the search took them), which units
    of the request it was credited with, by which signal, and what the step added."""
    claimed: frozenset[str] = frozenset()
    out: list[dict[str, Any]] = []
    for symbol in word:
        if symbol not in scored:
            continue
        value, units = relevance.gain(symbol, claimed)
        mine = relevance.matched.get(symbol, {})
        evidence = []
        for unit in sorted(units, key=lambda u: (-mine[u], u)):
            signal, _, text = unit.partition(":")
            placed = unit_place(text)
            evidence.append(
                {"signal": signal, "text": text if placed is None else placed[1],
                 "weight": round(mine[unit], 3)}
            )  # fmt: skip
        net = relevance.net(value, PENALTY)
        out.append({"tool": symbol, "net": round(net, 3), "evidence": evidence})
        claimed |= units
    return out


DEFAULT = "meaning"
STRATEGIES: dict[str, Strategy] = {
    "meaning": Strategy(
        "meaning",
        "score whole valid plans by what the request means (offline sentence encoder, shared "
        "words as a weak extra); ask the model only among tied plans",
        (("meaning", 1.0), ("needs", 1.0), ("words", WORDS_WEIGHT)),
    ),
    "words": Strategy(
        "words",
        "score whole valid plans by the words the request shares with the tools' descriptions",
        (("words", 1.0),),
    ),
    "greedy": Strategy("greedy", "ask the model at every choice point, as the paper does"),
}
ALIASES = {"beam": DEFAULT}  # the name the plan-level search had before it read meaning


def strategy(name: str) -> Strategy:
    """Return the strategy called ``name`` (or an alias); a usage error names the choices."""
    found = STRATEGIES.get(ALIASES.get(name, name))
    if found is None:
        raise UsageError(f"unknown search '{name}': use one of {', '.join(STRATEGIES)}")
    return found
