"""Cooking: plans are derivations of Eq. 5, seasonings are subsets, steps come in cooking order."""

from __future__ import annotations

from itertools import product
from pathlib import Path

import pytest

from fllm_cli import api
from fllm_cli.llm.simple import RandomModel
from tests.conftest import InProc

ROOT = Path(__file__).resolve().parents[2]
DOMAIN = str(ROOT / "domains" / "cooking.yaml")
SEASONINGS = [
    "onion",
    "ginger",
    "garlic",
    "cooking oil",
    "salt",
    "light soy sauce",
    "cooking wine",
    "white pepper",
    "sugar",
    "vinegar",
]
# Eq. 5 with the seasoning A as one symbol; its language is finite, so list it.
EQ5 = {
    "S": [["a", "A", "B"]],
    "B": [["a", "C", "D"], ["a", "C", "E"]],
    "C": [["a", "F"]],
    "D": [["a", "A", "I"]],
    "E": [["b", "H"]],
    "F": [["b", "A", "G"]],
    "G": [["c", "d"]],
    "H": [["e", "f"], ["e", "I"]],
    "I": [["c", "f"]],
}


def language(symbol: str) -> list[list[str]]:
    if symbol not in EQ5:
        return [[symbol]]
    words = []
    for rhs in EQ5[symbol]:
        for parts in product(*(language(s) for s in rhs)):
            words.append([x for part in parts for x in part])
    return words


def collapse(word: list[str]) -> tuple[list[str], list[list[str]]]:
    """Fold each run of seasoning terminals (A:x) into one A; return the subsets too."""
    out: list[str] = []
    subsets: list[list[str]] = []
    prev_was_a = False
    for item in word:
        if item.startswith("A:"):
            if not prev_was_a:
                out.append("A")
                subsets.append([])
            subsets[-1].append(item[2:])
            prev_was_a = True
            continue
        prev_was_a = False
        out.append(item)
    return out, subsets


@pytest.fixture(scope="module")
def problem() -> api.Problem:
    return api.compile_problem(DOMAIN, task="Cook broccoli beef.")


@pytest.mark.parametrize("seed", range(40))
def test_plans_are_derivations_of_eq5_in_cooking_order(problem: api.Problem, seed: int) -> None:
    doc = api.plan(problem, RandomModel(seed)).document
    # Empty subsets leave no A in the word: accept the word if some filling of its A slots fits.
    folded, subsets = collapse(doc["word"])
    words = language("S")
    assert any(_fits(folded, w) for w in words), folded
    for subset in subsets:
        assert subset == [s for s in SEASONINGS if s in subset]  # a set: no repeats, no others
    steps = doc["steps"]
    assert [s["id"] for s in steps] == list(range(1, len(steps) + 1))
    for step in steps:
        for ref in step["uses"]:
            if ref.startswith("step:"):
                assert int(ref[5:]) < step["id"]  # every input exists before the step
    assert steps[-1]["step"].startswith("Stir-fry the beef and broccoli mixture")
    seasoning_steps = [s for s in steps if "set" in s]
    assert len(seasoning_steps) in (2, 3)
    assert all(set(s["set"]) <= set(SEASONINGS) for s in seasoning_steps)


def _fits(folded: list[str], word: list[str]) -> bool:
    """True if ``folded`` is ``word`` with some A slots dropped (empty seasoning subsets)."""
    i = 0
    for sym in word:
        if i < len(folded) and folded[i] == sym:
            i += 1
        elif sym != "A":
            return False
    return i == len(folded)


def test_seasoning_questions_are_yes_no_and_recorded_as_one_step() -> None:
    problem = api.compile_problem(DOMAIN, task="Cook broccoli beef.")
    result = api.plan(problem, RandomModel(5))
    set_prompts = [r for r in result.trace if "include" in r["prompt"]]
    assert set_prompts and all(len(r["options"]) == 2 for r in set_prompts)
    assert "Should the seasoning for the step" in set_prompts[0]["prompt"]


def test_verify_reads_a_hand_written_plan(tmp_path: Path, fllm_inproc: InProc) -> None:
    plan = tmp_path / "plan.txt"
    plan.write_text(
        "a\nA:ginger\nA:salt\na\na\nb\nA:cooking wine\nc\nd\nb\ne\nc\nf\n", encoding="utf-8"
    )
    code, out, err = fllm_inproc("verify", DOMAIN, str(plan))
    assert code == 0, out + err
    assert 'Prepare the seasoning: ginger, salt for the step: "Stir-fry' in out + err
    plan.write_text("a\nA:salt\nA:ginger\na\n", encoding="utf-8")  # out of the set's order
    code, out, err = fllm_inproc("verify", DOMAIN, str(plan))
    assert code == 1
