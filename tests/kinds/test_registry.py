"""The kind registry: ``KINDS`` names every kind, ``kind_of`` finds a domain's implementation."""

from __future__ import annotations

import importlib
from dataclasses import replace

import pytest

from fllm_cli.domain.load import load_domain
from fllm_cli.errors import UsageError
from fllm_cli.kinds import KINDS, Kind, kind_of
from tests.conftest import ROOT, SPECS

# One shipped domain of each kind.
SAMPLES = {
    "tools": ROOT / "domains" / "examples" / "textbox.yaml",
    "grammar": SPECS / "anbn.yaml",
    "automaton": ROOT / "domains" / "examples" / "study_day.yaml",
    "data": ROOT / "domains" / "examples" / "conference_trip.yaml",
}


def test_the_registry_names_the_four_kinds() -> None:
    assert set(KINDS) == {"tools", "grammar", "automaton", "data"} == set(SAMPLES)


@pytest.mark.parametrize("name", sorted(KINDS))
def test_each_entry_names_a_kind_class_of_that_name(name: str) -> None:
    module, _, cls = KINDS[name].implementation.partition(":")
    kind = getattr(importlib.import_module(module), cls)
    assert issubclass(kind, Kind)
    assert kind.name == name


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_kind_of_returns_the_domains_kind_once_made(name: str) -> None:
    domain = load_domain(SAMPLES[name])
    assert domain.kind == name
    kind = kind_of(domain)
    assert isinstance(kind, Kind) and kind.name == name
    # One instance per kind, however many domains ask.
    assert kind_of(load_domain(SAMPLES[name])) is kind


def test_kinds_say_what_a_task_brings() -> None:
    kinds = {name: kind_of(load_domain(path)) for name, path in SAMPLES.items()}
    assert [n for n, k in kinds.items() if k.has_interface] == ["tools"]
    assert [n for n, k in kinds.items() if k.takes_data] == ["data"]
    assert kinds["automaton"].name_with_article == "an automaton"
    assert kinds["grammar"].name_with_article == "a grammar"


def test_an_unknown_kind_is_a_usage_error() -> None:
    domain = replace(load_domain(SAMPLES["grammar"]), kind="recipe")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="unknown domain kind 'recipe'"):
        kind_of(domain)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_summary_names_the_domain(name: str) -> None:
    domain = load_domain(SAMPLES[name])
    summary = kind_of(domain).summary(domain)
    assert summary and "\n" not in summary
    if name != "data":  # the data kind describes its sections instead
        assert f"'{domain.name}'" in summary
