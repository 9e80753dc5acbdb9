"""PDA tables built from a CFG, and immutable configurations that walk them.

The construction is the textbook one (Hopcroft, Motwani, Ullman): a start state that pushes the
start symbol above the bottom marker, one working state that expands nonterminals and matches
terminals, and an accepting state reached when only the bottom marker is left. As in the
Formal-LLM paper's Figure 3, a production whose body starts with a terminal is fused with the
match of that terminal: ``(a, A; β)`` for ``A → a β``. Every choice the planner offers is then a
terminal (a tool, a task input), which is what a prompt can name.

Stacks are persistent (:class:`Stack`: each one shares everything below its top with the stack
it came from) and read like tuples with the top at the end. A configuration also carries the use
counters of limited terminals and, as persistent linked lists, the word read so far and the
derivation nodes created, so a step costs what it pushes, and a planner that keeps every
configuration for backtracking keeps a constant amount per step, however high the stack grows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple

from fllm_cli.grammar.cfg import Grammar

Cons = tuple[object, "Cons"] | None


def cons_to_list(cell: Cons) -> list[object]:
    """Return the items of a persistent list, oldest first."""
    out: list[object] = []
    while cell is not None:
        out.append(cell[0])
        cell = cell[1]
    out.reverse()
    return out


class Stack:
    """An immutable stack that shares its lower part with the stack it was pushed onto.

    It reads like a tuple, bottom first: ``len``, ``stack[-1]`` (the top), iteration, ``==`` and
    ``hash`` compare the items. ``push`` and ``pop`` cost what they add or remove, so a run keeps
    one node per pushed item however many configurations refer to the stack.
    """

    __slots__ = ("_hash", "below", "height", "item")

    def __init__(self, item: Any = None, below: Stack | None = None) -> None:
        self.item = item
        self.below = below
        self.height: int = 0 if below is None else below.height + 1
        self._hash: int | None = None

    @classmethod
    def of(cls, items: Iterable[Any]) -> Stack:
        """Return the stack holding ``items``, bottom first."""
        return EMPTY.push(*items)

    def push(self, *items: Any) -> Stack:
        """Return this stack with ``items`` pushed in order (the last one on top)."""
        out = self
        for item in items:
            out = Stack(item, out)
        return out

    def pop(self) -> Stack:
        """Return the stack below the top."""
        if self.below is None:
            raise IndexError("pop from an empty stack")
        return self.below

    @property
    def top(self) -> Any:
        """Return the top item, or None when empty."""
        return self.item if self.below is not None else None

    def __len__(self) -> int:
        return self.height

    def __bool__(self) -> bool:
        return self.height > 0

    def __reversed__(self) -> Iterator[Any]:
        node: Stack = self
        while node.below is not None:
            yield node.item
            node = node.below

    def __iter__(self) -> Iterator[Any]:
        items = list(reversed(self))
        items.reverse()
        return iter(items)

    def __getitem__(self, index: int) -> Any:
        if isinstance(index, slice):
            return tuple(self)[index]
        if index < 0:
            index += self.height
        if not 0 <= index < self.height:
            raise IndexError("stack index out of range")
        node = self
        for _ in range(self.height - 1 - index):
            assert node.below is not None
            node = node.below
        return node.item

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Stack):
            return NotImplemented
        a: Stack | None = self
        b: Stack | None = other
        while a is not b:
            if a is None or b is None or a.height != b.height or a.item != b.item:
                return False
            a, b = a.below, b.below
        return True

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(self))
        return self._hash

    def __repr__(self) -> str:
        return f"Stack({list(self)!r})"


EMPTY = Stack()


@dataclass(frozen=True)
class Transition:
    """``(read, pop; push)`` from ``source`` to ``target``; ``push[0]`` becomes the top."""

    source: str
    target: str
    read: str | None
    pop: str
    push: tuple[str, ...]
    production: int | None = None

    def label(self) -> str:
        """Return the paper's notation, e.g. ``(Colorization, image; image)``."""
        read = self.read if self.read is not None else "ε"
        push = " ".join(self.push) if self.push else "ε"
        return f"({read}, {self.pop}; {push})"


class StackItem(NamedTuple):
    """A stack symbol and the derivation slot it fills (parent node id, position)."""

    symbol: str
    parent: int
    slot: int


class Node(NamedTuple):
    """A derivation node: a production applied where (parent, slot) asked for it."""

    production: int
    parent: int
    slot: int


@dataclass(frozen=True, slots=True)
class Config:
    """An immutable PDA configuration."""

    state: str
    stack: Stack
    counts: tuple[int, ...]
    tools: int = 0
    word: Cons = None
    nodes: Cons = None
    n_word: int = 0
    n_nodes: int = 0

    @property
    def top(self) -> StackItem | None:
        """Return the top of the stack."""
        return self.stack.top  # type: ignore[no-any-return]

    def word_list(self) -> list[str]:
        """Return the terminals read so far, in order."""
        return [str(x) for x in cons_to_list(self.word)]

    def node_list(self) -> list[Node]:
        """Return the derivation nodes created so far, in order."""
        return [x for x in cons_to_list(self.nodes) if isinstance(x, Node)]


