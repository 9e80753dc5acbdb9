"""Random grammars and tool domains for property tests, and oracles independent of the core.

The oracles deliberately share no code with ``fllm_cli.automaton``: membership is a CYK-style
span table computed to a fixpoint (so ε- and unit productions need no normal form), and use
limits are counted on the word itself (every terminal of a word is read exactly once).
"""

from __future__ import annotations

import random
from collections import Counter, deque
from collections.abc import Sequence

from hypothesis import strategies as st

from fllm_cli.automaton.pda import PDA, Config
from fllm_cli.domain.model import Domain, Limits, Modality, Task, Tool
from fllm_cli.grammar.cfg import Grammar, Production, Terminal

# -- random grammars -------------------------------------------------------------------------


@st.composite
def grammars(draw: st.DrawFn) -> Grammar:
    """A small CFG: 1–3 nonterminals, 1–4 terminals (tool or symbol, maybe limited)."""
    nts = [f"N{i}" for i in range(draw(st.integers(1, 3)))]
    terminals = []
    for i in range(draw(st.integers(1, 4))):
        limit = draw(st.one_of(st.none(), st.integers(1, 2)))
        role = draw(st.sampled_from(["tool", "symbol"]))
        terminals.append(Terminal(f"t{i}", limit=limit, role=role))
    symbols = nts + [t.name for t in terminals]
    productions = []
    for lhs in nts:
        for _ in range(draw(st.integers(1, 3))):
            rhs = draw(st.lists(st.sampled_from(symbols), max_size=3))
            productions.append(Production(lhs, tuple(rhs)))
    return Grammar(
        start="N0",
        nonterminals=tuple(nts),
        terminals=tuple(terminals),
        productions=tuple(productions),
        require_tool=draw(st.booleans()),
        max_tools=draw(st.one_of(st.none(), st.integers(1, 3))),
    )


def heights(g: Grammar) -> dict[str, int]:
    """Least derivation-tree height of each productive nonterminal."""
    h: dict[str, int] = {}
    changed = True
    while changed:
        changed = False
        for p in g.productions:
            subs = [h.get(s) for s in p.rhs if s not in g.terminal]
            if any(x is None for x in subs):
                continue
            value = 1 + max((x for x in subs if x is not None), default=0)
            if value < h.get(p.lhs, 10**9):
                h[p.lhs] = value
                changed = True
    return h


def derive(g: Grammar, rng: random.Random, depth: int = 5) -> list[str] | None:
    """Expand random productions from the start symbol; shallowest ones below ``depth``."""
    h = heights(g)
    if g.start not in h:
        return None
    word: list[str] = []

    def expand(sym: str, level: int) -> None:
        if sym in g.terminal:
            word.append(sym)
            return
        options = [
            g.productions[i]
            for i in g.by_lhs.get(sym, ())
            if all(s in g.terminal or s in h for s in g.productions[i].rhs)
        ]
        if level >= depth:
            best = min(_prod_height(p, g, h) for p in options)
            options = [p for p in options if _prod_height(p, g, h) == best]
        for s in rng.choice(options).rhs:
            expand(s, level + 1)

    expand(g.start, 0)
    return word


def _prod_height(p: Production, g: Grammar, h: dict[str, int]) -> int:
    return 1 + max((h[s] for s in p.rhs if s not in g.terminal), default=0)


def within_limits(g: Grammar, word: Sequence[str]) -> bool:
    """Check use limits, the tool cap and the one-tool requirement on a word."""
    counts = Counter(word)
    for t in g.terminals:
        if t.limit is not None and counts[t.name] > t.limit:
            return False
    tools = sum(n for name, n in counts.items() if g.terminal[name].role == "tool")
    if g.max_tools is not None and tools > g.max_tools:
        return False
    return tools > 0 or not g.require_tool


def cfg_member(g: Grammar, word: Sequence[str]) -> bool:
    """Decide ``start ⇒* word`` ignoring limits, by a span table computed to a fixpoint."""
    n = len(word)
    table: dict[tuple[int, int], set[str]] = {}

    def spans(sym: str, i: int, j: int) -> bool:
        if sym in g.terminal:
            return j == i + 1 and word[i] == sym
        return sym in table.get((i, j), set())

    def seq(rhs: tuple[str, ...], i: int, j: int) -> bool:
        reach = {i}
        for sym in rhs:
            reach = {m2 for m in reach for m2 in range(m, j + 1) if spans(sym, m, m2)}
            if not reach:
                return False
        return j in reach

    for length in range(n + 1):
        for i in range(n - length + 1):
            j = i + length
            cell = table.setdefault((i, j), set())
            changed = True
            while changed:
                changed = False
                for p in g.productions:
                    if p.lhs not in cell and seq(p.rhs, i, j):
                        cell.add(p.lhs)
                        changed = True
    return g.start in table[(0, n)]


