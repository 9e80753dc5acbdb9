"""Golden files for the rendered automata of the paper's two examples (--update-golden)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from fllm_cli import api
from fllm_cli.automaton import render
from fllm_cli.automaton.pda import PDA
from tests.conftest import RENDERINGS as GOLDEN
from tests.conftest import ROOT, SPECS

FORMATS: dict[str, Callable[[PDA], str]] = {
    "table.txt": render.to_plain_table,
    "dot": render.to_dot,
    "mmd": render.to_mermaid,
    "json": render.to_json,
}


def eq2() -> PDA:
    """The paper's Eq. 2, S → ε | a S b."""
    return api.compile_problem(str(SPECS / "anbn.yaml")).pda


def figure3() -> PDA:
    """OpenAGI for an image → text task (the paper's Figure 3)."""
    problem = api.compile_problem(
        str(ROOT / "domains" / "openagi.yaml"), inputs=["image"], output="text"
    )
    return problem.pda


@pytest.mark.parametrize("suffix", sorted(FORMATS))
def test_eq2_golden(suffix: str, golden: Callable[[Path, str], None]) -> None:
    golden(GOLDEN / f"anbn.{suffix}", FORMATS[suffix](eq2()))


@pytest.mark.parametrize("suffix", sorted(FORMATS))
def test_figure3_golden(suffix: str, golden: Callable[[Path, str], None]) -> None:
    golden(GOLDEN / f"openagi_image_text.{suffix}", FORMATS[suffix](figure3()))


def test_eq2_transitions_are_the_papers() -> None:
    labels = [t.label() for t in eq2().transitions]
    assert labels == ["(ε, Z; S Z)", "(ε, S; ε)", "(a, S; S b)", "(b, b; ε)", "(ε, Z; Z)"]


def test_figure3_has_one_fused_transition_per_tool_and_input() -> None:
    labels = [t.label() for t in figure3().transitions]
    assert "(Image Captioning, text; image)" in labels
    assert "(Visual Question Answering, text; image text)" in labels
    assert "(input:image, image; ε)" in labels
    assert len(labels) == 1 + 15 + 1 + 1  # start, tools, the input, accept
