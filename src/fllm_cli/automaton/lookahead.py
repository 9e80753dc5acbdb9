"""Dead-end look-ahead: which moves from a configuration still admit a completion.

For a PDA built from a grammar, a configuration in the working state is completable iff the
symbols left on its stack can each be derived, with the terminal use limits (and the cap on tool
steps) shared among them. That question ignores the order of the pending symbols, so the search
runs over (multiset of pending nonterminals, counters, tools used, still-required) states:

* a depth-first search expands one pending nonterminal at a time, most constrained first, trying
  cheaper productions first; terminals are charged as soon as they appear;
* nonterminals that can be derived without any limited terminal are dropped at once (using them
  costs nothing and cannot block anything else);
* a lower bound prunes: the least limited-terminal cost of every pending symbol must fit into what
  is left of the limits;
* results are memoised across queries; a state met again on its own search path is a cycle and
  counts as a failure there (a shortest completion never repeats a state), and failures found
  under such an assumption are not memoised, so the answer stays exact.

The search is exhaustive, hence exact. Its cost is worst-case exponential in the number of limited
terminals, but the memo and the bound make real domains cheap (see ``make bench``). A node budget
guards pathological grammars: when exceeded, a query answers "feasible" (it cannot prove a dead
end) and the planner's backtracking handles what the look-ahead missed; ``exhausted`` counts it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from fllm_cli.automaton.pda import PDA, Config
from fllm_cli.grammar.cfg import INF, Grammar

ANY_TOOL = "@tool"

State = tuple[tuple[str, ...], tuple[int, ...], int, frozenset[str]]


@contextmanager
def _recursion_room(depth: int) -> Iterator[None]:
    """Let the search recurse ``depth`` levels (one level per charged terminal, at most)."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 3 * depth + 1000))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


@dataclass
class LookaheadStats:
    """Counters for benchmarks and docs."""

    queries: int = 0
    nodes: int = 0
    memo_hits: int = 0
    exhausted: int = 0