def member(g: Grammar, word: Sequence[str]) -> bool:
    """Decide whether ``word`` is a word of the grammar that respects its limits."""
    return within_limits(g, word) and cfg_member(g, word)


# -- random tool domains ---------------------------------------------------------------------


@st.composite
def tool_problems(draw: st.DrawFn) -> tuple[Domain, Task]:
    """A small tool domain (2–3 modalities, 1–5 tools) and a task over it."""
    mods = [f"m{i}" for i in range(draw(st.integers(2, 3)))]
    tools = []
    for i in range(draw(st.integers(1, 5))):
        inputs = tuple(draw(st.lists(st.sampled_from(mods), min_size=1, max_size=3)))
        output = draw(st.sampled_from(mods))
        # Unlimited tools only with one input: the brute-force oracle needs a bounded stack.
        choices = [1, 2, None] if len(inputs) == 1 else [1, 2]
        uses = draw(st.sampled_from(choices))
        tools.append(Tool(f"T{i}", "", inputs, output, uses))
    steps = draw(st.one_of(st.none(), st.integers(1, 4)))
    domain = Domain(
        path="<random>",
        name="random",
        description="",
        kind="tools",
        modalities=tuple(Modality(m, m) for m in mods),
        tools=tuple(tools),
        limits=Limits(max_uses=1, max_plan_steps=steps, allow_empty_plan=draw(st.booleans())),
    )
    ins = draw(st.lists(st.sampled_from(mods), min_size=1, max_size=2))
    names = [f"x{i}" for i in range(len(ins))]
    task = Task("", tuple(zip(names, ins)), draw(st.sampled_from(mods)))
    return domain, task


class TooBig(Exception):
    """The brute-force search met more configurations than its cap."""


def brute_completable(pda: PDA, config: Config, max_stack: int = 14, cap: int = 60_000) -> bool:
    """Breadth-first search over leftmost sentential forms for a complete word within limits.

    Only the grammar and the configuration's data are read (its state, stack symbols and the
    word read so far); nothing of the automaton's stepping or the look-ahead runs, and the
    limits are counted here from the terminals' own records. Raises :class:`TooBig` when the
    answer would depend on forms longer than ``max_stack`` or on more than ``cap`` states.
    """
    g = pda.grammar
    assert g is not None
    if config.state in pda.accept:
        return True
    if config.state == pda.start:
        form: tuple[str, ...] = (g.start,)
    else:
        form = tuple(s.symbol for s in reversed(config.stack) if s.symbol != pda.bottom)
    limited = [t.name for t in g.terminals if t.limit is not None]
    used = Counter(config.word_list())
    counts = tuple(used[name] for name in limited)
    tools = sum(n for name, n in used.items() if g.terminal[name].role == "tool")
    if g.max_tools is None:
        tools = min(tools, 1)  # only "some tool was used" matters without a cap
    # The required terminals (a task's inputs) still to be read.
    unread = frozenset(t for t in g.required if t not in used)
    State = tuple[tuple[str, ...], tuple[int, ...], int, frozenset[str]]
    frontier: deque[State] = deque([(form, counts, tools, unread)])
    seen = {(form, counts, tools, unread)}
    cut = False
    while frontier:
        form, counts, tools, unread = frontier.popleft()
        if not form:
            if (tools > 0 or not g.require_tool) and not unread:
                return True
            continue
        head, rest = form[0], form[1:]
        nexts: list[State] = []
        term = g.terminal.get(head)
        if term is not None:
            new_counts = counts
            if term.limit is not None:
                k = limited.index(head)
                if counts[k] >= term.limit:
                    continue
                new_counts = (*counts[:k], counts[k] + 1, *counts[k + 1 :])
            new_tools = tools
            if term.role == "tool":
                if g.max_tools is not None and tools >= g.max_tools:
                    continue
                new_tools = tools + 1 if g.max_tools is not None else 1
            nexts.append((rest, new_counts, new_tools, unread - {head}))
        else:
            for p in g.productions:
                if p.lhs == head:
                    nexts.append((p.rhs + rest, counts, tools, unread))
        for item in nexts:
            if len(item[0]) > max_stack:
                cut = True
            elif item not in seen:
                seen.add(item)
                if len(seen) > cap:
                    raise TooBig
                frontier.append(item)
    if cut:
        raise TooBig
    return False
