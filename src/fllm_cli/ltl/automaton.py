"""Compile a behaviour into a minimal DFA over agent states, and query it.

A run is accepted when the whole sequence of states satisfies the formula, starts in the start
state and ends in the final state. The automaton keeps only live states (from which acceptance is
reachable), so every move it offers can still be completed; ``distance`` gives the length of the
shortest completion, which the runtime uses to close a run when a budget runs out.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fllm_cli.errors import FllmError
from fllm_cli.ltl.formula import Formula
from fllm_cli.ltl.regex import ANY, Regex, Sym, and_, cat, derive, from_formula, nullable

MAX_STATES = 5000


@dataclass(frozen=True)
class Automaton:
    """A minimal, trimmed DFA: ``delta[q]`` maps a state name to the next node."""

    alphabet: tuple[str, ...]
    initial: int
    accepting: frozenset[int]
    delta: tuple[tuple[tuple[str, int], ...], ...]
    distance: tuple[int, ...]

    @property
    def size(self) -> int:
        """Return the number of nodes."""
        return len(self.delta)

    @property
    def empty(self) -> bool:
        """Return True when no run is accepted."""
        return self.size == 0

    def moves(self, node: int) -> tuple[str, ...]:
        """Return the states that may come next (each can still reach acceptance)."""
        return tuple(name for name, _ in self.delta[node])

    def step(self, node: int, name: str) -> int | None:
        """Return the node after ``name``, or None when ``name`` is not allowed."""
        for letter, target in self.delta[node]:
            if letter == name:
                return target
        return None

    def run(self, word: Iterable[str]) -> int | None:
        """Return the node reached by ``word`` from the start, or None on a violation."""
        if self.empty:
            return None
        node = self.initial
        for name in word:
            nxt = self.step(node, name)
            if nxt is None:
                return None
            node = nxt
        return node

    def accepts(self, word: Sequence[str]) -> bool:
        """Return True when ``word`` is a complete, valid run."""
        node = self.run(word)
        return node is not None and node in self.accepting

    def shortest_completion(self, node: int) -> list[str]:
        """Return a shortest sequence of states leading from ``node`` to acceptance."""
        path: list[str] = []
        while node not in self.accepting:
            name, node = min(
                ((n, t) for n, t in self.delta[node]), key=lambda m: (self.distance[m[1]], m[0])
            )
            path.append(name)
        return path

    def entering(self) -> list[set[str]]:
        """Return, per node, the state names whose moves lead into it."""
        names: list[set[str]] = [set() for _ in self.delta]
        for moves in self.delta:
            for letter, target in moves:
                names[target].add(letter)
        return names


def target_regex(formula: Formula, start: str | None, final: str | None) -> Regex:
    """Return the language of runs: the formula, starting in ``start``, ending in ``final``."""
    parts = [from_formula(formula)]
    if start is not None:
        parts.append(cat(Sym(start), ANY))
    if final is not None:
        parts.append(cat(ANY, Sym(final)))
    return and_(*parts)


def compile_formula(
    formula: Formula, alphabet: Sequence[str], start: str | None = None, final: str | None = None
) -> Automaton:
    """Build the minimal trimmed DFA of the runs allowed by ``formula``."""
    nodes, edges, accepting = _explore(target_regex(formula, start, final), tuple(alphabet))
    live = _live(len(nodes), edges, accepting)
    return _minimise(tuple(alphabet), live, edges, accepting)


def _explore(
    root: Regex, alphabet: tuple[str, ...]
) -> tuple[list[Regex], list[dict[str, int]], set[int]]:
    index: dict[Regex, int] = {root: 0}
    nodes = [root]
    edges: list[dict[str, int]] = []
    queue = deque([0])
    while queue:
        q = queue.popleft()
        row: dict[str, int] = {}
        for a in alphabet:
            d = derive(nodes[q], a)
            if d not in index:
                if len(nodes) >= MAX_STATES:
                    raise FllmError(
                        f"behaviour too complex: more than {MAX_STATES} automaton states"
                    )
                index[d] = len(nodes)
                nodes.append(d)
                queue.append(index[d])
            row[a] = index[d]
        while len(edges) <= q:
            edges.append({})
        edges[q] = row
    accepting = {i for i, r in enumerate(nodes) if nullable(r)}
    return nodes, edges, accepting


def _live(n: int, edges: list[dict[str, int]], accepting: set[int]) -> set[int]:
    back: list[set[int]] = [set() for _ in range(n)]
    for q, row in enumerate(edges):
        for t in row.values():
            back[t].add(q)
    live = set(accepting)
    queue = deque(accepting)
    while queue:
        for p in back[queue.popleft()]:
            if p not in live:
                live.add(p)
                queue.append(p)
    return live


def _minimise(
    alphabet: tuple[str, ...], live: set[int], edges: list[dict[str, int]], accepting: set[int]
) -> Automaton:
    if 0 not in live:
        return Automaton(alphabet, 0, frozenset(), (), ())
    block = {q: (q in accepting) for q in live}
    classes: dict[int, int] = {q: int(b) for q, b in block.items()}
    while True:
        # Moore refinement: split by (own class, classes of successors); dead targets are -1.
        sig = {q: (classes[q], tuple(classes.get(edges[q][a], -1) for a in alphabet)) for q in live}
        ids: dict[tuple[int, tuple[int, ...]], int] = {}
        new = {q: ids.setdefault(sig[q], len(ids)) for q in sorted(live)}
        if len(ids) == len(set(classes.values())):
            break
        classes = new
    return _renumber(alphabet, live, edges, accepting, classes)


def _renumber(
    alphabet: tuple[str, ...],
    live: set[int],
    edges: list[dict[str, int]],
    accepting: set[int],
    classes: dict[int, int],
) -> Automaton:
    rep: dict[int, int] = {}
    for q in sorted(live):
        rep.setdefault(classes[q], q)
    order = {classes[0]: 0}
    queue = deque([classes[0]])
    while queue:
        c = queue.popleft()
        for a in alphabet:
            t = edges[rep[c]][a]
            if t in live and classes[t] not in order:
                order[classes[t]] = len(order)
                queue.append(classes[t])
    delta: list[tuple[tuple[str, int], ...]] = [() for _ in order]
    for c, i in order.items():
        q = rep[c]
        delta[i] = tuple((a, order[classes[edges[q][a]]]) for a in alphabet if edges[q][a] in live)
    acc = frozenset(order[classes[q]] for q in live if q in accepting)
    return Automaton(alphabet, 0, acc, tuple(delta), _distances(delta, acc))


def _distances(
    delta: list[tuple[tuple[str, int], ...]], accepting: frozenset[int]
) -> tuple[int, ...]:
    n = len(delta)
    back: list[list[int]] = [[] for _ in range(n)]
    for q, row in enumerate(delta):
        for _, t in row:
            back[t].append(q)
    dist = [-1] * n
    queue = deque(accepting)
    for q in accepting:
        dist[q] = 0
    while queue:
        t = queue.popleft()
        for p in back[t]:
            if dist[p] < 0:
                dist[p] = dist[t] + 1
                queue.append(p)
    return tuple(dist)


def compile_spec(spec: object) -> Automaton:
    """Compile an :class:`~fllm_cli.ltl.spec.AgentSpec` into its automaton."""
    from fllm_cli.ltl.spec import AgentSpec

    assert isinstance(spec, AgentSpec)
    return compile_formula(spec.behavior, spec.names, spec.start, spec.final)
