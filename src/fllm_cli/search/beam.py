"""Plan-level search: score whole valid plans by what the task asks for, then let the model pick.

The paper asks the model at every choice point, one step at a time. A small model cannot answer
those questions in isolation (it keeps adding tools). This search instead runs a beam over the
automaton, keeping only configurations the look-ahead says can still finish, and scores each
plan by the task's evidence (:mod:`fllm_cli.search.relevance`):

* a symbol the task points at adds the weight of the task words it matches that no earlier
  step of the plan used (a word is evidence for one step: "generate" should not bring in
  both text generation and image generation);
* any other symbol (an unasked-for tool, or one whose words are all used) costs ``penalty``;

so the best plans hold every tool the task asks for and nothing else. Plans with the same
symbols in another order score the same and count as one candidate. When several candidates
tie, the model chooses among them, each shown as its list of steps.

When no evidence points at any symbol but some speaks against symbols (a learned reader rates
every tool unlikely), the plans are still ranked and the least opposed one is taken: asking a
small model step by step instead chained up to eight tools for a one-tool request
(docs/benchmarks.md, stop 54). Only when the evidence says nothing at all, for or against
anything, does the search give up (returns ``None``) so that the caller plans step by step.

Every returned configuration is accepting, so the plan is valid like any other.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fllm_cli.automaton.pda import PDA, Config
from fllm_cli.llm.base import ChoiceRequest
from fllm_cli.llm.meter import RunMeter
from fllm_cli.search.planner import Budgets, PlanStats
from fllm_cli.search.relevance import Relevance

WIDTH = 32  # configurations kept per depth
PENALTY = 1.0  # cost of a symbol the task did not ask for
MAX_DEPTH = 400  # moves of one plan, whatever --max-moves says (a beam is width x depth work)
MAX_CANDIDATES = 6  # tied plans shown to the model at most

Asker = Callable[[list[tuple[str, ...]]], tuple[str, list[str]]]


@dataclass(order=True)
class _Entry:
    key: tuple[float, int, int]
    config: Config = field(compare=False)
    score: float = field(compare=False)
    used: tuple[str, ...] = field(compare=False)
    claimed: frozenset[str] = field(compare=False, default=frozenset())


def _distinct(
    entries: list[_Entry], width: int, leaves: frozenset[str] | None = None
) -> list[_Entry]:
    """Keep the best ``width`` entries whose futures differ: the same tools taken in another
    order lead to the same configuration and would fill the beam with copies. ``leaves``, when
    given, are symbols whose reads also tell entries apart (a judge of the finished plan's
    shape may score them differently)."""
    kept: list[_Entry] = []
    seen: set[object] = set()
    for entry in entries:
        c = entry.config
        key: tuple[object, ...] = (
            c.state, tuple(item.symbol for item in c.stack), c.counts, entry.claimed,
        )  # fmt: skip
        if leaves is not None:
            key += (frozenset(s for s in c.word_list() if s not in leaves),)
        if key in seen:
            continue
        seen.add(key)
        kept.append(entry)
        if len(kept) == width:
            break
    return kept


@dataclass
class BeamSearch:
    """Search ``pda`` through ``lookahead`` for the plans the task's words support best."""

    pda: PDA
    lookahead: Any
    relevance: Relevance
    scored: frozenset[str]  # the symbols evidence speaks about (the rest cost nothing)
    budgets: Budgets = field(default_factory=Budgets)
    width: int = WIDTH
    penalty: float = PENALTY
    stats: PlanStats = field(default_factory=PlanStats)
    floor: float = float("-inf")  # plans scoring below it are not wanted (pruned early)
    # What a complete plan's shape costs on top of its steps (never a gain, so the pruning
    # bound stays sound): e.g. a tool comparing an input with itself (search/interface.py).
    judge: Callable[[list[str]], float] | None = None

    def candidates(self) -> list[tuple[float, Config, tuple[str, ...]]]:
        """Return the best complete plans, one per set of symbols, best first."""
        rel = self.relevance
        depth_cap = min(self.budgets.max_steps or MAX_DEPTH, MAX_DEPTH)
        beam = [_Entry((0.0, 0, 0), self.pda.initial(), 0.0, ())]
        done: dict[tuple[str, ...], tuple[float, Config, tuple[str, ...]]] = {}
        best_done = self.floor
        for depth in range(depth_cap + 1):
            grown: list[_Entry] = []
            for entry in beam:
                if self.pda.is_accepting(entry.config):
                    key = tuple(sorted(entry.used))
                    score = entry.score
                    if self.judge is not None:
                        score -= max(0.0, self.judge(entry.config.word_list()))
                    if key not in done or done[key][0] < score:
                        done[key] = (score, entry.config, entry.used)
                    best_done = max(best_done, score)
                    continue
                if entry.score + rel.best_left(entry.claimed) < best_done:
                    continue  # cannot catch up with a finished plan
                self.stats.steps += 1
                for move, config in self.lookahead.feasible_moves(entry.config):
                    read = self.pda.transitions[move].read
                    score, used, claimed = entry.score, entry.used, entry.claimed
                    if read is not None and read in self.scored:
                        # A task word is evidence for one step: credit only unclaimed words.
                        value, words = rel.gain(read, claimed)
                        score += rel.net(value, self.penalty)
                        used, claimed = (*used, read), claimed | words
                    rank = (-score, len(used), depth)
                    grown.append(_Entry(rank, config, score, used, claimed))
            if not grown:
                break
            grown.sort()
            beam = _distinct(grown, self.width, None if self.judge is None else self.scored)
        ranked = sorted(done.values(), key=lambda c: (-c[0], len(c[2])))
        return ranked

    def run(self, meter: RunMeter, ask: Asker) -> Config | None:
        """Return the chosen plan's accepting configuration, or None when the evidence says
        nothing about any symbol. Evidence only against symbols still ranks the plans: the
        least opposed plan is taken (see the module note).

        ``ask(candidates)`` renders the prompt and option texts of a choice among tied plans;
        ``meter`` (charging this search's stats) puts the question to the model.
        """
        begin = time.perf_counter()
        try:
            if self.relevance.mute:
                return None
            ranked = self.candidates()
            if not ranked:
                return None
            top = ranked[0][0]
            tied = [c for c in ranked if abs(c[0] - top) < 1e-9][:MAX_CANDIDATES]
            if len(tied) == 1:
                self.stats.forced_moves += 1
                return tied[0][1]
            prompt, options = ask([c[2] for c in tied])
            self.stats.choice_points += 1
            result = meter.choose(ChoiceRequest(prompt, tuple(options), "plan"), candidates=True)
            index = result.index if 0 <= result.index < len(tied) else 0
            return tied[index][1]
        finally:
            self.stats.seconds += time.perf_counter() - begin
