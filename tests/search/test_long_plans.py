"""Long plans: the work per choice point and the prompt stay bounded as the plan grows.

No timing here: the tests count the nodes and stack items the prompt builders and the
look-ahead process, and the lines of the prompts they render.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from fllm_cli import api
from fllm_cli.automaton.explicit import ExplicitLookahead
from fllm_cli.automaton.lookahead import GrammarLookahead
from fllm_cli.automaton.pda import Config
from fllm_cli.errors import NoPlanError
from fllm_cli.llm.base import ChoiceRequest, ChoiceResult, GenerateRequest, Generation, Model
from fllm_cli.search.automaton_prompting import AutomatonPrompter, StepIndex
from fllm_cli.search.planner import Budgets, Planner
from fllm_cli.search.prompting import WINDOW, Branch, Prompter

RECURSIVE = """kind: grammar
grammar:
  start: S
  terminals: {a: the a}
  productions:
    S: "S S S | a"
"""

PUSHER = """fllm: 1
name: pusher
kind: automaton
automaton:
  start: q0
  states: [q0, q1]
  transitions:
  - {from: q0, to: q0, input: more, push: A ∀, option: Push one more., step: pushed}
  - {from: q0, to: q1, input: done, step: {text: finish}}
  - {from: q1, to: q1, input: drop, pop: A, push: '', step: {activity: pop}}
  accept:
    states: [q1]
    stack_top: [Z]
  stack:
    alphabet: [Z, A]
    initial: Z
  order: reverse
