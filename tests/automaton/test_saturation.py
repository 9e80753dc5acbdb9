"""The exact look-ahead for explicit automata whose stack grows (the ``pre*`` saturation)."""

from __future__ import annotations

import random
from collections import deque
from pathlib import Path

import pytest

from fllm_cli import api
from fllm_cli.automaton.explicit import ANY, ExplicitLookahead, ExplicitPDA, Saturation
from fllm_cli.automaton.pda import Config, Transition
from fllm_cli.domain.load import read_domain
from fllm_cli.errors import SpecError
from fllm_cli.kinds import check_domain

FINDINGS = Path(__file__).parents[2] / "fuzz" / "findings" / "automaton-plan-slow"


@pytest.mark.parametrize("name", ["domain.yaml", "domain2.yaml"])
def test_fuzz_finding_automaton_plan_slow_is_refused_at_once(name: str) -> None:
    """Both domains grow the stack and can never show their accepting stack top.

    The look-ahead used to cut its search at a depth bound and call every move feasible, so
    planning ran to --max-moves (45-75 s). It now proves that no word exists, without one
    search node, and the domain check says so.
    """
    domain, _ = read_domain(str(FINDINGS / name))
    assert domain is not None
    problem_pda = api.compile_problem(domain, task="t").pda
    assert isinstance(problem_pda, ExplicitPDA) and problem_pda.grows
    look = ExplicitLookahead(problem_pda)
    assert not look.word_exists()
    assert look.nodes == 0 and look.exhausted == 0
    assert any("accepts no word" in d.message for d in check_domain(domain))
    with pytest.raises(SpecError, match="accepts no word"):
        api.compile_problem(str(FINDINGS / name), task="t")


def pda(transitions: list[Transition], accept_tops: tuple[str, ...] = ("Z",)) -> ExplicitPDA:
    return ExplicitPDA(
        states=("q", "r", "f"),
        start="q",
        accept=("f",),
        stack_alphabet=("Z", "A", "B"),
        bottom="Z",
        transitions=tuple(transitions),
        counts_into=(None,) * len(transitions),
        accept_tops=accept_tops,
        initial_stack=("Z",),
    )


def test_a_plan_that_needs_a_high_stack_is_found() -> None:
    # Push A forty times, switch, pop them all, then accept on Z: longer than any fixed
    # depth the old search allowed itself here.
    machine = pda(
        [
            Transition("q", "q", "push", ANY, ("A", ANY)),
            Transition("q", "r", "turn", ANY, (ANY,)),
            Transition("r", "r", "pop", "A", ()),
            Transition("r", "f", "done", "Z", ("Z",)),
        ]
    )
    look = ExplicitLookahead(machine)
    config = machine.initial()
    for _ in range(40):
        config = machine.step(config, 0)  # type: ignore[assignment]
    assert look.completable(config)
    turned = machine.step(config, 1)
    assert turned is not None and look.completable(turned)
    # Popping into a state that has no way back is a dead end, and the look-ahead says so.
    trapped = pda([Transition("q", "q", "push", ANY, ("A", ANY))])
    assert not ExplicitLookahead(trapped).word_exists()


def random_pda(rng: random.Random) -> ExplicitPDA:
    states = ("q", "r", "f")
    symbols = ("Z", "A", "B")
    transitions = []
    for _ in range(rng.randint(2, 6)):
        push = tuple(rng.choice((*symbols, ANY)) for _ in range(rng.choice((0, 1, 1, 2, 2, 3))))
        transitions.append(
            Transition(
                rng.choice(states),
                rng.choice(states),
                rng.choice(("a", "b", None)),
                rng.choice((*symbols, ANY)),
                push,
            )
        )
    transitions.append(Transition("q", "q", "grow", ANY, ("A", ANY)))  # the stack can grow
    return pda(transitions, rng.choice(((), ("Z",), ("A", "B"))))


def reaches_acceptance(machine: ExplicitPDA, config: Config, steps: int, height: int) -> bool:
    """Breadth-first search for an accepting configuration (bounded, so only 'yes' is sure)."""
    todo = deque([(config, 0)])
    seen = set()
    while todo:
        c, depth = todo.popleft()
        if machine.is_accepting(c):
            return True
        key = (c.state, tuple(s.symbol for s in c.stack))
        if key in seen or depth >= steps or len(c.stack) > height:
            continue
        seen.add(key)
        for index in machine.applicable(c):
            nxt = machine.step(c, index)
            if nxt is not None:
                todo.append((nxt, depth + 1))
    return False


# Automata whose bounded search takes seconds: make test-fast leaves them out.
SLOW_SEEDS = (5, 7, 20)


@pytest.mark.parametrize(
    "seed", [pytest.param(s, marks=pytest.mark.slow) if s in SLOW_SEEDS else s for s in range(40)]
)
def test_saturation_agrees_with_a_search(seed: int) -> None:
    rng = random.Random(seed)
    machine = random_pda(rng)
    saturation = Saturation(machine)
    assert saturation.ready
    # Configurations met on a bounded walk from the start.
    configs = [machine.initial()]
    for _ in range(30):
        c = rng.choice(configs)
        moves = [m for m in machine.applicable(c) if machine.step(c, m) is not None]
        if moves and len(c.stack) < 8:
            stepped = machine.step(c, rng.choice(moves))
            assert stepped is not None
            configs.append(stepped)
    for config in configs:
        exact = saturation.accepts(config)
        assert exact is not None
        if reaches_acceptance(machine, config, steps=14, height=14):
            assert exact
        elif exact:
            # Saturation says yes: a longer search finds the way.
            assert reaches_acceptance(machine, config, steps=60, height=40)
