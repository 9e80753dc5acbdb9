"""Diagnostics for broken automaton specs: one located message per problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from fllm_cli.cli.core import diagnose

HEAD = """\
fllm: 1
name: broken
kind: automaton
automaton:
  start: s0
  accept: [done]
  stack: {alphabet: [Z], initial: Z}
  states:
    - s0
    - done
    - for: {k: {from: 1, to: 3}}
      name: "h{{ k }}"
  transitions:
"""


def diagnostics(tmp_path: Path, transitions: str) -> list[str]:
    spec = tmp_path / "broken.yaml"
    spec.write_text(HEAD + transitions, encoding="utf-8")
    diags, _ = diagnose(str(spec))
    return [d.header().replace(str(spec), "broken.yaml") for d in diags if d.severity == "error"]


@pytest.mark.parametrize(
    ("transitions", "expected"),
    [
        (
            "    - {from: s0, to: dnoe, input: x}\n",
            "broken.yaml:14:7: error: transition target 'dnoe' is not a declared state "
            "(did you mean 'done'?)",
        ),
        (
            "    - {from: s0, to: done, input: x, pop: Z, push: Y Z}\n",
            "broken.yaml:14:7: error: undefined stack symbol 'Y'",
        ),
        (
            "    - for: {k: {from: 1, to: 3}}\n      from: 'h{{ k }}'\n      to: 'h{{ k + 1 }}'\n",
            "broken.yaml:14:7: error: transition target 'h4' is not a declared state",
        ),
        (
            "    - for: {k: 'range(1, 4'}\n      from: s0\n      to: done\n",
            "broken.yaml:14:16: error: bad family expression: cannot evaluate 'range(1, 4'",
        ),
        (
            "    - for: {k: [1, 2]}\n      when: 'k >'\n      from: s0\n      to: done\n",
            "broken.yaml:15:13: error: bad family expression: cannot evaluate 'k >'",
        ),
        (
            "    - {from: s0, to: done, input: x, option: '{{ sellr }}'}\n",
            "broken.yaml:14:46: error: option uses undefined variable 'sellr'",
        ),
        (
            "    - {from: s0, to: done, input: x, count: uses}\n",
            "broken.yaml:14:7: error: undefined counter 'uses'",
        ),
    ],
)
def test_broken_automaton_is_reported_with_a_location(
    tmp_path: Path, transitions: str, expected: str
) -> None:
    errors = diagnostics(tmp_path, transitions)
    assert any(e.startswith(expected) for e in errors), errors


def test_no_accepted_word_is_an_error(tmp_path: Path) -> None:
    errors = diagnostics(tmp_path, "    - {from: s0, to: h1, input: x}\n")
    assert any("the automaton accepts no word" in e for e in errors), errors
