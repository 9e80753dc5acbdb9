"""Hand-written automata: PDA tables with a wildcard stack symbol and bounded use counters.

An explicit automaton (``kind: automaton``) is a PDA in the paper's notation: transitions
``(input, pop; push)`` between named states, ``∀`` standing for any stack symbol (``(e, ∀; ∀)``
reads ``e`` and leaves the stack alone, which is how a flowchart DFA is written). Transitions may
also count into named counters with a maximum (a use limit, checked while stepping) and a
minimum (checked on acceptance). Bounded counters are finite memory, so this is still a PDA.

A configuration accepts when its state is an accept state, every counter has reached its
minimum and, if the spec asks for it, the stack top is one of the listed symbols. The planner
stops at the first accepting configuration.

``ExplicitLookahead`` decides whether a configuration can still reach acceptance by a memoised
depth-first search over (state, stack, counters), kept on an explicit stack (no Python
recursion, so a long run of pushes or a counter with a large minimum cannot overflow it). When
no transition makes the stack grow (every domain shipped with fllm), that space is finite and
the answer is exact. Otherwise the search stops at a stack-depth bound derived from the
automaton; a branch cut there counts as feasible (it is never pruned), so the look-ahead stays
sound and the planner's backtracking covers the rest. A counter without a maximum is clamped at
its minimum in the search state, and each query expands at most ``node_budget`` states.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

from fllm_cli.automaton.pda import (
    PDA,
    Config,
    DeadEndCheck,
    PrefixCache,
    Stack,
    StackItem,
    Transition,
)
from fllm_cli.diagnostics import did_you_mean
from fllm_cli.domain.model import AutomatonSpec

ANY = "∀"
Key = tuple[str, tuple[str, ...], tuple[int, ...]]


@dataclass(frozen=True)
class ExplicitPDA(PDA):
    """PDA tables of an explicit automaton, with counters and an optional stack-top condition."""

    counter_names: tuple[str, ...] = ()
    counter_min: tuple[int, ...] = ()
    counter_max: tuple[int | None, ...] = ()
    counts_into: tuple[int | None, ...] = ()
    accept_tops: tuple[str, ...] = ()
    initial_stack: tuple[str, ...] = ()

    @cached_property
    def moves(self) -> dict[tuple[str, str], tuple[int, ...]]:
        """Map (state, stack top) to the transitions that may fire, wildcards included."""
        out: dict[tuple[str, str], tuple[int, ...]] = {}
        for state in self.states:
            for sym in self.stack_alphabet:
                both = self.index.get((state, sym), ()) + self.index.get((state, ANY), ())
                out[(state, sym)] = tuple(sorted(both))
        return out

    @cached_property
    def grows(self) -> bool:
        """True if some transition makes the stack higher."""
        return any(len(t.push) > 1 for t in self.transitions)

    @cached_property
    def depth_bound(self) -> int:
        """Stack height searched by the look-ahead (exact when the stack never grows)."""
        if not self.grows:
            return len(self.initial_stack)
        width = max(len(t.push) for t in self.transitions)
        counter_states = math.prod((m or 0) + 1 for m in self.counter_max)
        return len(self.initial_stack) + width * len(self.states) * len(self.stack_alphabet) * min(
            counter_states, 64
        )

    @cached_property
    def alphabet(self) -> tuple[str, ...]:
        """The input symbols, in first-use order."""
        seen: dict[str, None] = {}
        for t in self.transitions:
            if t.read is not None:
                seen.setdefault(t.read, None)
        return tuple(seen)

    def initial(self) -> Config:
        """Return the start configuration (``initial_stack`` listed top first)."""
        stack = Stack.of(StackItem(s, -1, 0) for s in reversed(self.initial_stack))
        return Config(self.start, stack, (0,) * len(self.counter_names))

    def applicable(self, config: Config) -> tuple[int, ...]:
        """Return the transitions whose state and stack top match."""
        top = config.top
        if top is None:
            return ()
        return self.moves.get((config.state, top.symbol), ())

    def counters_met(self, config: Config) -> bool:
        """Return True if every counter has reached its minimum."""
        return all(c >= m for c, m in zip(config.counts, self.counter_min))

    def is_accepting(self, config: Config) -> bool:
        """State accepting, counters at their minimum, stack top allowed."""
        if config.state not in self.accept or not self.counters_met(config):
            return False
        if self.accept_tops:
            return config.top is not None and config.top.symbol in self.accept_tops
        return True

    def step(self, config: Config, index: int) -> Config | None:
        """Fire transition ``index``; None if it breaks a counter maximum."""
        t = self.transitions[index]
        counts = config.counts
        ci = self.counts_into[index]
        if ci is not None:
            high = self.counter_max[ci]
            if high is not None and counts[ci] >= high:
                return None
            counts = (*counts[:ci], counts[ci] + 1, *counts[ci + 1 :])
        top = config.stack.top.symbol
        push = tuple(top if s == ANY else s for s in t.push)
        stack = config.stack.pop().push(*(StackItem(s, -1, 0) for s in reversed(push)))
        word, n_word = config.word, config.n_word
        if t.read is not None:
            word, n_word = (t.read, word), n_word + 1
        nodes = (index, config.nodes)
        return Config(t.target, stack, counts, 0, word, nodes, n_word, config.n_nodes + 1)

    def path(self, config: Config) -> list[int]:
        """Return the transitions taken to reach ``config``, in order."""
        out: list[int] = []
        cell = config.nodes
        while cell is not None:
            out.append(int(cell[0]))  # type: ignore[call-overload]
            cell = cell[1]
        out.reverse()
        return out


def pda_from_spec(spec: AutomatonSpec) -> ExplicitPDA:
    """Build the tables of an explicit automaton (the spec has passed its checks)."""
    counters = {c.name: i for i, c in enumerate(spec.counters)}
    transitions = tuple(
        Transition(
            t.source,
            t.target,
            t.read,
            t.pop or ANY,
            t.push if t.push is not None else (ANY,),
        )
        for t in spec.transitions
    )
    initial = spec.initial_stack or spec.stack_alphabet[:1]
    return ExplicitPDA(
        states=tuple(s.name for s in spec.states),
        start=spec.start,
        accept=spec.accept,
        stack_alphabet=spec.stack_alphabet,
        bottom=initial[-1] if initial else "",
        transitions=transitions,
        counter_names=tuple(c.name for c in spec.counters),
        counter_min=tuple(c.min for c in spec.counters),
        counter_max=tuple(c.max for c in spec.counters),
        counts_into=tuple(counters.get(t.count) if t.count else None for t in spec.transitions),
        accept_tops=spec.accept_stack,
        initial_stack=tuple(initial),
    )


class Saturation:
    """Which configurations can still reach acceptance, as a finite automaton over stacks.

    This is the saturation construction of ``pre*`` for pushdown systems (Bouajjani, Esparza
    and Maler, 1997). The control states are the (state, counters) pairs reachable when the
    stack is ignored, counters without a maximum clamped at their minimum. An automaton over
    stack words, read top first from a control state, starts by accepting the accepting
    configurations (a control state that accepts, then a stack whose top is allowed, then
    anything); each rule ``(c, γ) -> (c', w)`` then adds an edge ``c --γ--> q`` for every ``q``
    that ``c'`` reaches by reading ``w``, until nothing changes. A configuration can be
    completed exactly when the automaton accepts it, however high its stack.

    A query folds the stack bottom first into the set of automaton states from which the rest
    of the stack leads to acceptance (a bit mask), so the per-item work is bounded by the
    automaton's size, and :class:`PrefixCache` keeps it to the items pushed since the last
    query. ``ready`` is False when the control states or the saturation work pass their
    limits; the caller then falls back to its bounded search.
    """

    def __init__(self, pda: ExplicitPDA, max_controls: int = 2_000, max_work: int = 2_000_000):
        self.pda = pda
        self.ready = False
        self.work = 0
        low, high = pda.counter_min, pda.counter_max
        self.clamp = tuple(lo if hi is None else None for lo, hi in zip(low, high))
        symbols: dict[str, None] = {}
        for sym in (*pda.stack_alphabet, *pda.initial_stack, *pda.accept_tops):
            symbols.setdefault(sym, None)
        for t in pda.transitions:
            for sym in t.push:
                if sym != ANY:
                    symbols.setdefault(sym, None)
        self.symbols = {sym: k for k, sym in enumerate(symbols)}
        controls = self._controls(max_controls)
        if controls is None:
            return
        self.controls = controls
        rules = self._rules()
        if rules is None:
            return
        self._saturate(rules, max_work)

    def control(self, config: Config) -> int | None:
        """Return the control state of a configuration (None if it was never reached)."""
        counts = config.counts
        if any(c is not None for c in self.clamp):
            counts = tuple(v if c is None else min(v, c) for v, c in zip(counts, self.clamp))
        return self.controls.get((config.state, counts))

    def _next_counts(self, counts: tuple[int, ...], index: int) -> tuple[int, ...] | None:
        ci = self.pda.counts_into[index]
        if ci is None:
            return counts
        high, cap = self.pda.counter_max[ci], self.clamp[ci]
        if high is not None and counts[ci] >= high:
            return None
        value = counts[ci] + 1 if cap is None else min(counts[ci] + 1, cap)
        return (*counts[:ci], value, *counts[ci + 1 :])

    def _controls(self, limit: int) -> dict[tuple[str, tuple[int, ...]], int] | None:
        pda = self.pda
        start = (pda.start, tuple(0 for _ in pda.counter_names))
        found = {start: 0}
        todo = [start]
        by_state: dict[str, set[int]] = {}
        for sym in self.symbols:
            for state in pda.states:
                by_state.setdefault(state, set()).update(pda.moves.get((state, sym), ()))
        while todo:
            state, counts = todo.pop()
            for index in sorted(by_state.get(state, ())):
                nxt = self._next_counts(counts, index)
                if nxt is None:
                    continue
                key = (pda.transitions[index].target, nxt)
                if key not in found:
                    if len(found) >= limit:
                        return None
                    found[key] = len(found)
                    todo.append(key)
        return found

    def _rules(self) -> list[tuple[int, int, int, tuple[int, ...]]] | None:
        pda = self.pda
        rules = []
        for (state, counts), c in self.controls.items():
            for sym, g in self.symbols.items():
                for index in pda.moves.get((state, sym), ()):
                    nxt = self._next_counts(counts, index)
                    if nxt is None:
                        continue
                    t = pda.transitions[index]
                    push = tuple(self.symbols[sym if s == ANY else s] for s in t.push)
                    rules.append((c, g, self.controls[(t.target, nxt)], push))
        return rules

    def _saturate(self, rules: list[tuple[int, int, int, tuple[int, ...]]], max_work: int) -> None:
        pda = self.pda
        n_sym = len(self.symbols)
        sink = len(self.controls)  # accepts whatever is left of the stack
        n_states = sink + 1
        succ = [0] * (n_states * n_sym)  # succ[q * n_sym + g]: bit mask of edge targets
        finals = 1 << sink
        tops = [self.symbols[s] for s in pda.accept_tops]
        for g in range(n_sym):
            succ[sink * n_sym + g] = 1 << sink
        for (state, counts), c in self.controls.items():
            met = all(v >= m for v, m in zip(counts, pda.counter_min))
            if state not in pda.accept or not met:
                continue
            if tops:
                for g in tops:
                    succ[c * n_sym + g] |= 1 << sink
            else:
                finals |= 1 << c
                for g in range(n_sym):
                    succ[c * n_sym + g] |= 1 << sink
        changed = True
        while changed:
            changed = False
            for c, g, target, push in rules:
                self.work += 1 + len(push)
                reach = 1 << target
                for sym in push:
                    out = 0
                    while reach:
                        low = reach & -reach
                        out |= succ[(low.bit_length() - 1) * n_sym + sym]
                        reach ^= low
                    reach = out
                    if not reach:
                        break
                slot = c * n_sym + g
                if reach & ~succ[slot]:
                    succ[slot] |= reach
                    changed = True
            if self.work > max_work:
                return
        # For the bottom-first fold: pred[g][q'] = states with an edge to q' reading g.
        self.n_states = n_states
        self.succ = succ
        self.n_sym = n_sym
        self.finals = finals
        self.cache = PrefixCache(finals, self._fold)
        self.ready = True

    def _fold(self, below: object, symbol: str) -> int:
        """Return the states that read ``symbol`` into a state of ``below``."""
        mask = below if isinstance(below, int) else 0
        g = self.symbols.get(symbol)
        if g is None:
            return 0
        out = 0
        succ, n_sym = self.succ, self.n_sym
        for q in range(self.n_states):
            if succ[q * n_sym + g] & mask:
                out |= 1 << q
        return out

    def accepts(self, config: Config) -> bool | None:
        """Return whether the configuration can reach acceptance (None: not answerable here)."""
        c = self.control(config)
        if c is None:
            return None
        mask = self.cache.summary(config.stack)
        return bool(isinstance(mask, int) and mask >> c & 1)


class _Frame:
    """An open configuration of the explicit search: its moves still to try."""

    __slots__ = ("before", "config", "key", "moves", "next")

    def __init__(self, key: Key, config: Config, moves: tuple[int, ...], before: int) -> None:
        self.key = key
        self.config = config
        self.moves = moves
        self.next = 0
        self.before = before


@dataclass
class ExplicitLookahead(DeadEndCheck):
    """Completion check for explicit automata (exact when the stack never grows)."""

    pda: ExplicitPDA
    node_budget: int = 200_000
    memo: dict[Key, bool] = field(default_factory=dict)
    queries: int = 0
    exhausted: int = 0
    nodes: int = 0

    def __post_init__(self) -> None:
        self._budget = self.node_budget
        self._cut = self._cycle = False
        # A counter without a maximum only matters up to its minimum (acceptance compares with
        # the minimum, stepping never refuses it), so the search state clamps it there: a loop
        # that counts up then closes into a cycle instead of growing for ever.
        self._clamp = tuple(
            low if high is None else None
            for low, high in zip(self.pda.counter_min, self.pda.counter_max)
        )

    @cached_property
    def saturation(self) -> Saturation | None:
        """The exact answer for automata whose stack grows (None when it never grows or the
        construction passes its limits: the depth-first search is used then)."""
        if not self.pda.grows:
            return None
        built = Saturation(self.pda)
        return built if built.ready else None

    @staticmethod
    def key(config: Config) -> Key:
        """Return what the future of a configuration depends on."""
        return (config.state, tuple(s.symbol for s in config.stack), config.counts)

    def _key(self, config: Config) -> Key:
        counts = config.counts
        if any(c is not None for c in self._clamp):
            counts = tuple(v if cap is None else min(v, cap) for v, cap in zip(counts, self._clamp))
        return (config.state, tuple(s.symbol for s in config.stack), counts)

    def completable(self, config: Config, budget: int | None = None) -> bool:
        """Return True if some continuation of ``config`` reaches acceptance.

        At most ``budget`` configurations are expanded (``node_budget`` when None).
        """
        self.queries += 1
        exact = self.saturation.accepts(config) if self.saturation is not None else None
        if exact is not None:
            self.spent = 0
            return exact
        ok = self._search(config, self.node_budget if budget is None else budget)
        if not ok and (self._cut or self._budget <= 0):
            self.exhausted += 1
            return True
        return ok

    def word_exists(self) -> bool:
        """Return True if the automaton accepts some word."""
        return self.completable(self.pda.initial())

    def _search(self, config: Config, budget: int) -> bool:
        """Depth-first search with an explicit stack (see ``GrammarLookahead._search``)."""
        self._budget = budget
        self._cut = self._cycle = False
        path: set[Key] = set()
        stack: list[_Frame] = []
        result = self._open(config, path, stack)
        while stack:
            frame = stack[-1]
            if result is not None and (result or self._budget <= 0):
                self._close(frame, result, path, stack)
                continue
            result = None
            while frame.next < len(frame.moves):
                index = frame.moves[frame.next]
                frame.next += 1
                nxt = self.pda.step(frame.config, index)
                if nxt is None:
                    continue
                result = self._open(nxt, path, stack)
                if result is None or result or self._budget <= 0:
                    break
            else:
                result = False
            if result is not None:
                self._close(frame, result, path, stack)
        assert result is not None
        self.spent = budget - max(self._budget, 0)
        return result

    def _open(self, config: Config, path: set[Key], stack: list[_Frame]) -> bool | None:
        """Decide a configuration at once, or push a frame for it and return None."""
        if self.pda.is_accepting(config):
            return True
        key = self._key(config)
        known = self.memo.get(key)
        if known is not None:
            return known
        if key in path:
            self._cycle = True
            return False
        if len(config.stack) > self.pda.depth_bound:
            self._cut = True
            return False
        self._budget -= 1
        self.nodes += 1
        if self._budget <= 0:
            return False
        path.add(key)
        # Remember the outer flags (bit 0: cycle, bit 1: cut) and start this frame clean.
        stack.append(_Frame(key, config, self.pda.applicable(config), self._cycle | 2 * self._cut))
        self._cycle = self._cut = False
        return None

    def _close(self, frame: _Frame, ok: bool, path: set[Key], stack: list[_Frame]) -> None:
        stack.pop()
        path.discard(frame.key)
        if ok or (not self._cycle and not self._cut and self._budget > 0):
            self.memo[frame.key] = ok
        self._cycle = self._cycle or bool(frame.before & 1)
        self._cut = self._cut or bool(frame.before & 2)


@dataclass
class WordVerdict:
    """Outcome of running a word: the accepting configuration, or where and why it fails."""

    valid: bool
    config: Config | None = None
    position: int = 0
    reason: str = ""


def _closure(pda: ExplicitPDA, configs: list[Config]) -> list[Config]:
    """Add every configuration reachable by ε-moves (within the stack-depth bound)."""
    seen = {ExplicitLookahead.key(c): c for c in configs}
    todo = list(configs)
    while todo:
        c = todo.pop()
        for i in pda.applicable(c):
            if pda.transitions[i].read is not None:
                continue
            nxt = pda.step(c, i)
            if nxt is None or len(nxt.stack) > pda.depth_bound:
                continue
            k = ExplicitLookahead.key(nxt)
            if k not in seen:
                seen[k] = nxt
                todo.append(nxt)
    return list(seen.values())


def verify_explicit(pda: ExplicitPDA, word: list[str]) -> WordVerdict:
    """Run ``word`` on the automaton; name the first position that fails and why."""
    known = set(pda.alphabet)
    for i, sym in enumerate(word):
        if sym not in known:
            hint = did_you_mean(sym, known)
            return WordVerdict(False, position=i + 1, reason=f"unknown step '{sym}'{hint}")
    configs = _closure(pda, [pda.initial()])
    for pos, sym in enumerate(word):
        nxt = []
        for c in configs:
            for i in pda.applicable(c):
                if pda.transitions[i].read == sym:
                    stepped = pda.step(c, i)
                    if stepped is not None:
                        nxt.append(stepped)
        if not nxt:
            return WordVerdict(False, position=pos + 1, reason=_why_not(pda, configs, sym))
        configs = _closure(pda, nxt)
    for c in configs:
        if pda.is_accepting(c):
            return WordVerdict(True, c)
    return WordVerdict(False, position=len(word) + 1, reason=_why_incomplete(pda, configs))


def _why_not(pda: ExplicitPDA, configs: list[Config], sym: str) -> str:
    for c in configs:
        for i in pda.applicable(c):
            t = pda.transitions[i]
            ci = pda.counts_into[i]
            if t.read == sym and ci is not None:
                limit = pda.counter_max[ci]
                return f"'{pda.counter_names[ci]}' would happen more than {limit} time(s)"
    states = sorted({c.state for c in configs})
    expected = sorted(
        {pda.transitions[i].read or "" for c in configs for i in pda.applicable(c)} - {""}
    )
    shown = ", ".join(expected[:6]) + (" ..." if len(expected) > 6 else "")
    where = ", ".join(states)
    if not expected:
        return f"'{sym}' comes after the plan is complete (state {where})"
    return f"'{sym}' is not allowed in state {where} (expected one of: {shown})"


def _why_incomplete(pda: ExplicitPDA, configs: list[Config]) -> str:
    for c in configs:
        if c.state in pda.accept:
            for name, have, low in zip(pda.counter_names, c.counts, pda.counter_min):
                if have < low:
                    return f"'{name}' must happen at least {low} time(s), the plan has {have}"
            return "the stack top does not allow acceptance"
    states = ", ".join(sorted({c.state for c in configs}))
    return f"the plan is incomplete: it stops in state {states}, which does not accept"
