"""Types whose role the domain fixes (search/interface.py): a type no tool makes can only be
given, a type no tool reads can only be wanted back, so naming one says where it goes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fllm_cli.domain.load import load_domain
from fllm_cli.domain.model import Domain
from fllm_cli.meaning import encoder
from fllm_cli.search import interface
from fllm_cli.search.relevance import Relevance
from tests.conftest import InProc, run_fllm
from tests.search.test_part_order import _evidence  # meaning-like evidence, a step costs 1.0

# A darkroom of our own: films come only from a camera, posters are only hung on a wall.
DARKROOM = """\
fllm: 1
name: darkroom
description: Develop and print photographs.
modalities:
  film: {phrase: film roll, description: "an exposed roll of camera film, not yet developed"}
  print: {phrase: print, description: "a photograph printed on paper"}
  poster: {phrase: poster, description: "a large framed picture for a wall"}
tools:
  - {name: Developer, description: develops an exposed film into paper prints, inputs: [film],
     output: print}
  - {name: Retoucher, description: removes dust spots and scratches from a print,
     inputs: [print], output: print}
  - {name: Enlarger, description: blows a print up to wall size and frames it, inputs: [print],
     output: poster}
"""


@pytest.fixture
def darkroom(tmp_path: Path) -> Path:
    spec = tmp_path / "darkroom.yaml"
    spec.write_text(DARKROOM)
    return spec


def test_roles_come_from_the_tools(darkroom: Path) -> None:
    assert interface.type_roles(load_domain(darkroom)) == ({"film"}, {"poster"})


def test_a_type_named_out_of_its_role_costs_a_step() -> None:
    roles = (frozenset({"film"}), frozenset({"poster"}))
    fit = interface.role_fit
    assert fit(("film",), "print", ["film", "print"], roles) == 0.0
    assert fit(("print",), "print", ["film", "print"], roles) == -interface.ROLE_FIT
    assert fit(("print",), "poster", ["poster"], roles) == 0.0
    assert fit(("print",), "print", ["poster"], roles) == -interface.ROLE_FIT
    assert fit(("print",), "print", ["film", "film", "poster"], roles) == -2 * interface.ROLE_FIT
    assert fit(("print",), "print", ["print"], roles) == 0.0  # a print can be either


def _best(domain: Domain, rel: Relevance, named: list[str]) -> tuple[tuple[str, ...], str]:
    options = interface.feasible_interfaces(domain)
    ranked = interface.rank_interfaces(domain, "request", options, rel, named=named)
    return ranked[0][1], ranked[0][2]


def test_a_type_only_a_task_can_give_puts_it_among_the_inputs(
    darkroom: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    domain = load_domain(darkroom)
    # Retouching is clearly asked for; nothing asks for developing, but the film is named.
    # (Unplaced units: the order of the request's parts says nothing here.)
    rel = _evidence({"Retoucher": {"dust": 2.0}})
    assert _best(domain, rel, ["film"]) == (("film",), "print")
    monkeypatch.setattr(interface, "ROLE_FIT", 0.0)
    assert _best(domain, rel, ["film"]) == (("print",), "print")  # the developing step costs


def test_a_type_only_a_task_can_want_back_is_the_output(
    darkroom: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    domain = load_domain(darkroom)
    rel = _evidence({"Retoucher": {"scratches": 2.0}})
    assert _best(domain, rel, ["print", "poster"]) == (("print",), "poster")
    monkeypatch.setattr(interface, "ROLE_FIT", 0.0)
    assert _best(domain, rel, ["print", "poster"]) == (("print",), "print")


@pytest.mark.skipif(not encoder.available(), reason="the encoder is not installed")
def test_the_plan_says_why_in_json_and_explain(darkroom: Path, fllm_inproc: InProc) -> None:
    # (Not "... from the prints": the learned role reader then reads a print as given too, and
    # whether film or print wins turns on its weights, not on what this test checks.) The
    # learned tool reader stays on: it knows a three-tool domain's tools are each likely, so
    # it no longer doubts the developing step the request implies (docs/search.md).
    request = "Here is my exposed film roll; remove the dust spots."
    result = fllm_inproc("plan", str(darkroom), request, "--explain", "--format", "json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    reading = doc["why"]["interface"]
    assert "film" in reading["types_named"] and reading["only_given"] == ["film"]
    assert set(dict(doc["inputs"]).values()) == {"film"}
    assert "film is named and can only be an input" in " ".join(result.err.split())
    checked = run_fllm("verify", str(darkroom), "-", stdin=result.out)
    assert checked.code == 0, checked.err