@dataclass(frozen=True)
class PDA:
    """Immutable PDA tables."""

    states: tuple[str, ...]
    start: str
    accept: tuple[str, ...]
    stack_alphabet: tuple[str, ...]
    bottom: str
    transitions: tuple[Transition, ...]
    grammar: Grammar | None = None
    description: str = ""
    state_info: dict[str, str] = field(default_factory=dict)

    @cached_property
    def index(self) -> dict[tuple[str, str], tuple[int, ...]]:
        """Map (state, stack top) to the transitions that may fire."""
        out: dict[tuple[str, str], list[int]] = {}
        for i, t in enumerate(self.transitions):
            out.setdefault((t.source, t.pop), []).append(i)
        return {k: tuple(v) for k, v in out.items()}

    @cached_property
    def work_state(self) -> str:
        """The state in which expansion happens (grammar-built PDAs)."""
        return self.states[1] if len(self.states) > 1 else self.states[0]

    def initial(self) -> Config:
        """Return the start configuration: start state, bottom marker only, counters at 0."""
        limits = self.grammar.limits if self.grammar is not None else ()
        return Config(self.start, Stack.of([StackItem(self.bottom, -1, 0)]), (0,) * len(limits))

    def is_accepting(self, config: Config) -> bool:
        """Return True if the configuration accepts (the whole word has been read)."""
        return config.state in self.accept

    def applicable(self, config: Config) -> tuple[int, ...]:
        """Return the transitions whose state and stack top match (ignoring limits)."""
        top = config.top
        if top is None:
            return ()
        return self.index.get((config.state, top.symbol), ())

    def step(self, config: Config, index: int) -> Config | None:
        """Fire transition ``index``; None if it would break a use limit."""
        t = self.transitions[index]
        g = self.grammar
        counts = config.counts
        tools = config.tools
        if g is not None and g.require_tool and tools == 0 and t.target in self.accept:
            return None  # a plan needs at least one tool step
        if (
            g is not None
            and g.required
            and t.target in self.accept
            and g.missing(config.word_list())
        ):
            return None  # a plan reads every task input
        if t.read is not None and g is not None:
            charged = g.use_limits.charge(t.read, counts, tools)
            if charged is None:
                return None
            counts, tools = charged
        popped = config.stack.top
        rest = config.stack.pop()
        nodes, n_nodes = config.nodes, config.n_nodes
        if t.production is not None:
            node_id = n_nodes
            nodes = (Node(t.production, popped.parent, popped.slot), nodes)
            n_nodes += 1
            offset = 1 if t.read is not None else 0
            pushed = tuple(StackItem(sym, node_id, offset + k) for k, sym in enumerate(t.push))
        elif t.pop == self.bottom or t.read is None:
            pushed = tuple(StackItem(sym, popped.parent, popped.slot) for sym in t.push)
        else:
            pushed = ()
        stack = rest.push(*reversed(pushed))
        word, n_word = config.word, config.n_word
        if t.read is not None:
            word = (t.read, word)
            n_word += 1
        return Config(t.target, stack, counts, tools, word, nodes, n_word, n_nodes)

    def stack_bound(self, length: int) -> int:
        """Return a stack height that some accepting run on a word of ``length`` stays within.

        A derivation tree of a word of length n has one whose paths hold at most (n+1)·|N|
        nonterminals (cut repeats of a nonterminal over the same span); the stack holds the
        pending right siblings of the current path.
        """
        g = self.grammar
        if g is None:
            return 4 * length + 8
        widest = max((len(p.rhs) for p in g.productions), default=1)
        exact = (length + 1) * max(1, len(g.nonterminals)) * max(1, widest - 1) + 2
        return max(4 * length + 8, exact)

    def run(
        self, word: list[str], keep: Callable[[int, Config], bool] | None = None
    ) -> Iterator[tuple[int, Config]]:
        """Yield (position, configuration) for every configuration reachable on ``word``.

        ``keep`` prunes: configurations it rejects are neither yielded nor expanded.
        """
        frontier = [(0, self.initial())]
        seen: set[tuple[int, str, tuple[str, ...], tuple[int, ...]]] = set()
        bound = self.stack_bound(len(word))
        while frontier:
            pos, config = frontier.pop()
            key = (pos, config.state, tuple(s.symbol for s in config.stack), config.counts)
            if key in seen or len(config.stack) > bound:
                continue
            if keep is not None and not keep(pos, config):
                continue
            seen.add(key)
            yield pos, config
            for i in self.applicable(config):
                t = self.transitions[i]
                if t.read is not None and (pos >= len(word) or word[pos] != t.read):
                    continue
                nxt = self.step(config, i)
                if nxt is not None:
                    frontier.append((pos + (t.read is not None), nxt))


def _bottom_name(symbols: set[str]) -> str:
    name = "Z"
    while name in symbols:
        name += "0"
    return name


