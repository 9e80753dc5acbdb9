"""Decide whether a word is a valid plan, naming the first position and rule that fail."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from fllm_cli.automaton.pda import PDA, Config
from fllm_cli.diagnostics import did_you_mean
from fllm_cli.errors import TimeBudgetExceeded
from fllm_cli.grammar.cfg import Grammar
from fllm_cli.plan.model import Derivation, TreeNode

# Configurations a plain run may visit before a span table guides it (pathological grammars).
SCAN_BUDGET = 5_000
# The span table is cubic in the plan's length on ambiguous grammars (S -> S S | a | ε): past
# this many seconds verify stops and says it could not decide (exit 3), never guessing.
SPAN_SECONDS = 10.0


@dataclass
class Verdict:
    """The outcome: valid with its derivation, or the first failing position and why."""

    valid: bool
    derivation: Derivation | None = None
    position: int = 0
    reason: str = ""
    config: Config | None = None


def verify_word(pda: PDA, word: list[str], seconds: float = SPAN_SECONDS) -> Verdict:
    """Run the PDA on ``word`` (1-based positions in messages).

    Raises TimeBudgetExceeded when the word could not be decided within ``seconds``.
    """
    g = pda.grammar
    assert g is not None
    for i, sym in enumerate(word):
        if not g.is_terminal(sym):
            known = [t.name for t in g.terminals]
            return Verdict(
                False, position=i + 1, reason=f"unknown step '{sym}'{did_you_mean(sym, known)}"
            )
    accepted, best, frontier, exhausted = _scan(pda, word)
    if exhausted:  # left recursion or ε-cycles: let a span table guide the run instead
        accepted, best, frontier = _guided(pda, g, word, time.monotonic() + seconds)
    if accepted is not None:
        return Verdict(True, Derivation.from_config(g, accepted))
    if not frontier:  # only after a guided run gave up: say less, but still where
        reason = (
            f"'{word[best]}' is not allowed here" if best < len(word) else "the plan is incomplete"
        )
        return Verdict(False, position=best + 1, reason=reason)
    return Verdict(False, position=best + 1, reason=_explain(pda, g, word, best, frontier))


Keep = Callable[[int, Config], bool]


def _scan(
    pda: PDA, word: list[str], keep: Keep | None = None, budget: int = SCAN_BUDGET
) -> tuple[Config | None, int, list[Config], bool]:
    """Explore runs on ``word``: (accepting config, furthest position, configs there, gave up)."""
    best = -1
    frontier: list[Config] = []
    spent = 0

    def guard(pos: int, config: Config) -> bool:
        nonlocal spent
        spent += 1
        return spent <= budget and (keep is None or keep(pos, config))

    for pos, config in pda.run(word, guard):
        if pos == len(word) and pda.is_accepting(config):
            return config, pos, [config], False
        if pos > best:
            best, frontier = pos, [config]
        elif pos == best:
            frontier.append(config)
    return None, best, frontier, spent > budget


def _guided(
    pda: PDA, g: Grammar, word: list[str], deadline: float
) -> tuple[Config | None, int, list[Config]]:
    """Decide with a span table; replay its derivation, or find the furthest position reached."""
    spans = Spans(g, word, deadline)
    n = len(word)
    if g.start in spans.full[(0, n)] and _fits(g, word):
        accepted = _replay(pda, spans.preorder(g.start, 0, n))
        if accepted is not None:
            return accepted, n, []
    best = max(k for k in range(n + 1) if spans.prefix(g.start, 0, k) and _fits(g, word[:k]))

    def reaches(pos: int, config: Config) -> bool:
        if config.state != pda.work_state:
            return True
        symbols = [s.symbol for s in reversed(config.stack) if s.symbol != pda.bottom]
        return spans.form_prefix(symbols, pos, best)

    _, furthest, frontier, _ = _scan(pda, word, reaches)
    # The scan may give up before ``best``; the position is exact either way.
    return None, best, frontier if furthest == best else []


def _replay(pda: PDA, productions: list[int]) -> Config | None:
    """Run the PDA along a leftmost derivation given as productions in preorder."""
    expand = {t.production: i for i, t in enumerate(pda.transitions) if t.production is not None}
    match = {
        t.read: i
        for i, t in enumerate(pda.transitions)
        if t.production is None and t.read is not None and t.read == t.pop
    }
    todo = iter(productions)
    config: Config | None = pda.initial()
    while config is not None and not pda.is_accepting(config):
        top = config.top
        moves = pda.applicable(config)
        if top is None or not moves:
            return None
        if config.state == pda.start or top.symbol == pda.bottom:
            index = moves[0]
        elif top.symbol in match:
            index = match[top.symbol]
        else:
            index = expand[next(todo)]
        config = pda.step(config, index)
    return config


def _fits(g: Grammar, word: list[str]) -> bool:
    """Check the use limits and the tool cap on a word (not the one-tool requirement)."""
    return g.use_limits.fits(word)


class Spans:
    """Which nonterminals derive each span of a word, fully or as a prefix (CYK to a fixpoint)."""

    def __init__(self, g: Grammar, word: list[str], deadline: float = float("inf")) -> None:
        self.g = g
        self.word = word
        self.deadline = deadline
        n = len(word)
        self.full: dict[tuple[int, int], set[str]] = {}
        self.why: dict[tuple[str, int, int], tuple[int, tuple[int, ...]]] = {}
        for length in range(n + 1):
            for i in range(n - length + 1):
                self._close(self.full.setdefault((i, i + length), set()), i, i + length, True)
        self.pre: dict[tuple[int, int], set[str]] = {}
        for j in range(n + 1):
            for i in range(j - 1, -1, -1):
                self._close(self.pre.setdefault((i, j), set()), i, j, False)

    def _close(self, cell: set[str], i: int, j: int, full: bool) -> None:
        if time.monotonic() > self.deadline:
            raise TimeBudgetExceeded(
                f"could not decide a plan of {len(self.word)} steps in time: its grammar is "
                "ambiguous, and deciding such a plan costs the cube of its length",
                hint="verify a shorter plan, or make the grammar unambiguous",
                stage="verify",
            )
        changed = True
        while changed:
            changed = False
            for index, p in enumerate(self.g.productions):
                if p.lhs in cell:
                    continue
                if full:
                    bounds = self.split(p.rhs, i, j)
                    if bounds is None:
                        continue
                    # The witness only uses facts found earlier, so following it never cycles.
                    self.why[(p.lhs, i, j)] = (index, bounds)
                elif not self.form_prefix(p.rhs, i, j):
                    continue
                cell.add(p.lhs)
                changed = True

    def split(self, symbols: tuple[str, ...], i: int, j: int) -> tuple[int, ...] | None:
        """Return where each of ``symbols`` ends when together they derive word[i:j]."""
        reach: dict[int, tuple[int, ...]] = {i: ()}
        for symbol in symbols:
            nxt: dict[int, tuple[int, ...]] = {}
            for a, bounds in reach.items():
                for b in range(a, j + 1):
                    if b not in nxt and self.derives(symbol, a, b):
                        nxt[b] = (*bounds, b)
            reach = nxt
        return reach.get(j)

    def preorder(self, symbol: str, i: int, j: int) -> list[int]:
        """Return the productions of a derivation of word[i:j] from ``symbol``, in preorder."""
        index, bounds = self.why[(symbol, i, j)]
        out = [index]
        start = i
        for sym, end in zip(self.g.productions[index].rhs, bounds):
            if not self.g.is_terminal(sym):
                out += self.preorder(sym, start, end)
            start = end
        return out

    def derives(self, symbol: str, i: int, j: int) -> bool:
        """Return True if ``symbol`` derives exactly word[i:j]."""
        if self.g.is_terminal(symbol):
            return j == i + 1 and self.word[i] == symbol
        return symbol in self.full.get((i, j), ())

    def ends(self, symbols: list[str] | tuple[str, ...], i: int, j: int) -> set[int]:
        """Return every m ≤ j such that ``symbols`` derive exactly word[i:m]."""
        reach = {i}
        for symbol in symbols:
            reach = {b for a in reach for b in range(a, j + 1) if self.derives(symbol, a, b)}
            if not reach:
                break
        return reach

    def prefix(self, symbol: str, i: int, j: int) -> bool:
        """Return True if ``symbol`` derives word[i:j] followed by anything."""
        if i == j:
            return True
        if self.g.is_terminal(symbol):
            return j == i + 1 and self.word[i] == symbol
        return symbol in self.pre.get((i, j), ())

    def form_prefix(self, symbols: list[str] | tuple[str, ...], i: int, j: int) -> bool:
        """Return True if the sentential form ``symbols`` derives word[i:j] then anything."""
        reach = {i}
        for symbol in symbols:
            if j in reach or any(self.prefix(symbol, a, j) for a in reach):
                return True
            reach = {b for a in reach for b in range(a, j + 1) if self.derives(symbol, a, b)}
            if not reach:
                return False
        return j in reach


def _explain(pda: PDA, g: Grammar, word: list[str], pos: int, configs: list[Config]) -> str:
    """Say why no configuration at ``pos`` can go on."""
    if pos >= len(word):
        tops = [c.top for c in configs if c.state == pda.work_state and c.top is not None]
        needs = [t for t in tops if t.symbol != pda.bottom]
        if needs:
            return "the plan is incomplete: it still needs " + _slot_text(g, configs, needs[0])
        if g.require_tool and all(c.tools == 0 for c in configs):
            return "a plan must contain at least one tool step"
        unread = g.missing(word)
        if unread:
            names = ", ".join(f"'{g.phrase(t)}'" for t in unread)
            return (
                f"the plan never uses the task's {names}: every input must be used "
                "(limits.use_every_input: false in the domain allows it)"
            )
        return "the plan is incomplete"
    sym = word[pos]
    work = [c for c in configs if c.state == pda.work_state and c.top is not None]
    if not work or all(c.top.symbol == pda.bottom for c in work if c.top):
        return f"'{sym}' comes after the plan is already complete"
    term = g.terminal[sym]
    for c in work:
        refused = g.use_limits.refusal(sym, c.counts, c.tools)
        if refused is not None:
            return refused
    top = work[0].top
    assert top is not None
    wanted = _slot_text(g, work, top)
    produced = [p.lhs for p in g.productions if p.rhs and p.rhs[0] == sym]
    if term.role in ("tool", "input") and produced:
        what = "gives" if term.role == "input" else "outputs"
        return f"'{sym}' {what} {g.phrase(produced[0])}, but {wanted} is expected here"
    expected = sorted(
        {pda.transitions[i].read or "" for c in work for i in pda.applicable(c)} - {""}
    )
    shown = ", ".join(expected[:8]) + (" ..." if len(expected) > 8 else "")
    return f"'{sym}' is not allowed here (expected one of: {shown})"


def _slot_text(g: Grammar, configs: list[Config], item: object) -> str:
    """Describe a pending stack item: 'the input image of "Colorization"'."""
    symbol = getattr(item, "symbol", "")
    parent = getattr(item, "parent", -1)
    slot = getattr(item, "slot", 0)
    phrase = g.phrase(symbol)
    if parent < 0 or not configs:
        return f"the final {phrase}"
    nodes = configs[0].node_list()
    if parent >= len(nodes):
        return f"a {phrase}"
    prod = g.productions[nodes[parent].production]
    head = prod.rhs[0] if prod.rhs and g.is_terminal(prod.rhs[0]) else prod.lhs
    return f"the input {phrase} of '{head}'" if slot else f"a {phrase} for '{head}'"


# Words up to this length are also re-parsed from scratch after planning; a longer one is
# checked through its derivation tree alone (linear), since the span table grows as n³.
REPARSE_UP_TO = 64


def check_derivation(derivation: Derivation) -> str | None:
    """Check a derivation tree against its grammar in linear time; return what is wrong, or None.

    A tree whose every node applies a production of the grammar, rooted at the start symbol,
    whose leaves spell the word, and a word within the use limits, proves the word is a plan.
    """
    g, root = derivation.grammar, derivation.root
    if root is None or root.lhs != g.start:
        return "the derivation does not start at the start symbol"
    leaves: list[str] = []
    todo: list[TreeNode | str] = [root]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            leaves.append(item)
            continue
        rhs = g.productions[item.production].rhs
        if g.productions[item.production].lhs != item.lhs or len(rhs) != len(item.children):
            return f"node {item.id} does not apply its production"
        for symbol, child in zip(rhs, item.children):
            if g.is_terminal(symbol):
                if child != symbol:
                    return f"node {item.id} reads '{child}' where '{symbol}' is due"
            elif not isinstance(child, TreeNode) or child.lhs != symbol:
                return f"node {item.id} leaves '{symbol}' underived"
        todo.extend(reversed(item.children))
    if leaves != derivation.word:
        return "the tree's leaves are not the plan's steps"
    if not g.use_limits.fits(derivation.word):
        return "the plan breaks a use limit"
    if g.missing(derivation.word):
        return "the plan leaves a task input unused"
    return None
