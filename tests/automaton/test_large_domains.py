"""Large and pathological generated inputs: the look-aheads end, within their node budgets.

Every shape here once made a look-ahead recurse past Python's limit or run for minutes: a
generated 200-tool domain, many two-input tools limited to two uses, a two-tool domain with an
unlimited recursive tool, ``S → S S S | a``, a long chain of nonterminals, and explicit automata
with a large counter minimum or a stack that keeps growing. Work is asserted in counted search
nodes, never in seconds. Small instances are checked against oracles that do not run the code
under test (``tests.automaton._gen.brute_completable`` and closed forms).
"""

from __future__ import annotations

import contextlib
import random
import sys
from pathlib import Path

import pytest

from fllm_cli.automaton.explicit import ANY, ExplicitLookahead, ExplicitPDA
from fllm_cli.automaton.lookahead import GrammarLookahead
from fllm_cli.automaton.pda import Config, Transition, pda_from_grammar
from fllm_cli.domain.load import read_domain
from fllm_cli.domain.model import Domain, Limits, Modality, Task, Tool
from fllm_cli.errors import FllmError
from fllm_cli.grammar.cfg import Grammar, Production, Terminal
from fllm_cli.grammar.compile import tool_grammar
from tests.automaton._gen import brute_completable

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from gen_domain import generate  # noqa: E402


def tool_domain(tools: list[Tool], mods: list[str], steps: int | None = None) -> Domain:
    return Domain(
        path="<generated>",
        name="generated",
        description="",
        kind="tools",
        modalities=tuple(Modality(m, m) for m in mods),
        tools=tuple(tools),
        limits=Limits(max_uses=1, max_plan_steps=steps, allow_empty_plan=False),
    )


def walk(look: GrammarLookahead, steps: int, seed: int) -> list[Config]:
    """Random walk over feasible moves, checking each call stays within the node budget."""
    rng = random.Random(seed)
    config = look.pda.initial()
    seen = [config]
    for _ in range(steps):
        if look.pda.is_accepting(config):
            break
        before = look.stats.nodes
        moves = look.feasible_moves(config)
        assert look.stats.nodes - before <= look.node_budget
        if not moves:
            break
        config = rng.choice(moves)[1]
        seen.append(config)
    return seen


def two_input_tools(count: int, mods: int, uses: int, seed: int) -> list[Tool]:
    rng = random.Random(seed)
    names = [f"m{i}" for i in range(mods)]
    return [
        Tool(f"T{i}", "", (rng.choice(names), rng.choice(names)), rng.choice(names), uses)
        for i in range(count)
    ]


