"""The persistent stack: reads like a tuple, shares its lower part, costs what it pushes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fllm_cli import api
from fllm_cli.automaton.pda import EMPTY, Stack

OPS = st.lists(st.one_of(st.tuples(st.just("push"), st.lists(st.integers(0, 3), max_size=3)),
                         st.tuples(st.just("pop"), st.just([]))), max_size=40)  # fmt: skip


@given(OPS)
def test_reads_like_the_tuple_it_stands_for(ops: list[tuple[str, list[int]]]) -> None:
    stack, model = EMPTY, ()
    for op, items in ops:
        if op == "push":
            stack, model = stack.push(*items), model + tuple(items)
        elif model:
            stack, model = stack.pop(), model[:-1]
        assert len(stack) == len(model) and bool(stack) == bool(model)
        assert tuple(stack) == model and tuple(reversed(stack)) == model[::-1]
        assert stack.top == (model[-1] if model else None)
        for i in range(-len(model), len(model)):
            assert stack[i] == model[i]
        rebuilt = Stack.of(model)  # equal items, other nodes
        assert rebuilt == stack and hash(rebuilt) == hash(stack)
        assert stack[:-1] == model[:-1]


def test_misuse_of_an_empty_stack_raises() -> None:
    with pytest.raises(IndexError):
        EMPTY.pop()
    with pytest.raises(IndexError):
        EMPTY[-1]
    assert Stack.of([1]) != Stack.of([2]) and Stack.of([1, 2]) != Stack.of([1])


def test_a_step_keeps_the_stack_below_what_it_pushes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    spec = tmp_path / "sss.yaml"
    spec.write_text(
        "name: sss\nkind: grammar\ngrammar:\n  start: S\n  terminals: [a]\n"
        "  productions:\n    S: ['S S S', 'a']\n",
        encoding="utf-8",
    )
    pda = api.compile_problem(str(spec), task="t").pda
    config = pda.initial()
    for _ in range(30):  # always expand S -> S S S: the stack grows by two each time
        moves = [i for i in pda.applicable(config) if pda.transitions[i].push]
        nxt = pda.step(config, moves[0])
        assert nxt is not None
        pushed = len(nxt.stack) - len(config.stack) + 1
        below = nxt.stack
        for _ in range(pushed):
            below = below.pop()
        assert below is config.stack.pop()  # shared, not copied
        config = nxt
    assert len(config.stack) > 40
