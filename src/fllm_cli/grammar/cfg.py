"""The CFG model and its classic analyses.

Grammars are immutable. Terminals carry a use limit (``None`` = unlimited) and a role: ``tool``
(a plan step), ``input`` (a task input such as ``input:image``) or ``symbol`` (anything else).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from fllm_cli.domain.model import Production

__all__ = ["INF", "Grammar", "Production", "Terminal", "TerminalRole", "UseLimits"]

TerminalRole = Literal["tool", "input", "symbol"]
INF = 10**9


@dataclass(frozen=True)
class Terminal:
    """A terminal symbol with its prompt text and use limit."""

    name: str
    description: str = ""
    limit: int | None = None
    role: TerminalRole = "symbol"
    phrase: str = ""


@dataclass(frozen=True)
class Grammar:
    """A context-free grammar with per-terminal use limits.

    ``require_tool``: a word must contain at least one ``tool`` terminal.
    ``max_tools``: at most this many ``tool`` terminals in a word (None = no cap).
    ``phrases``: how prompts name each nonterminal ("image", "clean broccoli").
    ``required``: terminals every word must contain at least once (a task's inputs).
    """

    start: str
    nonterminals: tuple[str, ...]
    terminals: tuple[Terminal, ...]
    productions: tuple[Production, ...]
    require_tool: bool = False
    max_tools: int | None = None
    phrases: Mapping[str, str] = field(default_factory=dict)
    required: frozenset[str] = frozenset()

    def missing(self, word: Iterable[str]) -> list[str]:
        """Return the required terminals that ``word`` never reads, in the grammar's order."""
        if not self.required:
            return []
        seen = set(word)
        return [t.name for t in self.terminals if t.name in self.required and t.name not in seen]

    @cached_property
    def terminal(self) -> dict[str, Terminal]:
        """Map a terminal name to its record."""
        return {t.name: t for t in self.terminals}

    @cached_property
    def nonterminal_set(self) -> frozenset[str]:
        """The nonterminals as a set."""
        return frozenset(self.nonterminals)

    @cached_property
    def by_lhs(self) -> dict[str, tuple[int, ...]]:
        """Map a nonterminal to the indices of its productions."""
        out: dict[str, list[int]] = {n: [] for n in self.nonterminals}
        for i, p in enumerate(self.productions):
            out.setdefault(p.lhs, []).append(i)
        return {k: tuple(v) for k, v in out.items()}

    @cached_property
    def limited(self) -> tuple[str, ...]:
        """Terminals with a use limit, in a fixed order (the counter vector's order)."""
        return tuple(t.name for t in self.terminals if t.limit is not None)

    @cached_property
    def limit_index(self) -> dict[str, int]:
        """Map a limited terminal to its position in the counter vector."""
        return {name: i for i, name in enumerate(self.limited)}

    @cached_property
    def limits(self) -> tuple[int, ...]:
        """The limits, aligned with ``limited``."""
        return tuple(int(self.terminal[n].limit or 0) for n in self.limited)

    @cached_property
    def use_limits(self) -> UseLimits:
        """The grammar's use-limit rule (the one place that charges a terminal's use)."""
        return UseLimits(self)

    def is_terminal(self, symbol: str) -> bool:
        """Return True for terminals."""
        return symbol in self.terminal

    def phrase(self, symbol: str) -> str:
        """Return the prompt phrase of a symbol."""
        if symbol in self.phrases:
            return self.phrases[symbol]
        t = self.terminal.get(symbol)
        if t is not None:
            return t.phrase or t.name
        return symbol

    # -- analyses -------------------------------------------------------------------------

    def min_cost(self, weight: Callable[[Terminal], int]) -> dict[str, int]:
        """Least total terminal weight of any derivation of each nonterminal (INF if none)."""
        cost = {n: INF for n in self.nonterminals}
        term_w = {t.name: weight(t) for t in self.terminals}
        changed = True
        while changed:
            changed = False
            for p in self.productions:
                total = 0
                for s in p.rhs:
                    total += term_w[s] if s in term_w else cost.get(s, INF)
                    if total >= INF:
                        break
                if total < cost.get(p.lhs, INF):
                    cost[p.lhs] = total
                    changed = True
        return cost

    @cached_property
    def productive(self) -> frozenset[str]:
        """Nonterminals that derive at least one terminal word (ignoring use limits)."""
        return frozenset(n for n, c in self.min_cost(lambda t: 0).items() if c < INF)

    @cached_property
    def reachable(self) -> frozenset[str]:
        """Symbols reachable from the start symbol."""
        seen = {self.start}
        todo = [self.start]
        while todo:
            sym = todo.pop()
            for i in self.by_lhs.get(sym, ()):
                for s in self.productions[i].rhs:
                    if s not in seen:
                        seen.add(s)
                        todo.append(s)
        return frozenset(seen)

    @cached_property
    def nullable(self) -> frozenset[str]:
        """Nonterminals that derive ε."""
        null: set[str] = set()
        changed = True
        while changed:
            changed = False
            for p in self.productions:
                if p.lhs not in null and all(s in null for s in p.rhs):
                    null.add(p.lhs)
                    changed = True
        return frozenset(null)

    def with_productions(self, keep: Iterable[int]) -> Grammar:
        """Return a copy with only the productions at ``keep``."""
        chosen = tuple(self.productions[i] for i in keep)
        return Grammar(
            self.start,
            self.nonterminals,
            self.terminals,
            chosen,
            self.require_tool,
            self.max_tools,
            self.phrases,
            self.required,
        )


class UseLimits:
    """The use-limit rule: each limited terminal at most its limit, tool steps at most the cap.

    Counters travel as ``(counts, tools)``: ``counts`` is aligned with ``Grammar.limited`` and
    ``tools`` is the number of tool steps so far. The PDA, the dead-end look-ahead and the plan
    verifier all charge uses through :meth:`charge`, so the rule is written once.
    """

    def __init__(self, grammar: Grammar) -> None:
        self.grammar = grammar
        self.cap = grammar.max_tools
        # terminal -> (position in the counter vector or -1, limit, is a tool step)
        self._rule: dict[str, tuple[int, int, bool]] = {}
        for t in grammar.terminals:
            li = grammar.limit_index.get(t.name, -1)
            limit = grammar.limits[li] if li >= 0 else 0
            self._rule[t.name] = (li, limit, t.role == "tool")

    def charge(
        self, symbol: str, counts: tuple[int, ...], tools: int
    ) -> tuple[tuple[int, ...], int] | None:
        """Return the counters after one more use of ``symbol``; None if a limit forbids it.

        Symbols that are not terminals of the grammar cost nothing.
        """
        rule = self._rule.get(symbol)
        if rule is None:
            return counts, tools
        li, limit, is_tool = rule
        if li >= 0:
            used = counts[li]
            if used >= limit:
                return None
            counts = (*counts[:li], used + 1, *counts[li + 1 :])
        if is_tool:
            if self.cap is not None and tools >= self.cap:
                return None
            tools += 1
        return counts, tools

    def refusal(self, symbol: str, counts: tuple[int, ...], tools: int) -> str | None:
        """Say which limit one more use of ``symbol`` would break (None if it is allowed)."""
        rule = self._rule.get(symbol)
        if rule is None:
            return None
        li, limit, is_tool = rule
        if li >= 0 and counts[li] >= limit:
            return f"'{symbol}' is used more than {limit} time(s), its limit"
        if is_tool and self.cap is not None and tools >= self.cap:
            return f"the plan has more than {self.cap} tool steps, the domain's limit"
        return None

    def start(self) -> tuple[tuple[int, ...], int]:
        """Return the counters before anything is used."""
        return (0,) * len(self.grammar.limits), 0

    def fits(self, word: Sequence[str]) -> bool:
        """Return True if ``word`` as a whole respects every limit (order does not matter)."""
        counts, tools = self.start()
        for symbol in word:
            charged = self.charge(symbol, counts, tools)
            if charged is None:
                return False
            counts, tools = charged
        return True
