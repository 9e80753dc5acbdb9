"""What the order of a request's parts says about the interface (search/interface.py): the
output of what the last pointing part asks for, the inputs of what the first one asks for."""

from __future__ import annotations

from pathlib import Path

import pytest

from fllm_cli.domain.load import load_domain
from fllm_cli.domain.model import Domain
from fllm_cli.search import interface
from fllm_cli.search.relevance import Relevance, unit_key, unit_place
from fllm_cli.search.strategy import combine
from tests.search.test_meaning import GARDEN  # plants in, plants or a health report out


@pytest.fixture
def garden(tmp_path: Path) -> Domain:
    spec = tmp_path / "garden.yaml"
    spec.write_text(GARDEN)
    return load_domain(spec)


def _evidence(units: dict[str, dict[str, float]]) -> Relevance:
    """Meaning-like evidence (a step costs 1.0), combined as the strategy table combines it."""
    rel = Relevance({s: sum(u.values()) for s, u in units.items()}, 0.0, units, 0.25, 1.0)
    return combine([("meaning", rel, 1.0)])


def test_unit_keys_keep_their_place_through_a_signal_prefix() -> None:
    key = unit_key(3, "then: tell me #2")
    assert unit_place(key) == (3, "then: tell me #2")
    assert unit_place(f"meaning:{key}") == (3, "then: tell me #2")
    assert unit_place("words:water") is None and unit_place("model:proposed") is None


def test_the_last_pointing_part_names_the_output_whatever_its_strength(garden: Domain) -> None:
    rel = _evidence(
        {
            "Irrigator": {unit_key(0, "the soil is dry"): 2.0},
            "Inspector": {unit_key(2, "how is it doing"): 0.6},
            "Pruner": {unit_key(2, "how is it doing"): 0.4, unit_key(1, "trim"): 3.0},
        }
    )
    # Part 2 is the last to point anywhere; its strongest tool is Inspector, whatever part 1
    # is worth.
    assert interface.last_asked(garden, rel) == ("how is it doing", "Inspector", "report")
    # Without any placed unit (shared words only) there is nothing to read.
    shared_words = Relevance({"Pruner": 1.0}, 0.0, {"Pruner": {"trim": 1.0}})
    words_only = combine([("words", shared_words, 1.0)])
    assert interface.last_asked(garden, words_only) is None


def test_what_the_last_part_asks_for_tips_the_output(
    garden: Domain, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Watering is clearly asked for; the closing question points weakly at the report (its
    # evidence alone is worth less than a step costs).
    rel = _evidence(
        {
            "Irrigator": {unit_key(0, "the soil is bone dry"): 1.5},
            "Inspector": {unit_key(1, "then tell me how it is doing"): 0.8},
        }
    )
    options = interface.feasible_interfaces(garden)
    shipped = interface.LAST_ASKED

    def best(weight: float) -> tuple[tuple[str, ...], str]:
        monkeypatch.setattr(interface, "LAST_ASKED", weight)
        ranked = interface.rank_interfaces(garden, "request", options, rel, named=[])
        return ranked[0][1], ranked[0][2]

    assert best(0.0) == (("plant",), "plant")  # the weak closing part alone cannot carry it
    assert best(shipped) == (("plant",), "report")


NURSERY = """\
fllm: 1
name: nursery
description: Combine and tend plants.
modalities:
  plant: {phrase: plant, description: "a living plant"}
tools:
  - {name: Grafter, description: joins a cutting onto a rootstock, inputs: [plant, plant],
     output: plant}
  - {name: Irrigator, description: supplies water to dry soil, inputs: [plant], output: plant}
"""


def test_what_the_first_part_asks_for_tips_the_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = tmp_path / "nursery.yaml"
    spec.write_text(NURSERY)
    nursery = load_domain(spec)
    # The opening part points weakly at the two-plant Grafter; watering is clearly asked for.
    rel = _evidence(
        {
            "Grafter": {unit_key(0, "put these two together"): 0.8},
            "Irrigator": {unit_key(1, "then water it"): 1.5},
        }
    )
    first = interface.first_asked(nursery, rel)
    assert first == ("put these two together", "Grafter", ("plant", "plant"))
    # Inputs fit as a multiset: one plant cannot feed a tool of two.
    assert interface.order_fit(("plant", "plant"), "plant", first, None) == interface.FIRST_ASKED
    assert interface.order_fit(("plant",), "plant", first, None) == 0.0
    options = interface.feasible_interfaces(nursery)
    shipped = interface.FIRST_ASKED

    def best(weight: float) -> tuple[str, ...]:
        monkeypatch.setattr(interface, "FIRST_ASKED", weight)
        return interface.rank_interfaces(nursery, "request", options, rel, named=[])[0][1]

    assert best(0.0) == ("plant",)  # the weak opening part alone cannot bring a second plant
    assert best(shipped) == ("plant", "plant")