def pda_from_grammar(grammar: Grammar) -> PDA:
    """Build the PDA of a CFG (three states, fused terminal-first productions)."""
    symbols = set(grammar.nonterminals) | {t.name for t in grammar.terminals}
    bottom = _bottom_name(symbols)
    q0, q1, q2 = "q0", "q1", "q2"
    transitions: list[Transition] = [Transition(q0, q1, None, bottom, (grammar.start, bottom))]
    matched: set[str] = set()
    for i, p in enumerate(grammar.productions):
        if p.rhs and grammar.is_terminal(p.rhs[0]):
            transitions.append(Transition(q1, q1, p.rhs[0], p.lhs, p.rhs[1:], i))
            matched.update(s for s in p.rhs[1:] if grammar.is_terminal(s))
        else:
            transitions.append(Transition(q1, q1, None, p.lhs, p.rhs, i))
            matched.update(s for s in p.rhs if grammar.is_terminal(s))
    for t in grammar.terminals:
        if t.name in matched:
            transitions.append(Transition(q1, q1, t.name, t.name, ()))
    transitions.append(Transition(q1, q2, None, bottom, (bottom,)))
    alphabet = (*grammar.nonterminals, *sorted(matched), bottom)
    return PDA(
        states=(q0, q1, q2),
        start=q0,
        accept=(q2,),
        stack_alphabet=alphabet,
        bottom=bottom,
        transitions=tuple(transitions),
        grammar=grammar,
    )


class DeadEndCheck:
    """A look-ahead: decides completability; offers the moves that keep a run completable.

    Subclasses set ``pda`` and ``node_budget`` and implement :meth:`completable`, which must
    expand at most ``budget`` search states (``node_budget`` when None) and leave the number it
    expanded in ``spent``. :meth:`feasible_moves`, shared by the grammar and the
    explicit-automaton look-aheads, spends at most ``node_budget`` states on one call in all.

    A grammar can make every query run out of budget (many use-limited tools and an input
    that must be read), and a beam asks hundreds of them: at the full budget each, planning
    would take minutes. So each call that ran out halves the budget of the calls after it,
    down to ``SQUEEZE_FLOOR``: the look-ahead's total work stays about twice one call's,
    plus the floor per call. Domains whose queries never run out are not affected, and the
    answers stay deterministic (they depend on the states expanded, never on the clock).
    """

    SQUEEZE_FLOOR = 2_000

    pda: PDA
    node_budget: int
    spent: int = 0
    squeezed: int | None = None  # the budget of the next call, once a call has run out

    def completable(self, config: Config, budget: int | None = None) -> bool:
        """Return True if some continuation of ``config`` reaches acceptance."""
        raise NotImplementedError

    def feasible_moves(self, config: Config) -> list[tuple[int, Config]]:
        """Return (transition, next configuration) for every move that avoids dead ends.

        The node budget is shared among the moves: each gets an even share of what is left,
        so a move that needs little leaves more for the others. A move whose check runs out of
        budget is offered (the planner backtracks if it was a dead end after all).
        """
        moves = []
        for index in self.pda.applicable(config):
            nxt = self.pda.step(config, index)
            if nxt is not None:
                moves.append((index, nxt))
        out = []
        budget = self.node_budget if self.squeezed is None else self.squeezed
        left, ran_out = budget, False
        for k, (index, nxt) in enumerate(moves):
            share = max(1, left // (len(moves) - k))
            if self.completable(nxt, share):
                out.append((index, nxt))
            ran_out = ran_out or self.spent >= share
            left = max(0, left - self.spent)
        if ran_out:
            self.squeezed = max(min(self.SQUEEZE_FLOOR, self.node_budget), budget // 2)
        return out


class PrefixCache:
    """Summaries of stack prefixes, computed once per stack item and reused across queries.

    A look-ahead that folds a whole stack into a small summary (bottom first) would walk the
    stack at every query, and stacks grow with the plan. A :class:`Stack` node always has the
    same nodes below it, so the summary of the stack that ends at a node is stored against the
    node itself (a reference is kept, so its ``id`` cannot be reused), and a query only folds
    the nodes pushed since the highest one already seen. ``fold(summary, symbol)`` must depend
    on the symbols alone. The cache is emptied when it holds ``limit`` nodes.
    """

    def __init__(self, empty: object, fold: Callable[[object, str], object], limit: int = 200_000):
        self.empty = empty
        self.fold = fold
        self.limit = limit
        self.folds = 0  # symbols folded in all (a measure of the work done)
        self._seen: dict[int, tuple[Stack, object]] = {}

    def clear(self) -> None:
        """Drop every node kept (and so the stacks they hold alive)."""
        self._seen.clear()

    def summary(self, stack: Stack) -> object:
        """Return the summary of the whole stack."""
        seen = self._seen
        base = self.empty
        fresh: list[Stack] = []
        node = stack
        while node.below is not None:
            entry = seen.get(id(node))
            if entry is not None and entry[0] is node:
                base = entry[1]
                break
            fresh.append(node)
            node = node.below
        if len(seen) + len(fresh) > self.limit:
            seen.clear()
        for node in reversed(fresh):
            base = self.fold(base, node.item.symbol)
            seen[id(node)] = (node, base)
        self.folds += len(fresh)
        return base