"""


class Recording(Model):
    """Seeded random choice that remembers the longest prompt it was shown."""

    name = "recording"

    def __init__(self, seed: int, first: float = 0.0) -> None:
        self.rng = random.Random(seed)
        self.first = first  # how often to take the first option instead of a random one
        self.longest = 0
        self.prompts = 0

    def choose(self, request: ChoiceRequest) -> ChoiceResult:
        self.prompts += 1
        self.longest = max(self.longest, len(request.prompt.splitlines()))
        if self.rng.random() < self.first:
            return ChoiceResult(index=0)
        return ChoiceResult(index=self.rng.randrange(len(request.options)))

    def generate(self, request: GenerateRequest) -> Generation:
        return Generation(text="", calls=0)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def run_to_budget(problem: api.Problem, model: Recording, moves: int) -> Planner:
    planner = Planner(
        problem.pda,
        problem.lookahead,
        model,
        problem.prompter(),
        Budgets(max_steps=moves, max_backtracks=None),
    )
    with pytest.raises(NoPlanError, match="--max-moves"):
        planner.run()
    return planner


def test_grammar_prompts_and_lookahead_do_bounded_work_per_choice(tmp_path: Path) -> None:
    problem = api.compile_problem(write(tmp_path, "r.yaml", RECURSIVE), task="t")
    model = Recording(seed=1)
    planner = run_to_budget(problem, model, 2_000)
    assert planner.stats.choice_points > 1_500
    prompter = planner.prompter
    assert isinstance(prompter, Prompter)
    # Every derivation node is processed once, not once per choice point (that would be
    # about a million here).
    assert prompter.branch.visits <= planner.stats.steps
    assert len(prompter.branch.lines) > WINDOW  # the window was needed
    # The prompt shows the last WINDOW steps and one line for the earlier ones.
    assert model.longest <= WINDOW + 20
    # The look-ahead folds each stack item once, not the whole stack at every query.
    look = problem.lookahead
    assert isinstance(look, GrammarLookahead)
    assert look._prefixes.folds <= 4 * planner.stats.steps


def test_automaton_prompts_and_lookahead_do_bounded_work_per_choice(tmp_path: Path) -> None:
    problem = api.compile_problem(write(tmp_path, "p.yaml", PUSHER), task="t")
    model = Recording(seed=2, first=1.0)  # always push one more: the plan never ends
    planner = run_to_budget(problem, model, 2_000)
    prompter = planner.prompter
    assert isinstance(prompter, AutomatonPrompter)
    assert prompter.index.visits <= planner.stats.steps
    assert model.longest <= WINDOW + 20
    look = problem.lookahead
    assert isinstance(look, ExplicitLookahead)
    assert look.saturation is not None
    assert look.saturation.cache.folds <= 4 * planner.stats.steps
    assert look.nodes == 0  # no depth-first search at all


def test_long_progress_counts_the_steps_it_leaves_out(tmp_path: Path) -> None:
    problem = api.compile_problem(write(tmp_path, "r.yaml", RECURSIVE), task="t")
    prompter = problem.prompter()
    assert isinstance(prompter, Prompter)
    config, moves = walk(problem, random.Random(5), 3_000, first=0.4)
    context = prompter.context(config, moves)
    total = len(prompter.branch.lines)
    hidden = total - WINDOW
    assert hidden > 0
    progress = context["progress"]
    assert progress[0] == f"Step n to Step (n-{hidden - 1}): {hidden} earlier steps, not shown;"
    assert progress[1].startswith(f"Step (n-{hidden}): ")
    assert progress[-1] == f"Step (n-{total}): ?"
    assert len(progress) == WINDOW + 2
    # With a window as long as the plan, nothing is left out: the lines a fresh index makes.
    prompter.window = 10**9
    fresh = Branch(prompter.grammar, prompter.links)
    fresh.sync(config)
    assert prompter.context(config, moves)["progress"] == fresh.progress(10**9)


def test_automaton_steps_window_keeps_the_latest_steps(tmp_path: Path) -> None:
    problem = api.compile_problem(write(tmp_path, "p.yaml", PUSHER), task="t")
    prompter = problem.prompter()
    assert isinstance(prompter, AutomatonPrompter)
    config = problem.pda.initial()
    for _ in range(WINDOW + 30):
        config = problem.lookahead.feasible_moves(config)[0][1]  # "more"
    steps = prompter.context(config, [0, 1])["steps"]
    # Reverse order: the latest step first, the count of the 30 earliest ones last.
    assert steps == ["pushed"] * WINDOW + ["(30 earlier steps, not shown)"]


def walk(
    problem: api.Problem, rng: random.Random, moves: int, first: float
) -> tuple[Config, list[int]]:
    """Walk feasible moves (taking the first with probability ``first``); return the last
    choice point met and its moves."""
    config = problem.pda.initial()
    last: tuple[Config, list[int]] | None = None
    for _ in range(moves):
        if problem.pda.is_accepting(config):
            break
        feasible = problem.lookahead.feasible_moves(config)
        if len(feasible) > 1:
            last = (config, [m for m, _ in feasible])
        pick = 0 if rng.random() < first else rng.randrange(len(feasible))
        config = feasible[pick][1]
    assert last is not None
    return last


@pytest.mark.parametrize("seed", range(6))
def test_indexes_after_backtracking_match_fresh_ones(tmp_path: Path, seed: int) -> None:
    """Jumping back to an earlier configuration (a backtrack) leaves the same index as
    building it from nothing."""
    cooking = Path(__file__).parents[2] / "domains" / "cooking.yaml"
    for path in (write(tmp_path, "r.yaml", RECURSIVE), write(tmp_path, "p.yaml", PUSHER), cooking):
        problem = api.compile_problem(path, task="t")
        prompter = problem.prompter()
        rng = random.Random(seed)
        seen: list[Config] = []
        config = problem.pda.initial()
        for _ in range(300):
            if problem.pda.is_accepting(config):
                config = problem.pda.initial()
            feasible = problem.lookahead.feasible_moves(config)
            if not feasible:
                config = problem.pda.initial()
                continue
            seen.append(config)
            if rng.random() < 0.1:
                config = rng.choice(seen)
            else:
                config = rng.choice(feasible)[1]
            if isinstance(prompter, Prompter):
                prompter.branch.sync(config)
                fresh = Branch(prompter.grammar, prompter.links)
                fresh.sync(config)
                assert prompter.branch.progress(10**9) == fresh.progress(10**9)
                assert prompter.branch.step_texts(10**9) == fresh.step_texts(10**9)
            else:
                assert isinstance(prompter, AutomatonPrompter)
                prompter.index.sync(config)
                index = StepIndex(prompter.spec, prompter.pda, prompter.vars)
                index.sync(config)
                assert prompter.index.shown(10**9) == index.shown(10**9)
