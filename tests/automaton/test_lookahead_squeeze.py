"""A grammar whose every look-ahead query runs out of budget must not make planning take minutes.

Fuzz finding ``beam-lookahead-slow``: twenty tools, several with use limits, and an input that
must be read. Every query of the grammar look-ahead spent its whole share, and the beam asks
about 1,500 of them, so ``fllm plan`` ran for 90 s. A call that runs out now halves the budget
of the calls after it (down to a floor), so the total work stays bounded.
"""

from __future__ import annotations

from pathlib import Path

from fllm_cli import api
from fllm_cli.automaton.lookahead import GrammarLookahead
from tests.conftest import run_fllm

FINDING = Path(__file__).parents[2] / "fuzz" / "findings" / "beam-lookahead-slow" / "d.yaml"


def _walk(look: GrammarLookahead, start: object) -> list[int]:
    """Expand a small beam six levels deep; return the budget each call started with."""
    budgets = []
    frontier = [start]
    for _ in range(6):
        grown = []
        for config in frontier[:6]:
            budgets.append(look.node_budget if look.squeezed is None else look.squeezed)
            grown += [c for _, c in look.feasible_moves(config)]  # type: ignore[arg-type]
        frontier = grown
    return budgets


def test_a_call_that_runs_out_halves_the_next_calls_budget_down_to_the_floor() -> None:
    problem = api.compile_problem(str(FINDING), inputs=["模态"], output="模态", task="t")
    look = GrammarLookahead(problem.pda, node_budget=20_000)
    budgets = _walk(look, problem.pda.initial())
    floor = GrammarLookahead.SQUEEZE_FLOOR
    # Some calls ran out: each halved the budget of the calls after it, down to the floor.
    assert sorted(set(budgets), reverse=True) == [20_000, 10_000, 5_000, 2_500, floor]
    assert budgets[-1] == floor
    # All the calls together: at most twice the first budget plus the floor for each call
    # (with the full budget for every call the bound would be far off: 26 x 20,000).
    assert look.stats.nodes <= 2 * 20_000 + len(budgets) * floor


def test_a_domain_whose_queries_fit_keeps_its_full_budget() -> None:
    problem = api.compile_problem(
        "domains/openagi.yaml", inputs=["image"], output="text", task="caption this photo"
    )
    look = GrammarLookahead(problem.pda)
    config = problem.pda.initial()
    for _ in range(5):
        moves = look.feasible_moves(config)
        config = moves[0][1]
    assert look.squeezed is None


def test_the_finding_plans_to_a_valid_plan(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    result = run_fllm(
        "plan", str(FINDING), "ünï ✓", "-i", "模态", "--output", "模态",
        "--model", "random:262835", "-f", "json", "-o", str(out), "--max-llm-calls", "0",
    )  # fmt: skip
    assert result.code == 0, result.err
    checked = run_fllm("verify", str(FINDING), str(out), "-i", "模态", "--output", "模态")
    assert checked.code == 0, checked.out + checked.err


def test_the_inputs_a_word_read_are_remembered_per_cell() -> None:
    """Fuzz finding ``words-walked``: a planner that walks thousands of moves asked, at every
    look-ahead query, which required inputs its word had read, and walked the whole word to
    answer (23 s, 229 million list appends). Each cell now remembers its answer, so a query
    walks only the cells read since the last one."""
    problem = api.compile_problem(
        "domains/openagi.yaml", inputs=["image", "text"], output="text", task="t"
    )
    look = GrammarLookahead(problem.pda)
    required = sorted(problem.pda.grammar.required)  # type: ignore[union-attr]
    word: object = None
    for i in range(5_000):
        word = ("Image Captioning" if i % 7 else required[0], word)
    assert look._read_required(word) == {required[0]}  # type: ignore[arg-type]
    assert len(look._words) == 5_000
    longer = (required[1], word)
    assert look._read_required(longer) == set(required)  # type: ignore[arg-type]
    assert len(look._words) == 5_001  # one new cell walked, not 5,001


def test_the_finding_words_walked_ends_with_a_clean_no_plan() -> None:
    folder = FINDING.parent.parent / "words-walked"
    result = run_fllm(
        "plan", str(folder / "d.yaml"), "", "-i", "q0=text", "-i", "q1=text", "-i", "q2=m0",
        "--output", "m0", "--model", "random:976080", "--max-llm-calls", "0",
    )  # fmt: skip
    assert result.code == 1, result.err
    assert "no valid plan found within --max-moves" in result.err
