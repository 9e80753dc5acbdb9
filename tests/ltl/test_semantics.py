"""The compiled automaton agrees with an independent evaluator of the semantics."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fllm_cli.ltl.automaton import compile_formula
from fllm_cli.ltl.formula import Always, Formula, Implies, Next, Prop, Until, atoms_in_order

from .reference import accepts

ALPHABET = ("a", "b", "c")

atoms = st.sampled_from(ALPHABET).map(Prop)


def _extend(children: st.SearchStrategy[Formula]) -> st.SearchStrategy[Formula]:
    return st.one_of(
        st.lists(children, min_size=2, max_size=3).map(lambda ps: Next(tuple(ps))),
        st.tuples(children, children).map(lambda p: Until(*p)),
        children.map(Always),
        st.tuples(children, children).map(lambda p: Implies(*p)),
    )


formulas = st.recursive(atoms, _extend, max_leaves=5)
words = st.lists(st.sampled_from(ALPHABET), max_size=7).map(tuple)


@settings(max_examples=300, deadline=None)
@given(formulas, st.lists(words, min_size=1, max_size=8))
def test_automaton_matches_reference_with_start_and_final(
    f: Formula, ws: list[tuple[str, ...]]
) -> None:
    order = atoms_in_order(f)
    dfa = compile_formula(f, ALPHABET, order[0], order[-1])
    for w in ws:
        assert dfa.accepts(w) == accepts(f, w, order[0], order[-1]), w


@settings(max_examples=300, deadline=None)
@given(formulas, st.lists(words, min_size=1, max_size=8))
def test_automaton_matches_reference_without_constraints(
    f: Formula, ws: list[tuple[str, ...]]
) -> None:
    dfa = compile_formula(f, ALPHABET)
    for w in ws:
        assert dfa.accepts(w) == accepts(f, w, None, None), w


@settings(max_examples=100, deadline=None)
@given(formulas)
def test_every_offered_move_can_still_reach_the_final_state(f: Formula) -> None:
    order = atoms_in_order(f)
    dfa = compile_formula(f, ALPHABET, order[0], order[-1])
    for node in range(dfa.size):
        path = dfa.shortest_completion(node)
        assert len(path) == dfa.distance[node]
        end = node
        for name in path:
            nxt = dfa.step(end, name)
            assert nxt is not None
            end = nxt
        assert end in dfa.accepting


def test_until_allows_zero_repetitions_but_the_start_state_forbids_it_for_react() -> None:
    f = Next((Until(Next((Prop("t"), Prop("o"))), Prop("f")), Prop("x")))
    free = compile_formula(f, ("t", "o", "f", "x"))
    assert free.accepts(("f", "x"))
    pinned = compile_formula(f, ("t", "o", "f", "x"), "t", "x")
    assert not pinned.accepts(("f", "x"))
    assert pinned.accepts(("t", "o", "f", "x"))
    assert pinned.accepts(("t", "o", "t", "o", "f", "x"))
    assert not pinned.accepts(("t", "f", "x"))


def test_always_needs_at_least_one_block() -> None:
    f = Always(Next((Prop("c"), Prop("u"))))
    dfa = compile_formula(f, ("c", "u"), "c", "u")
    assert dfa.accepts(("c", "u", "c", "u"))
    assert not dfa.accepts(())
    assert not dfa.accepts(("c", "u", "c"))
