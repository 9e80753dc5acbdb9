"""Properties: derived words are accepted, acceptance is membership, the look-ahead is exact."""

from __future__ import annotations

import random

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fllm_cli.automaton.lookahead import GrammarLookahead
from fllm_cli.automaton.pda import Config, pda_from_grammar
from fllm_cli.domain.model import Domain, Task
from fllm_cli.grammar.cfg import Grammar
from fllm_cli.grammar.compile import tool_grammar
from fllm_cli.plan.model import Derivation, TreeNode
from fllm_cli.verify import verify_word
from tests.automaton._gen import (
    brute_completable,
    cfg_member,
    derive,
    grammars,
    member,
    tool_problems,
    within_limits,
)

SETTINGS = settings(max_examples=150, deadline=None)


def tree_yield(derivation: Derivation) -> list[str]:
    """Read the word back off the derivation tree (checking it matches each production)."""
    g = derivation.grammar
    out: list[str] = []

    def walk(node: TreeNode) -> None:
        rhs = g.productions[node.production].rhs
        assert len(node.children) == len(rhs)
        for child, sym in zip(node.children, rhs):
            if isinstance(child, TreeNode):
                assert child.lhs == sym
                walk(child)
            else:
                assert child == sym and g.is_terminal(sym)
                out.append(child)

    assert derivation.root is not None
    assert derivation.root.lhs == g.start
    walk(derivation.root)
    return out


@pytest.mark.slow
@SETTINGS
@given(grammars(), st.integers(0, 2**32 - 1))
def test_derived_words_are_accepted(g: Grammar, seed: int) -> None:
    rng = random.Random(seed)
    words = [derive(g, rng) for _ in range(30)]
    # Words of at most 40 symbols: deciding a long word of an ambiguous grammar is bounded by
    # time (verify.SPAN_SECONDS), which a busy machine can exceed; the property is the same.
    good = [w for w in words if w is not None and within_limits(g, w) and len(w) <= 40]
    assume(good)
    pda = pda_from_grammar(g)
    for word in good[:5]:
        verdict = verify_word(pda, word)
        assert verdict.valid, (word, verdict.reason)
        assert verdict.derivation is not None
        assert tree_yield(verdict.derivation) == word


@pytest.mark.slow
@SETTINGS
@given(grammars(), st.integers(0, 2**32 - 1), st.lists(st.integers(0, 3), max_size=6))
def test_acceptance_is_membership(g: Grammar, seed: int, letters: list[int]) -> None:
    names = [t.name for t in g.terminals]
    rng = random.Random(seed)
    # A random word, and a derived word that ignores the limits (so limits decide it).
    candidates = [[names[i % len(names)] for i in letters]]
    derived = derive(g, rng)
    if derived is not None and len(derived) <= 8:
        candidates.append(derived)
        if derived:
            cut = rng.randrange(len(derived))
            candidates.append(derived[:cut] + derived[cut + 1 :])
    pda = pda_from_grammar(g)
    for word in candidates:
        verdict = verify_word(pda, word)
        assert verdict.valid == member(g, word), (word, verdict.reason)
        if not verdict.valid:
            assert 1 <= verdict.position <= len(word) + 1
            assert verdict.reason
    if derived is not None and len(derived) <= 8:
        assert cfg_member(g, derived)


def form_bound(domain: Domain) -> int:
    """The longest sentential form any derivation of the problem can reach.

    Only a limited tool with k inputs lengthens a form (by k - 1, at most ``max_uses`` times);
    ``tool_problems`` gives unlimited tools one input, so the bound holds by construction and
    the brute-force oracle never has to give up. The oracle meets a tool's production with the
    tool itself still in front (one more symbol), even when its limit then refuses it.
    """
    grow = sum((t.max_uses or 0) * (len(t.inputs) - 1) for t in domain.tools)
    longest_step = max(len(t.inputs) for t in domain.tools)
    return 1 + grow + longest_step


def _walk_and_check(domain: Domain, task: Task, seed: int) -> None:
    pda = pda_from_grammar(tool_grammar(domain, task))
    look = GrammarLookahead(pda)
    bound = form_bound(domain)

    def oracle(config: Config) -> bool:
        return brute_completable(pda, config, max_stack=bound, cap=10**6)

    rng = random.Random(seed)
    config = pda.initial()
    solvable = look.word_exists()
    assert solvable == look.completable(config)
    assert solvable == oracle(config)
    if not solvable:
        return
    for _ in range(rng.randrange(12)):
        if pda.is_accepting(config):
            break
        moves = look.feasible_moves(config)
        # No dead ends: a completable configuration always offers a move.
        assert moves, config
        offered = {index for index, _ in moves}
        for index in pda.applicable(config):
            nxt = pda.step(config, index)
            if nxt is None:
                assert index not in offered
                continue
            assert look.completable(nxt) == (index in offered)
            assert oracle(nxt) == (index in offered), pda.transitions[index].label()
        config = rng.choice(moves)[1]


@settings(max_examples=120, deadline=None)
@given(tool_problems(), st.integers(0, 2**32 - 1))
def test_lookahead_is_exact(problem: tuple[Domain, Task], seed: int) -> None:
    domain, task = problem
    _walk_and_check(domain, task, seed)


@settings(max_examples=60, deadline=None)
@given(tool_problems(), st.integers(0, 2**32 - 1))
def test_feasible_walks_always_finish(problem: tuple[Domain, Task], seed: int) -> None:
    domain, task = problem
    pda = pda_from_grammar(tool_grammar(domain, task))
    look = GrammarLookahead(pda)
    if not look.word_exists():
        return
    rng = random.Random(seed)
    config = pda.initial()
    for _ in range(200):
        if pda.is_accepting(config):
            break
        moves = look.feasible_moves(config)
        assert moves
        # Prefer moves that shrink the stack so unlimited tools cannot loop for ever.
        moves.sort(key=lambda m: len(m[1].stack))
        config = (moves[0] if rng.random() < 0.5 else rng.choice(moves))[1]
    assert pda.is_accepting(config)
    assert verify_word(pda, config.word_list()).valid
