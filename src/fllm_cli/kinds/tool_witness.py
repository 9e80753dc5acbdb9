"""Plans that prove a tool usable, found in time linear in the domain (for ``fllm validate``).

A tool domain's plan is a tree: a tool's inputs are task inputs or the outputs of sub-plans.
Leaving the use limits aside, the cheapest tree of every modality (``cost``) and the cheapest
way to carry a modality up to a final output (``context``) follow from two Dijkstra-like
passes over the tools. A tool is then usable for an output when its own tree fits the limits:
its inputs' cheapest trees, the tool, and the context of its output. Limits only remove plans,
so a modality no tree reaches, or a tool whose inputs or output cannot reach the output, is
unusable for certain. A witness that breaks a limit (a tool needed twice, too many steps)
decides nothing; the caller searches for that tool as before.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from fllm_cli.domain.model import Domain, Tool

# Witness trees above this many tools are not built: the caller's search decides them.
MAX_WITNESS = 64


@dataclass
class Witnesses:
    """The cheapest trees of a tool domain whose task may use the modalities ``inputs``."""

    domain: Domain
    inputs: frozenset[str]
    cost: dict[str, int] = field(default_factory=dict)  # modality -> tools in its cheapest tree
    maker: dict[str, Tool | None] = field(default_factory=dict)  # None: a task input
    _trees: dict[str, Counter[str] | None] = field(default_factory=dict)
    # output -> (tool, the price of its inputs' trees, its slots of distinct modalities)
    _by_output: dict[str, list[tuple[Tool, int, list[tuple[int, str]]]]] = field(
        default_factory=dict
    )
    _caps: dict[str, int | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._cheapest()

    def _cheapest(self) -> None:
        """Knuth's generalisation of Dijkstra: a tool's tree is ready once all its inputs are."""
        users: dict[str, list[int]] = defaultdict(list)
        waiting: list[int] = []
        for i, tool in enumerate(self.domain.tools):
            distinct = set(tool.inputs)
            waiting.append(len(distinct))
            for m in distinct:
                users[m].append(i)
        heap: list[tuple[int, int, str, Tool | None]] = [
            (0, n, m, None) for n, m in enumerate(sorted(self.inputs))
        ]
        order = len(heap)
        while heap:
            c, _, m, made_by = heapq.heappop(heap)
            if m in self.cost:
                continue
            self.cost[m], self.maker[m] = c, made_by
            for i in users[m]:
                waiting[i] -= 1
                if waiting[i] == 0:
                    t = self.domain.tools[i]
                    if t.output not in self.cost:
                        order += 1
                        total = 1 + sum(self.cost[x] for x in t.inputs)
                        heapq.heappush(heap, (total, order, t.output, t))

    def tree(self, modality: str) -> Counter[str] | None:
        """Return the tool uses of the cheapest tree of ``modality`` (None: none, or too big)."""
        if modality in self._trees:
            return self._trees[modality]
        found: Counter[str] | None = None
        if modality in self.cost and self.cost[modality] <= MAX_WITNESS:
            found = Counter()
            tool = self.maker[modality]
            if tool is not None:
                found[tool.name] += 1
                for x in tool.inputs:
                    sub = self.tree(x)
                    if sub is None:
                        found = None
                        break
                    found.update(sub)
        self._trees[modality] = found
        return found

    def context(self, output: str) -> Context:
        """Return how each modality is carried most cheaply up to ``output``.

        Runs from ``output`` down: a tool whose output is already carried carries each of its
        inputs, at the price of itself and the cheapest trees of its other inputs.
        """
        if not self._by_output:  # once: the tools every plan slot can be filled for
            for t in self.domain.tools:
                if all(x in self.cost for x in t.inputs):
                    whole = sum(self.cost[x] for x in t.inputs)
                    slots = [(k, x) for k, x in enumerate(t.inputs) if t.inputs.index(x) == k]
                    self._by_output.setdefault(t.output, []).append((t, whole, slots))
        ctx = Context(self, {output: 0}, {output: None})
        heap: list[tuple[int, int, str]] = [(0, 0, output)]
        done: set[str] = set()
        order = 0
        while heap:
            c, _, m = heapq.heappop(heap)
            if m in done:
                continue
            done.add(m)
            for t, whole, slots in self._by_output.get(m, ()):
                for slot, x in slots:
                    if x in done:
                        continue
                    price = c + 1 + whole - self.cost[x]
                    if price <= MAX_WITNESS and price < ctx.price.get(x, MAX_WITNESS + 1):
                        ctx.price[x], ctx.via[x] = price, (t, slot, m)
                        order += 1
                        heapq.heappush(heap, (price, order, x))
        return ctx

    def fits(self, uses: Counter[str]) -> bool:
        """Tell whether a plan with these tool uses keeps every limit of the domain."""
        limits = self.domain.limits
        if not uses and not limits.allow_empty_plan:
            return False
        if limits.max_plan_steps is not None and sum(uses.values()) > limits.max_plan_steps:
            return False
        if not self._caps:
            self._caps.update({t.name: t.max_uses for t in self.domain.tools})
        caps = self._caps
        return all(caps.get(name) is None or n <= (caps[name] or 0) for name, n in uses.items())


@dataclass
class Context:
    """The cheapest ways up to one output: a price and the step taken, per modality."""

    witnesses: Witnesses
    price: dict[str, int]
    via: dict[str, tuple[Tool, int, str] | None]  # (tool, its slot, the tool's output)
    _uses: dict[str, Counter[str] | None] = field(default_factory=dict)

    def uses(self, modality: str) -> Counter[str] | None:
        """Return the tool uses that carry ``modality`` up (None when a tree is too big)."""
        if modality in self._uses:
            return self._uses[modality]
        step = self.via.get(modality)
        found: Counter[str] | None = Counter()
        if step is not None:
            tool, slot, up = step
            above = self.uses(up)
            others = [self.witnesses.tree(y) for k, y in enumerate(tool.inputs) if k != slot]
            if above is None or any(o is None for o in others):
                found = None
            else:
                found = Counter(above)
                found[tool.name] += 1
                for o in others:
                    found.update(o or {})
        self._uses[modality] = found
        return found


def tool_verdicts(
    w: Witnesses, output: str, settled: frozenset[str] = frozenset()
) -> tuple[bool | None, dict[str, bool | None]]:
    """Return (does a plan for ``output`` exist, {tool: is it usable for ``output``}).

    True and False are certain; None means a witness broke a limit and a search must decide.
    Tools in ``settled`` (already known usable) are not looked at.
    """
    domain = w.domain
    ctx = w.context(output)

    def verdict(tool: Tool) -> bool | None:
        if any(x not in w.cost for x in tool.inputs) or tool.output not in ctx.price:
            return False
        up = ctx.uses(tool.output)
        subtrees = [w.tree(x) for x in tool.inputs]
        if up is None or any(s is None for s in subtrees):
            return None
        uses = Counter(up)
        uses[tool.name] += 1
        for s in subtrees:
            uses.update(s or {})
        return True if w.fits(uses) else None

    verdicts = {t.name: verdict(t) for t in domain.tools if t.name not in settled}
    if output not in w.cost:
        return False, verdicts
    own = w.tree(output)
    if (own is not None and w.fits(own)) or any(v is True for v in verdicts.values()):
        return True, verdicts
    if any(verdict(t) is True for t in domain.tools if t.name in settled):
        return True, verdicts
    return None, verdicts
