"""The independent check of a planned word: its derivation tree, in linear time."""

from __future__ import annotations

import copy

import pytest

from fllm_cli import api
from fllm_cli.llm.simple import RandomModel
from fllm_cli.plan.model import Derivation, TreeNode
from fllm_cli.verify import check_derivation


def _planned(openagi: str) -> tuple[api.Problem, Derivation]:
    problem = api.compile_problem(openagi, inputs=["image"], output="text", task="t")
    result = api.plan(problem, RandomModel(4))
    assert isinstance(result.derivation, Derivation)
    return problem, result.derivation


@pytest.mark.slow
def test_a_planned_tree_passes_and_a_tampered_one_fails(openagi: str) -> None:
    _, derivation = _planned(openagi)
    assert check_derivation(derivation) is None
    wrong_leaf = copy.deepcopy(derivation)
    wrong_leaf.word = [*wrong_leaf.word[:-1], "Colorization"]
    assert check_derivation(wrong_leaf) == "the tree's leaves are not the plan's steps"
    cut = copy.deepcopy(derivation)
    node = next(n for n in cut.nodes if any(isinstance(c, TreeNode) for c in n.children))
    index = next(i for i, c in enumerate(node.children) if isinstance(c, TreeNode))
    node.children[index] = "image"  # a nonterminal left underived
    assert "underived" in (check_derivation(cut) or "")


def test_long_words_skip_the_reparse_but_not_the_tree(openagi: str, monkeypatch) -> None:
    from fllm_cli.kinds import grammar_based

    problem, derivation = _planned(openagi)
    calls: list[int] = []
    real = problem.verify
    monkeypatch.setattr(problem, "verify", lambda word: calls.append(len(word)) or real(word))
    assert problem.check_planned(derivation.word, derivation) is None and calls
    monkeypatch.setattr(grammar_based, "REPARSE_UP_TO", 0)
    calls.clear()
    assert problem.check_planned(derivation.word, derivation) is None and not calls
    tampered = copy.deepcopy(derivation)
    tampered.word = tampered.word[1:]
    assert problem.check_planned(tampered.word, tampered) is not None
