"""Decide whether a word is a valid plan, naming the first position and rule that fail."""

from __future__ import annotations

from dataclasses import dataclass

from fllm_cli.automaton.pda import PDA, Config
from fllm_cli.diagnostics import did_you_mean
from fllm_cli.grammar.cfg import Grammar
from fllm_cli.plan.model import Derivation


@dataclass
class Verdict:
    """The outcome: valid with its derivation, or the first failing position and why."""

    valid: bool
    derivation: Derivation | None = None
    position: int = 0
    reason: str = ""


def verify_word(pda: PDA, word: list[str]) -> Verdict:
    """Run the PDA on ``word`` (1-based positions in messages)."""
    g = pda.grammar
    assert g is not None
    for i, sym in enumerate(word):
        if not g.is_terminal(sym):
            known = [t.name for t in g.terminals]
            return Verdict(
                False, position=i + 1, reason=f"unknown step '{sym}'{did_you_mean(sym, known)}"
            )
    best = -1
    frontier: list[Config] = []
    for pos, config in pda.run(word):
        if pos == len(word) and pda.is_accepting(config):
            return Verdict(True, Derivation.from_config(g, config))
        if pos > best:
            best, frontier = pos, [config]
        elif pos == best:
            frontier.append(config)
    return Verdict(False, position=best + 1, reason=_explain(pda, g, word, best, frontier))


def _explain(pda: PDA, g: Grammar, word: list[str], pos: int, configs: list[Config]) -> str:
    """Say why no configuration at ``pos`` can go on."""
    if pos >= len(word):
        tops = [c.top for c in configs if c.state == pda.work_state and c.top is not None]
        needs = [t for t in tops if t.symbol != pda.bottom]
        if needs:
            return "the plan is incomplete: it still needs " + _slot_text(g, configs, needs[0])
        if g.require_tool and all(c.tools == 0 for c in configs):
            return "a plan must contain at least one tool step"
        return "the plan is incomplete"
    sym = word[pos]
    work = [c for c in configs if c.state == pda.work_state and c.top is not None]
    if not work or all(c.top.symbol == pda.bottom for c in work if c.top):
        return f"'{sym}' comes after the plan is already complete"
    term = g.terminal[sym]
    li = g.limit_index.get(sym)
    for c in work:
        if li is not None and c.counts[li] >= g.limits[li]:
            return f"'{sym}' is used more than {g.limits[li]} time(s), its limit"
        if term.kind == "tool" and g.max_tools is not None and c.tools >= g.max_tools:
            return f"the plan has more than {g.max_tools} tool steps, the domain's limit"
    top = work[0].top
    assert top is not None
    wanted = _slot_text(g, work, top)
    produced = [p.lhs for p in g.productions if p.rhs and p.rhs[0] == sym]
    if term.kind in ("tool", "input") and produced:
        what = "gives" if term.kind == "input" else "outputs"
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