def test_generated_200_tool_domain(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(generate(200, 10, 0), encoding="utf-8")
    domain, _ = read_domain(path)
    assert domain is not None
    for k, output in enumerate(("m01", "m05", "m09")):
        task = Task("", (("x", "m00"),), output)
        look = GrammarLookahead(pda_from_grammar(tool_grammar(domain, task)))
        assert look.word_exists()
        with contextlib.suppress(FllmError):  # fllm's own errors are fine; nothing else
            walk(look, 8, seed=k)
        assert look.stats.exhausted == 0


@pytest.mark.parametrize("count", [16, 40])
def test_many_two_input_tools_with_two_uses_stay_in_budget(count: int) -> None:
    mods = [f"m{i}" for i in range(6)]
    domain = tool_domain(two_input_tools(count, 6, 2, seed=count), mods)
    look = GrammarLookahead(
        pda_from_grammar(tool_grammar(domain, Task("", (("x", "m0"),), "m5"))), node_budget=3_000
    )
    before = look.stats.nodes
    look.word_exists()
    assert look.stats.nodes - before <= look.node_budget
    walk(look, 6, seed=1)


@pytest.mark.parametrize("seed", range(6))
def test_small_two_input_domains_agree_with_brute_force(seed: int) -> None:
    mods = [f"m{i}" for i in range(3)]
    domain = tool_domain(two_input_tools(4, 3, 2, seed=seed), mods)
    pda = pda_from_grammar(tool_grammar(domain, Task("", (("x", "m0"),), "m2")))
    look = GrammarLookahead(pda)
    configs = [pda.initial(), *walk(look, 5, seed)]
    for config in configs:
        for index in pda.applicable(config):
            nxt = pda.step(config, index)
            if nxt is not None:
                assert look.completable(nxt) == brute_completable(pda, nxt, max_stack=20)
    assert look.stats.exhausted == 0


def test_two_tool_domain_with_an_unlimited_recursive_tool() -> None:
    # A makes an 'a' from two; B needs a 'b', which nothing can make.
    tools = [Tool("A", "", ("a", "a"), "a", None), Tool("B", "", ("b",), "c", 1)]
    domain = tool_domain(tools, ["a", "b", "c"])
    look = GrammarLookahead(pda_from_grammar(tool_grammar(domain, Task("", (("x", "a"),), "a"))))
    assert look.word_exists()
    before = look.stats.nodes
    assert not look.word_exists(frozenset({"B"}))
    assert not look.exhausted_last
    assert look.stats.nodes - before <= look.node_budget
    walk(look, 30, seed=0)


def sss(limit: int | None) -> Grammar:
    return Grammar(
        start="S",
        nonterminals=("S",),
        terminals=(Terminal("a", limit=limit),),
        productions=(Production("S", ("S", "S", "S")), Production("S", ("a",))),
    )


@pytest.mark.parametrize("limit", [None, 1, 4, 7])
def test_deeply_recursive_grammar(limit: int | None) -> None:
    pda = pda_from_grammar(sss(limit))
    look = GrammarLookahead(pda)
    assert look.word_exists()
    for config in walk(look, 40, seed=limit or 0):
        for index in pda.applicable(config):
            nxt = pda.step(config, index)
            if nxt is None:
                continue
            # Closed form: every pending S needs at least one 'a', and one is enough.
            pending = [s.symbol for s in nxt.stack if s.symbol in ("S", "a")]
            if nxt.state == pda.start:
                pending = ["S"]
            room = (limit - nxt.word_list().count("a")) if limit is not None else 10**9
            expected = nxt.state in pda.accept or len(pending) <= room
            before = look.stats.nodes
            assert look.completable(nxt) == expected
            assert look.stats.nodes - before <= look.node_budget


def test_long_chain_needs_no_recursion_room() -> None:
    # Reaching 'goal' takes 3000 expansions in a row: deeper than Python's default limit.
    n = 3000
    names = tuple(f"N{i}" for i in range(n))
    # Listed deepest first, so the grammar's cost fixpoints settle in one pass (they are not
    # what this test measures).
    productions = [Production(names[-1], ("goal",)), Production(names[0], ("x",))]
    productions += [Production(names[i], ("x", names[i + 1])) for i in reversed(range(n - 1))]
    g = Grammar(
        start="N0",
        nonterminals=names,
        terminals=(Terminal("x"), Terminal("goal")),
        productions=tuple(productions),
    )
    look = GrammarLookahead(pda_from_grammar(g))
    assert look.word_exists(frozenset({"goal"}))
    assert not look.exhausted_last
    assert look.stats.nodes <= look.node_budget


def explicit(
    transitions: list[Transition], counts_into: tuple[int | None, ...], low: int
) -> ExplicitPDA:
    return ExplicitPDA(
        states=("q", "f"),
        start="q",
        accept=("f",),
        stack_alphabet=("Z", "A"),
        bottom="Z",
        transitions=tuple(transitions),
        counter_names=("ticks",),
        counter_min=(low,),
        counter_max=(None,),
        counts_into=counts_into,
        initial_stack=("Z",),
    )


def test_explicit_counter_with_a_large_minimum() -> None:
    pda = explicit(
        [Transition("q", "q", "tick", ANY, (ANY,)), Transition("q", "f", "done", ANY, (ANY,))],
        (0, None),
        2000,
    )
    look = ExplicitLookahead(pda)
    assert look.word_exists()
    assert look.exhausted == 0
    assert look.nodes <= look.node_budget
    moves = look.feasible_moves(pda.initial())
    assert [pda.transitions[i].read for i, _ in moves] == ["tick"]


def test_explicit_automaton_that_keeps_pushing() -> None:
    # It can only push: acceptance needs a stack top 'Z' after a 'done' that never comes.
    pda = explicit(
        [Transition("q", "q", "push", ANY, ("A", ANY)), Transition("q", "q", "tick", "Z", ("Z",))],
        (None, 0),
        1,
    )
    look = ExplicitLookahead(pda, node_budget=5_000)
    before = look.nodes
    look.word_exists()  # cut at the depth bound or out of budget: answered as feasible
    assert look.nodes - before <= look.node_budget
    config = pda.initial()
    for _ in range(50):
        moves = look.feasible_moves(config)
        if not moves:
            break
        config = moves[0][1]


def test_no_module_changes_the_recursion_limit() -> None:
    source = ROOT / "src" / "fllm_cli"
    offenders = [
        str(p.relative_to(source))
        for p in source.rglob("*.py")
        if "setrecursionlimit" in p.read_text(encoding="utf-8")
    ]
    assert offenders == []
