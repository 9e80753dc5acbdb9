"""Long plans on recursive, ambiguous grammars: decided, or refused in bounded time."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from fllm_cli import api
from fllm_cli.errors import TimeBudgetExceeded
from fllm_cli.plan.document import build_document
from fllm_cli.plan.model import MAX_TREE_DEPTH
from fllm_cli.verify import verify_word
from tests.conftest import run_fllm

AMBIGUOUS = (
    "name: eps\nkind: grammar\ngrammar:\n  start: S\n  terminals: [a, b, c]\n"
    "  productions:\n    S: ['S S', a, b, ε]\n"
)


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    path = tmp_path / "eps.yaml"
    path.write_text(AMBIGUOUS, encoding="utf-8")
    return path


def test_a_deep_valid_plan_verifies_with_its_tree_left_out(spec: Path, tmp_path: Path) -> None:
    rng = random.Random(1)
    plan = tmp_path / "long.txt"
    plan.write_text("\n".join(rng.choice("ab") for _ in range(800)) + "\n", encoding="utf-8")
    code, out, err = run_fllm("verify", str(spec), str(plan), timeout=120)
    assert code == 0, err
    assert "valid plan (800 symbols)" in out and "levels deep: not drawn" in out
    problem = api.compile_problem(str(spec), task="t")
    verdict = api.verify(problem, plan.read_text().split())
    assert verdict.valid and verdict.derivation is not None
    assert verdict.derivation.depth() > MAX_TREE_DEPTH
    assert len(verdict.derivation.steps()) == 0  # no tools in this grammar, and no recursion
    doc = build_document(problem.domain, problem.task, verdict.derivation, "m")
    assert doc["tree"] is None and "levels deep" in doc["tree_omitted"]
    json.dumps(doc)  # writable


def test_an_undecidable_in_time_plan_is_refused_not_guessed(spec: Path) -> None:
    problem = api.compile_problem(str(spec), task="t")
    word = ["a"] * 400 + ["c"]  # invalid: no rule makes c, found only by the span table
    with pytest.raises(TimeBudgetExceeded, match="could not decide a plan of 401 steps"):
        verify_word(problem.pda, word, seconds=0.2)
    assert not verify_word(problem.pda, ["a"] * 20 + ["c"]).valid  # short: decided