@dataclass
class GrammarLookahead:
    """Exact completion check for PDAs built by :func:`pda_from_grammar`."""

    pda: PDA
    node_budget: int = 200_000
    memo: dict[State, bool] = field(default_factory=dict)
    stats: LookaheadStats = field(default_factory=LookaheadStats)

    def __post_init__(self) -> None:
        g = self.pda.grammar
        assert g is not None, "GrammarLookahead needs a grammar-built PDA"
        self.g: Grammar = g
        capped = g.max_tools is not None
        self.weight = {
            t.name: int(t.limit is not None or (capped and t.kind == "tool")) for t in g.terminals
        }
        self.cost = g.min_cost(lambda t: self.weight[t.name])
        self.tool_cost = g.min_cost(lambda t: int(t.kind == "tool"))
        self.free = frozenset(n for n, c in self.cost.items() if c == 0)
        # Each level of the search charges a limited terminal or a capped tool step.
        self._depth = sum(g.limits) + (g.max_tools or 0) + 2 * len(g.nonterminals) + 100
        self._distances: dict[str, dict[str, int]] = {}
        self.exhausted_last = False
        # Cheaper productions first: the search finds a completion sooner.
        self.order = {
            n: sorted(idx, key=lambda i: self._prod_cost(i)) for n, idx in g.by_lhs.items()
        }

    def _distance_to(self, terminal: str) -> dict[str, int]:
        """Expansions needed from each nonterminal to a form containing ``terminal``."""
        cached = self._distances.get(terminal)
        if cached is not None:
            return cached
        dist = {n: INF for n in self.g.nonterminals}
        changed = True
        while changed:
            changed = False
            for p in self.g.productions:
                if terminal in p.rhs:
                    best = 1
                else:
                    best = 1 + min((dist.get(s, INF) for s in p.rhs), default=INF)
                if best < dist.get(p.lhs, INF):
                    dist[p.lhs] = best
                    changed = True
        self._distances[terminal] = dist
        return dist

    def _guide(self, need: frozenset[str]) -> dict[str, int] | None:
        """Distances towards the one specific terminal still needed, if there is one."""
        named = [t for t in need if t != ANY_TOOL]
        return self._distance_to(min(named)) if named else None

    def _prod_cost(self, index: int) -> int:
        total = 0
        for s in self.g.productions[index].rhs:
            total += self.weight[s] if s in self.weight else self.cost.get(s, INF)
        return min(total, INF)

    # -- public ---------------------------------------------------------------------------

    def initial_need(self) -> frozenset[str]:
        """Return what every word must still contain (a tool, if the grammar requires one)."""
        return frozenset({ANY_TOOL}) if self.g.require_tool else frozenset()

    def completable(self, config: Config) -> bool:
        """Return True if some continuation of ``config`` reaches acceptance."""
        self.stats.queries += 1
        if self.pda.is_accepting(config):
            return True
        need = self.initial_need() if config.tools == 0 else frozenset()
        tools_used = config.tools if self.g.max_tools is not None else min(config.tools, 1)
        if config.state == self.pda.start:
            pending: list[str] = [self.g.start]
            counts, tools = config.counts, tools_used
        else:
            pending = []
            counts, tools = config.counts, tools_used
            for item in config.stack:
                sym = item.symbol
                if sym == self.pda.bottom:
                    continue
                if self.g.is_terminal(sym):
                    charged = self._charge(sym, counts, tools, need)
                    if charged is None:
                        return False
                    counts, tools, need = charged
                else:
                    pending.append(sym)
        self._budget = self.node_budget
        self._cycle = False
        with _recursion_room(self._depth):
            ok = self._solve(self._normalise(pending, need), counts, tools, need, set())
        if self._budget <= 0 and not ok:
            self.stats.exhausted += 1
            return True
        return ok

    def word_exists(self, need: frozenset[str] = frozenset()) -> bool:
        """Return True if some word of the grammar contains every terminal in ``need``."""
        self._budget = self.node_budget
        self._cycle = False
        need = need | self.initial_need()
        zero = (0,) * len(self.g.limits)
        with _recursion_room(self._depth):
            ok = self._solve(self._normalise([self.g.start], need), zero, 0, need, set())
        # An exhausted search proves nothing: callers may treat the answer as unknown.
        self.exhausted_last = not ok and self._budget <= 0
        return ok

    def feasible_moves(self, config: Config) -> list[tuple[int, Config]]:
        """Return (transition, next configuration) for every move that avoids dead ends."""
        out = []
        for index in self.pda.applicable(config):
            nxt = self.pda.step(config, index)
            if nxt is not None and self.completable(nxt):
                out.append((index, nxt))
        return out

    # -- search ---------------------------------------------------------------------------

    def _charge(
        self, sym: str, counts: tuple[int, ...], tools: int, need: frozenset[str]
    ) -> tuple[tuple[int, ...], int, frozenset[str]] | None:
        term = self.g.terminal[sym]
        li = self.g.limit_index.get(sym)
        if li is not None:
            if counts[li] >= self.g.limits[li]:
                return None
            counts = (*counts[:li], counts[li] + 1, *counts[li + 1 :])
        if term.kind == "tool":
            if self.g.max_tools is not None and tools >= self.g.max_tools:
                return None
            # Without a cap only "some tool was used" matters; counting on would make every
            # unlimited tool step a new search state and the search would never see a cycle.
            tools = tools + 1 if self.g.max_tools is not None else 1
            need = need - {ANY_TOOL}
        if sym in need:
            need = need - {sym}
        return counts, tools, need

    def _normalise(self, pending: list[str], need: frozenset[str]) -> tuple[str, ...]:
        if not need:
            pending = [s for s in pending if s not in self.free]
        guide = self._guide(need)
        if guide is not None:
            # Head for the terminal that must still appear before anything else.
            return tuple(
                sorted(pending, key=lambda s: (guide.get(s, INF), -self.cost.get(s, INF), s))
            )
        return tuple(sorted(pending, key=lambda s: (-self.cost.get(s, INF), s)))

    def _solve(
        self,
        pending: tuple[str, ...],
        counts: tuple[int, ...],
        tools: int,
        need: frozenset[str],
        path: set[State],
    ) -> bool:
        if not pending:
            return not need
        left = sum(lim - c for lim, c in zip(self.g.limits, counts))
        if self.g.max_tools is not None:
            # Under a cap, unlimited tools weigh 1 too: they spend the remaining tool steps.
            left += self.g.max_tools - tools
        lower = 0
        for s in pending:
            lower += self.cost.get(s, INF)
            if lower > left:
                return False
        if self.g.max_tools is not None:
            tool_lower = sum(self.tool_cost.get(s, INF) for s in pending)
            if tools + tool_lower > self.g.max_tools:
                return False
        key: State = (pending, counts, tools, need)
        known = self.memo.get(key)
        if known is not None:
            self.stats.memo_hits += 1
            return known
        if key in path:
            self._cycle = True
            return False
        self._budget -= 1
        self.stats.nodes += 1
        if self._budget <= 0:
            return False
        path.add(key)
        cycle_before = self._cycle
        self._cycle = False
        ok = self._expand(pending, counts, tools, need, path)
        path.discard(key)
        if (ok or not self._cycle) and self._budget > 0:
            self.memo[key] = ok
        self._cycle = self._cycle or cycle_before
        return ok

    def _expand(
        self,
        pending: tuple[str, ...],
        counts: tuple[int, ...],
        tools: int,
        need: frozenset[str],
        path: set[State],
    ) -> bool:
        head, rest = pending[0], pending[1:]
        order = self.order.get(head, ())
        guide = self._guide(need)
        if guide is not None:
            named = min(t for t in need if t != ANY_TOOL)

            def toward(index: int) -> int:
                rhs = self.g.productions[index].rhs
                return 0 if named in rhs else min((guide.get(s, INF) for s in rhs), default=INF)

            order = sorted(order, key=toward)
        for index in order:
            c, t, n = counts, tools, need
            new: list[str] = list(rest)
            failed = False
            for sym in self.g.productions[index].rhs:
                if sym in self.weight:
                    charged = self._charge(sym, c, t, n)
                    if charged is None:
                        failed = True
                        break
                    c, t, n = charged
                else:
                    new.append(sym)
            if failed:
                continue
            if self._solve(self._normalise(new, n), c, t, n, path):
                return True
            if self._budget <= 0:
                return False
        return False
