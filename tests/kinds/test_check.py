"""``check_domain``: the shipped domains are clean; each kind's analyses name what is wrong and
where (file, line, column of the part of the spec at fault)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fllm_cli.diagnostics import Diagnostic
from fllm_cli.domain.load import read_domain
from fllm_cli.kinds import check_domain
from tests.conftest import BROKEN, ROOT, SPECS

SHIPPED = sorted(
    p
    for p in [
        *ROOT.glob("domains/*.yaml"),
        *ROOT.glob("domains/examples/*.yaml"),
        SPECS / "anbn.yaml",
    ]
    if not p.name.endswith(".bind.yaml")  # a binding file, not a domain
)


def _check(path: Path) -> list[Diagnostic]:
    domain, diagnostics = read_domain(path)
    assert domain is not None and diagnostics == [], diagnostics  # the structure is sound
    return check_domain(domain)


def _where(diagnostic: Diagnostic) -> tuple[int, int]:
    assert diagnostic.location is not None, diagnostic
    return diagnostic.location.line, diagnostic.location.col


def test_there_is_a_shipped_domain_of_every_kind() -> None:
    kinds = {read_domain(p)[0].kind for p in SHIPPED}  # type: ignore[union-attr]
    assert kinds == {"tools", "grammar", "automaton", "data"}


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_domains_have_no_errors(path: Path) -> None:
    errors = [d.header() for d in _check(path) if d.severity == "error"]
    assert errors == []


def test_tools_no_plan_for_the_interface() -> None:
    path = BROKEN / "no_plan.yaml"
    found = {(d.severity, d.message, _where(d)) for d in _check(path)}
    assert found == {
        ("error", "no plan exists for any task of the task interface", (12, 3)),
        ("warning", "no plan can produce an image output from text inputs", (12, 3)),
    }
    assert all(d.location and d.location.path == str(path) for d in _check(path))


def test_tools_a_tool_no_plan_can_use_is_a_warning_at_the_tool() -> None:
    (only,) = _check(BROKEN / "never_tool.yaml")
    assert only.severity == "warning"
    assert only.message == "tool 'Transcription' can never occur in a plan of the task interface"
    assert _where(only) == (8, 5)  # the tool's entry in the list


def test_grammar_limits_that_leave_no_word() -> None:
    (only,) = _check(BROKEN / "limits_unsatisfiable.yaml")
    assert (only.severity, only.message, _where(only)) == (
        "error", "no word satisfies the use limits", (5, 3),
    )  # fmt: skip


def test_grammar_unproductive_and_unused_symbols(tmp_path: Path) -> None:
    path = tmp_path / "loops.yaml"
    path.write_text(
        "fllm: 1\nname: loops\nkind: grammar\ngrammar:\n  start: S\n"
        "  nonterminals:\n    S: a start\n    L: a loop\n"
        "  terminals:\n    a: the letter a\n    z: never used\n"
        '  productions:\n    S: "a | L"\n    L: "a L"\n',
        encoding="utf-8",
    )
    found = {(d.severity, d.message, _where(d)) for d in _check(path)}
    assert found == {
        ("warning", "nonterminal 'L' derives no terminal word (unproductive)", (8, 5)),
        ("warning", "terminal 'z' is never used", (11, 5)),
    }


AUTOMATON = """\
fllm: 1
name: stuck
kind: automaton
automaton:
  start: open
  accept: [done]
  stack: {alphabet: [Z], initial: Z}
  states:
    - name: open
      question: "What first?"
    - name: middle
      question: "What next?"
    - done
    - name: island
      question: "Never asked?"
  transitions:
    - {from: open, to: middle, input: start, option: "Start."}
    - {from: middle, to: open, input: back, option: "Back."}
"""


def test_automaton_that_accepts_nothing_and_unreachable_states(tmp_path: Path) -> None:
    path = tmp_path / "stuck.yaml"
    path.write_text(AUTOMATON, encoding="utf-8")
    found = [(d.severity, d.message, _where(d)) for d in _check(path)]
    assert found == [
        ("error", "the automaton accepts no word", (5, 3)),
        ("warning", "state 'done' is unreachable", (13, 7)),
        ("warning", "state 'island' is unreachable", (14, 13)),
    ]


def test_data_a_rule_naming_an_unknown_slot(tmp_path: Path) -> None:
    text = (ROOT / "domains" / "examples" / "conference_trip.yaml").read_text(encoding="utf-8")
    assert text.count("different: [lunch, dinner]") == 1
    path = tmp_path / "trip.yaml"
    path.write_text(text.replace("different: [lunch, dinner]", "different: [lunch, supper]"))
    (only,) = _check(path)
    assert (only.severity, only.message) == ("error", "constraint 'different': no slot 'supper'")
    line, _ = _where(only)
    assert "supper" in path.read_text().splitlines()[line - 1]
