"""A new domain kind is one module and one row: the toy kind of ``toy_kind.py`` is loaded,
checked and validated through the same loader, registry and command as the shipped kinds."""

from __future__ import annotations

from pathlib import Path

import pytest

from fllm_cli import api
from fllm_cli.domain.kinds import KINDS
from fllm_cli.domain.load import read_domain
from fllm_cli.errors import SpecError, UsageError
from fllm_cli.kinds import kind_of
from tests.conftest import InProc
from tests.domain import toy_kind


@pytest.fixture(autouse=True)
def toy_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one row; monkeypatch takes it out again after each test."""
    monkeypatch.setitem(KINDS, "toy", toy_kind.ROW)


def _write(tmp_path: Path, body: str) -> str:
    path = tmp_path / "toy.yaml"
    path.write_text("fllm: 1\nname: box\nkind: toy\n" + body, encoding="utf-8")
    return str(path)


def test_a_domain_of_the_new_kind_loads_and_checks(tmp_path: Path) -> None:
    path = _write(tmp_path, "toys: [ball, kite]\n")
    domain = api.load_domain(path)
    assert domain.kind == "toy"
    assert set(domain.sections) == {"toys"}
    assert isinstance(kind_of(domain), toy_kind.ToyKind)
    assert kind_of(domain).summary(domain) == "toy domain 'box': 2 toys"


def test_the_kind_reads_its_own_section_with_locations(tmp_path: Path) -> None:
    path = _write(tmp_path, "toys:\n  - ball\n  - [not, a, name]\n")
    with pytest.raises(SpecError) as exc:
        api.load_domain(path)
    [problem] = exc.value.diagnostics
    assert (
        f"{problem.location}: {problem.message}"
        == f"{path}:6:5: a toy must be a string, got sequence"
    )


def test_the_row_says_what_the_loader_checks(tmp_path: Path) -> None:
    missing = _write(tmp_path, "description: no toys\n")
    _, diagnostics = read_domain(missing)
    assert [d.header() for d in diagnostics] == [
        f"{missing}:1:1: error: a toy domain needs a 'toys' section"
    ]
    other = tmp_path / "tools.yaml"
    other.write_text("tools: [{name: T, inputs: [a], output: b}]\ntoys: [ball]\n")
    _, diagnostics = read_domain(other)
    assert [d.header() for d in diagnostics] == [
        f"{other}:2:7: error: 'toys' belongs to a toy domain (kind: toy)"
    ]


def test_an_unknown_kind_lists_the_new_one(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("kind: toyz\n")
    _, diagnostics = read_domain(path)
    assert diagnostics[0].message == (
        "kind must be 'tools', 'grammar', 'automaton', 'data' or 'toy', got 'toyz' "
        "(did you mean 'toy'?)"
    )


def test_fllm_validate_knows_the_new_kind(tmp_path: Path, fllm_inproc: InProc) -> None:
    path = _write(tmp_path, "toys: [ball]\n")
    result = fllm_inproc("validate", path)
    assert result.code == 0, result.out + result.err
    assert "toy domain 'box': 1 toys" in result.out


def test_the_new_kind_answers_through_the_kind_interface(tmp_path: Path) -> None:
    domain = api.load_domain(_write(tmp_path, "toys: [ball]\n"))
    with pytest.raises(UsageError, match="--input/--output do not apply"):
        kind_of(domain).compile(domain, "a task", ["x"], "y", {})
    with pytest.raises(UsageError, match="does not plan"):
        kind_of(domain).compile(domain, "a task", [], None, {})
