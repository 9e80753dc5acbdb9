"""Before a model is asked what a task gives and produces, the interfaces the cheap look-ahead
could not decide are decided with the full budget (search/interface.settled_interfaces)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fllm_cli import api
from fllm_cli.domain.load import load_domain
from fllm_cli.llm.base import ChoiceRequest, ChoiceResult, GenerateRequest, Generation, Model
from fllm_cli.search import interface

# No tool takes two plants, and every input must be read: two plants have no plan.
NURSERY = """\
fllm: 1
name: nursery
description: Tend plants.
modalities:
  plant: {phrase: plant, description: "a living plant"}
  report: {phrase: report, description: "a written note about a plant"}
tools:
  - {name: Irrigator, description: supplies water to dry soil, inputs: [plant], output: plant}
  - {name: Inspector, description: writes a health report on a plant, inputs: [plant],
     output: report}
"""


class LastOption(Model):
    """Always takes the last option offered, and keeps every question it was asked."""

    name = "last"

    def __init__(self) -> None:
        self.offered: list[tuple[str, ...]] = []

    def choose(self, request: ChoiceRequest) -> ChoiceResult:
        self.offered.append(request.options)
        return ChoiceResult(index=len(request.options) - 1)

    def generate(self, request: GenerateRequest) -> Generation:
        return Generation(text="", calls=0)


@pytest.fixture
def undecided(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The nursery, as a cheap pass that runs out of budget everywhere sees it: every
    interface offered, none decided."""
    monkeypatch.setattr(interface, "_exists", lambda lookahead: True)
    monkeypatch.setattr(interface, "_FEASIBLE", {})
    monkeypatch.setattr(interface, "_SETTLED", {})
    spec = tmp_path / "nursery.yaml"
    spec.write_text(NURSERY)
    return spec


def test_the_cheap_pass_offers_what_it_cannot_decide_and_settling_drops_it(undecided: Path) -> None:
    domain = load_domain(undecided)
    offered = interface.feasible_interfaces(domain)
    assert ("plant", "plant") in [combo for combo, _ in offered]
    settled = interface.settled_interfaces(domain)
    assert ("plant", "plant") not in [combo for combo, _ in settled]
    assert settled == [(("plant",), ["plant", "report"])]


def test_the_model_is_never_offered_an_interface_without_a_plan(undecided: Path) -> None:
    model = LastOption()
    doc = api.plan_task(str(undecided), "look after it", model, search="greedy").document
    first = model.offered[0]  # what the task gives: the last option offered is taken
    assert not any("two plants" in option for option in first), first
    assert doc["valid"] is True
