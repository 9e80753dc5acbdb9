"""Dead-end look-ahead: which moves from a configuration still admit a completion.

For a PDA built from a grammar, a configuration in the working state is completable iff the
symbols left on its stack can each be derived, with the terminal use limits (and the cap on tool
steps) shared among them. That question ignores the order of the pending symbols, so the search
runs over (multiset of pending nonterminals, counters, tools used, still-required) states:

* a depth-first search expands one pending nonterminal at a time, most constrained first, trying
  cheaper productions first; terminals are charged (by the grammar's one use-limit rule,
  :class:`~fllm_cli.grammar.cfg.UseLimits`) as soon as they appear;
* nonterminals that can be derived without any limited terminal are dropped at once when nothing
  is still required (using them costs nothing and cannot block anything else); while a terminal
  is still required, such a free nonterminal is kept only if it can lead to that terminal, and
  never in more copies than there are required terminals;
* two bounds prune: the least limited-terminal cost of every pending symbol must fit into what
  is left of the limits, and every still-required terminal must be reachable from some pending
  symbol;
* results are memoised across queries; a state met again on its own search path is a cycle and
  counts as a failure there (a shortest completion never repeats a state), and failures found
  under such an assumption are not memoised, so the answer stays exact.

The depth-first search keeps its own stack of frames (no Python recursion), so neither a deep
search nor the thread it runs in matters, and the process-wide recursion limit is never touched.

The search is exhaustive, hence exact. Its cost is worst-case exponential in the number of limited
terminals, but the memo and the bounds make real domains cheap (see ``make bench``). A node budget
guards pathological grammars: each query expands at most ``node_budget`` states; when the budget
runs out, a query answers "feasible" (it cannot prove a dead end) and the planner's backtracking
handles what the look-ahead missed; ``stats.exhausted`` counts such queries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from fllm_cli.automaton.pda import PDA, Config, Cons, DeadEndCheck, PrefixCache
from fllm_cli.grammar.cfg import INF, Grammar

ANY_TOOL = "@tool"
WORD_CELLS = 200_000  # word cells whose read inputs are remembered (then forgotten at once)
MAX_PENDING = 256  # pending symbols past which a look-ahead query gives up (proves nothing)
MEMO_KEPT = 100_000  # proven states a look-ahead kept between requests may hold (see release)

State = tuple[tuple[str, ...], tuple[int, ...], int, frozenset[str]]
# Uses per limited terminal, tool steps, costly pending nonterminals, free ones (see _fold).
Summary = tuple[tuple[int, ...], int, tuple[str, ...], frozenset[str]]


@dataclass
class LookaheadStats:
    """Counters for benchmarks and docs."""

    queries: int = 0
    nodes: int = 0
    memo_hits: int = 0
    exhausted: int = 0


class _Frame:
    """One open state of the depth-first search: the productions of its head still to try."""

    __slots__ = ("counts", "cycle_before", "key", "need", "next", "order", "rest", "tools")

    def __init__(
        self,
        key: State,
        order: list[int] | tuple[int, ...],
        cycle_before: bool,
    ) -> None:
        self.key = key
        pending, self.counts, self.tools, self.need = key
        self.rest = pending[1:]
        self.order = order
        self.next = 0
        self.cycle_before = cycle_before


@dataclass
class GrammarLookahead(DeadEndCheck):
    """Exact completion check for PDAs built by :func:`pda_from_grammar`."""

    pda: PDA
    node_budget: int = 200_000
    memo: dict[State, bool] = field(default_factory=dict)
    stats: LookaheadStats = field(default_factory=LookaheadStats)

    def __post_init__(self) -> None:
        g = self.pda.grammar
        assert g is not None, "GrammarLookahead needs a grammar-built PDA"
        self.g: Grammar = g
        self.rule = g.use_limits
        capped = g.max_tools is not None
        self.weight = {
            t.name: int(t.limit is not None or (capped and t.role == "tool")) for t in g.terminals
        }
        self.cost = g.min_cost(lambda t: self.weight[t.name])
        self.tool_cost = g.min_cost(lambda t: int(t.role == "tool"))
        self.free = frozenset(n for n, c in self.cost.items() if c == 0)
        self._distances: dict[str, dict[str, int]] = {}
        self._reach: dict[frozenset[str], frozenset[str]] = {}
        self.exhausted_last = False
        self._budget = self.node_budget
        self._cycle = False
        # Stack contents are folded into a bounded summary, cached per stack item (see
        # ``_fold``), so a query does not walk a stack that grows with the plan.
        self._capacity = sum(g.limits) + (g.max_tools or 0)
        empty: Summary = ((0,) * len(g.limits), 0, (), frozenset())
        self._prefixes = PrefixCache(empty, self._fold)  # type: ignore[arg-type]
        self._words: dict[int, tuple[tuple[object, Cons], frozenset[str]]] = {}
        # Leaves a derivation can still add beyond one per pending symbol: a production with k
        # symbols on its right adds k - 1 (per remaining use when its terminal is limited).
        # None when some unlimited production widens the form (no bound then).
        self._widening: list[tuple[int, int]] | None = []
        for p in g.productions:
            extra = sum(1 for s in p.rhs if not g.is_terminal(s)) - 1
            if extra <= 0:
                continue
            limited = [g.limit_index[s] for s in p.rhs if s in g.limit_index]
            if not limited:
                self._widening = None
                break
            self._widening.append((limited[0], extra))
        # Cheaper productions first: the search finds a completion sooner.
        self.order = {
            n: sorted(idx, key=lambda i: self._prod_cost(i)) for n, idx in g.by_lhs.items()
        }

    def release(self) -> None:
        """Let go of the stacks and words of past searches, keeping what holds for any search.

        The prefix and word caches keep references to the configurations they have seen, which
        is right within one search and a leak across many: a look-ahead kept for later requests
        is released first. The distances and orders stay, and so does the memo of states (only
        what a search proved goes in it, never a budget running out) until it holds
        ``MEMO_KEPT`` states. The squeezed budget of a search that ran out starts over.
        """
        self._prefixes.clear()
        self._words.clear()
        self.squeezed = None
        if len(self.memo) > MEMO_KEPT:
            self.memo.clear()

    def _distance_to(self, terminal: str) -> dict[str, int]:
        """Expansions needed from each nonterminal to a form containing ``terminal``.

        ``ANY_TOOL`` stands for any tool terminal.
        """
        cached = self._distances.get(terminal)
        if cached is not None:
            return cached
        if terminal == ANY_TOOL:
            targets = {t.name for t in self.g.terminals if t.role == "tool"}
        else:
            targets = {terminal}
        dist = {n: INF for n in self.g.nonterminals}
        changed = True
        while changed:
            changed = False
            for p in self.g.productions:
                if targets.intersection(p.rhs):
                    best = 1
                else:
                    best = 1 + min((dist.get(s, INF) for s in p.rhs), default=INF)
                if best < dist.get(p.lhs, INF):
                    dist[p.lhs] = best
                    changed = True
        self._distances[terminal] = dist
        return dist

    def _reaching(self, need: frozenset[str]) -> frozenset[str]:
        """Nonterminals from which some still-required terminal can appear."""
        cached = self._reach.get(need)
        if cached is None:
            cached = frozenset(n for t in need for n, d in self._distance_to(t).items() if d < INF)
            self._reach[need] = cached
        return cached

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
        """Return what every word must still contain: a tool, if the grammar requires one, and
        the required terminals (a task's inputs)."""
        need = frozenset({ANY_TOOL}) if self.g.require_tool else frozenset()
        return need | self.g.required

    def _unread(self, config: Config) -> frozenset[str]:
        """The required terminals neither read yet nor waiting on the stack to be read."""
        left = set(self.g.required)
        left.difference_update(self._read_required(config.word))
        if left:
            left.difference_update(item.symbol for item in reversed(config.stack))
        return frozenset(left)

    def _read_required(self, word: Cons) -> frozenset[str]:
        """The required terminals among those ``word`` has read.

        The word is a persistent list that later configurations extend, so the answer is kept
        per cell (with a reference, so its ``id`` cannot be reused) and a query walks only the
        cells read since the newest one seen: a long run does not pay for its whole word at
        every query (a planner that walked 10,000 moves spent most of its time there).
        """
        seen = self._words
        fresh: list[tuple[object, Cons]] = []
        cell, read = word, frozenset[str]()
        while cell is not None:
            hit = seen.get(id(cell))
            if hit is not None and hit[0] is cell:
                read = hit[1]
                break
            fresh.append(cell)
            cell = cell[1]
        if len(seen) + len(fresh) > WORD_CELLS:
            seen.clear()
        required = self.g.required
        for cell in reversed(fresh):
            if cell[0] in required and cell[0] not in read:
                read = read | {cell[0]}
            seen[id(cell)] = (cell, read)
        return read

    def completable(self, config: Config, budget: int | None = None) -> bool:
        """Return True if some continuation of ``config`` reaches acceptance.

        At most ``budget`` states are expanded (``node_budget`` when None); when they run out
        the answer is True, since no dead end was proven.
        """
        self.stats.queries += 1
        self.spent = 0
        if self.pda.is_accepting(config):
            return True
        g = self.g
        need = frozenset({ANY_TOOL}) if g.require_tool and config.tools == 0 else frozenset()
        if g.required:
            need = need | self._unread(config)
        tools_used = config.tools if g.max_tools is not None else min(config.tools, 1)
        counts, tools = config.counts, tools_used
        pending: list[str] = []
        if config.state == self.pda.start:
            pending.append(g.start)
        else:
            # The terminals on the stack will be read: charge them all at once (the limits
            # only compare totals, so the order does not matter).
            summary = cast(Summary, self._prefixes.summary(config.stack))
            delta, tool_steps, nonfree, free = summary
            if any(delta):
                counts = tuple(c + d for c, d in zip(counts, delta))
                if any(c > lim for c, lim in zip(counts, g.limits)):
                    return False
            if tool_steps:
                if g.max_tools is None:
                    tools = 1
                elif tools + tool_steps > g.max_tools:
                    return False
                else:
                    tools += tool_steps
                need = need - {ANY_TOOL}
            pending = [*nonfree, *sorted(free)]
            if any(t != ANY_TOOL for t in need):
                # The summary keeps one copy of each free symbol; each copy can bring one
                # required terminal, so count them (``_normalise`` keeps as many as needed).
                many = [i.symbol for i in reversed(config.stack) if i.symbol in self.free]
                pending = [*nonfree, *sorted(many)]
        ok = self._search(self._normalise(pending, need), counts, tools, need, budget)
        if self._budget <= 0 and not ok:
            self.stats.exhausted += 1
            return True
        return ok

    def _fold(self, below: Summary, sym: str) -> Summary:
        """Add one stack symbol (above ``below``) to a stack summary.

        A summary holds what a query needs of the stack: the uses of each limited terminal and
        the tool steps its terminals will add (capped just past what any limit allows), the
        pending nonterminals that cost something (capped one past the total of all limits:
        more can never fit), and the set of free ones (a query keeps at most one copy of each).
        """
        delta, tool_steps, nonfree, free = below
        g = self.g
        if sym == self.pda.bottom:
            return below
        if g.is_terminal(sym):
            li = g.limit_index.get(sym, -1)
            if li >= 0 and delta[li] <= g.limits[li]:
                delta = (*delta[:li], delta[li] + 1, *delta[li + 1 :])
            cap = 1 if g.max_tools is None else g.max_tools + 1
            if g.terminal[sym].role == "tool" and tool_steps < cap:
                tool_steps += 1
            return delta, tool_steps, nonfree, free
        if sym in self.free:
            return below if sym in free else (delta, tool_steps, nonfree, free | {sym})
        if len(nonfree) > self._capacity:
            return below
        return delta, tool_steps, (*nonfree, sym), free

    def word_exists(self, need: frozenset[str] = frozenset()) -> bool:
        """Return True if some word of the grammar contains every terminal in ``need``."""
        need = need | self.initial_need()
        zero = (0,) * len(self.g.limits)
        ok = self._search(self._normalise([self.g.start], need), zero, 0, need)
        # An exhausted search proves nothing: callers may treat the answer as unknown.
        self.exhausted_last = not ok and self._budget <= 0
        return ok

    # -- search ---------------------------------------------------------------------------

    def _charge(
        self, sym: str, counts: tuple[int, ...], tools: int, need: frozenset[str]
    ) -> tuple[tuple[int, ...], int, frozenset[str]] | None:
        charged = self.rule.charge(sym, counts, tools)
        if charged is None:
            return None
        new_counts, new_tools = charged
        if new_tools != tools:
            need = need - {ANY_TOOL}
            # Without a cap only "some tool was used" matters; counting on would make every
            # unlimited tool step a new search state and the search would never see a cycle.
            if self.g.max_tools is None:
                new_tools = 1
        if sym in need:
            need = need - {sym}
        return new_counts, new_tools, need

    def _normalise(self, pending: list[str], need: frozenset[str]) -> tuple[str, ...]:
        if not need:
            pending = [s for s in pending if s not in self.free]
        else:
            # A free symbol helps only by leading to a required terminal, and each required
            # terminal needs one occurrence: other copies can take a free derivation.
            reach = self._reaching(need)
            room = len(need)
            kept: list[str] = []
            copies: dict[str, int] = {}
            for s in pending:
                if s in self.free:
                    seen = copies.get(s, 0)
                    if s not in reach or seen >= room:
                        continue
                    copies[s] = seen + 1
                kept.append(s)
            pending = kept
        guide = self._guide(need)
        if guide is not None:
            # Head for the terminal that must still appear before anything else.
            return tuple(
                sorted(pending, key=lambda s: (guide.get(s, INF), -self.cost.get(s, INF), s))
            )
        return tuple(sorted(pending, key=lambda s: (-self.cost.get(s, INF), s)))

    def _search(
        self,
        pending: tuple[str, ...],
        counts: tuple[int, ...],
        tools: int,
        need: frozenset[str],
        budget: int | None = None,
    ) -> bool:
        """Depth-first search from one state, with an explicit stack of open frames.

        ``_open`` decides a state at once (True/False) or pushes a frame for it (None). The
        loop then feeds each frame its productions one by one; a child's answer goes back to
        the frame below it, exactly as a recursive call would return it.
        """
        start = self.node_budget if budget is None else budget
        self._budget = start
        self._cycle = False
        path: set[State] = set()
        stack: list[_Frame] = []
        result = self._open(pending, counts, tools, need, path, stack)
        while stack:
            frame = stack[-1]
            if result is not None and (result or self._budget <= 0):
                # A child succeeded (so does this frame), or the budget ran out.
                self._close(frame, result, path, stack)
                continue
            result = None
            order = frame.order
            productions = self.g.productions
            while frame.next < len(order):
                index = order[frame.next]
                frame.next += 1
                c, t, n = frame.counts, frame.tools, frame.need
                new = list(frame.rest)
                failed = False
                for sym in productions[index].rhs:
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
                result = self._open(self._normalise(new, n), c, t, n, path, stack)
                if result is None:
                    break  # a child frame is open: continue there
                if result or self._budget <= 0:
                    break
            else:
                result = False  # every production failed
            if result is not None:
                self._close(frame, result, path, stack)
        assert result is not None
        self.spent = start - max(self._budget, 0)
        return result

    def _open(
        self,
        pending: tuple[str, ...],
        counts: tuple[int, ...],
        tools: int,
        need: frozenset[str],
        path: set[State],
        stack: list[_Frame],
    ) -> bool | None:
        """Decide a state without expanding it, or push a frame for it and return None."""
        if not pending:
            return not need
        g = self.g
        left = sum(lim - c for lim, c in zip(g.limits, counts))
        if g.max_tools is not None:
            # Under a cap, unlimited tools weigh 1 too: they spend the remaining tool steps.
            left += g.max_tools - tools
        lower = 0
        for s in pending:
            lower += self.cost.get(s, INF)
            if lower > left:
                return False
        if g.max_tools is not None:
            tool_lower = sum(self.tool_cost.get(s, INF) for s in pending)
            if tools + tool_lower > g.max_tools:
                return False
        for wanted in need:
            reach = self._reaching(frozenset({wanted}))
            if not any(s in reach for s in pending):
                return False  # nothing pending can ever produce it
        if self._widening is not None and g.required:
            # Each required terminal still wanted takes a leaf of its own: the pending symbols
            # give one each, and the limited productions can add only so many more.
            unread = sum(1 for t in need if t in g.required)
            room = len(pending) + sum(
                max(0, g.limits[i] - counts[i]) * extra for i, extra in self._widening
            )
            if unread > room:
                return False
        key: State = (pending, counts, tools, need)
        known = self.memo.get(key)
        if known is not None:
            self.stats.memo_hits += 1
            return known
        if key in path:
            self._cycle = True
            return False
        if len(pending) > MAX_PENDING:
            # Each node copies and sorts its pending list, so a search that keeps deepening
            # (a use limit so large that it caps nothing) would cost the square of its depth.
            # Give up as when the budget runs out: nothing is proven, the move stays offered.
            self._budget = 0
            return False
        self._budget -= 1
        self.stats.nodes += 1
        if self._budget <= 0:
            return False
        path.add(key)
        order: list[int] | tuple[int, ...] = self.order.get(pending[0], ())
        guide = self._guide(need)
        if guide is not None:
            named = min(t for t in need if t != ANY_TOOL)

            def toward(index: int) -> int:
                rhs = g.productions[index].rhs
                return 0 if named in rhs else min((guide.get(s, INF) for s in rhs), default=INF)

            order = sorted(order, key=toward)
        stack.append(_Frame(key, order, self._cycle))
        self._cycle = False
        return None

    def _close(self, frame: _Frame, ok: bool, path: set[State], stack: list[_Frame]) -> None:
        """Finish the top frame: memoise its answer when that answer is exact."""
        stack.pop()
        path.discard(frame.key)
        if (ok or not self._cycle) and self._budget > 0:
            self.memo[frame.key] = ok
        self._cycle = self._cycle or frame.cycle_before
