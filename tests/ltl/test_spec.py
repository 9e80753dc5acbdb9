"""Reading agent specs: the paper's figures as printed, the YAML form, located diagnostics."""

from __future__ import annotations

from pathlib import Path

import pytest

from fllm_cli.errors import SpecError
from fllm_cli.ltl import is_agent_spec, render_agent_automaton, validate_agent_spec
from fllm_cli.ltl.automaton import compile_spec
from fllm_cli.ltl.formula import to_sexp
from fllm_cli.ltl.spec import load_spec, parse_spec

ROOT = Path(__file__).resolve().parents[2]
AGENTS = ROOT / "domains" / "agents"
FIGURES = Path(__file__).parent / "data" / "figures"
SHIPPED = sorted(p for p in AGENTS.iterdir() if p.suffix in (".sexp", ".yaml"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_specs_are_clean(path: Path) -> None:
    assert is_agent_spec(str(path))
    assert validate_agent_spec(str(path)) == []
    assert not compile_spec(load_spec(str(path))).empty


def test_figure_3_as_printed_gives_the_react_automaton() -> None:
    spec = load_spec(str(FIGURES / "fig3_as_printed.sexp"))
    assert (spec.start, spec.final) == ("Thought", "Answer")
    assert spec.state("Observation").env_input
    dfa = compile_spec(spec)
    assert dfa.accepts(
        ["Thought", "Action", "Action-Input", "Observation", "Final-Thought", "Answer"]
    )
    assert not dfa.accepts(["Thought", "Action", "Observation", "Final-Thought", "Answer"])


def test_figure_4b_as_printed_loads_with_located_warnings() -> None:
    path = str(FIGURES / "fig4b_as_printed.sexp")
    diags = validate_agent_spec(path)
    assert diags and all(d.severity == "warning" for d in diags)
    assert (
        diags[0]
        .header()
        .startswith(f"{path}:4:42: warning: (:flags ...) after state 'Observation'")
    )
    spec = load_spec(path)
    assert spec.names == ("Thought", "Observation", "Final-Thought")
    assert spec.state("Observation").env_input
    assert to_sexp(spec.behavior) == "(until (next Thought Observation) Final-Thought)"
    shipped = load_spec(str(AGENTS / "react_ablation.sexp"))
    assert compile_spec(spec).delta == compile_spec(shipped).delta


def test_figure_11_as_printed_matches_the_shipped_reflexion() -> None:
    diags = validate_agent_spec(str(FIGURES / "fig11_as_printed.sexp"))
    assert [d.severity for d in diags] == ["warning"]
    assert "extra ')'" in diags[0].message and diags[0].location is not None
    assert diags[0].location.line == 25
    printed = load_spec(str(FIGURES / "fig11_as_printed.sexp"))
    shipped = load_spec(str(AGENTS / "reflexion.sexp"))
    assert printed.behavior == shipped.behavior


def test_yaml_and_sexp_forms_compile_to_the_same_automaton() -> None:
    a = load_spec(str(AGENTS / "react.sexp"))
    b = load_spec(str(AGENTS / "react.yaml"))
    assert a.behavior == b.behavior and a.states[0].text == b.states[0].text
    assert compile_spec(a) == compile_spec(b)


def test_errors_are_collected_with_locations_and_hints() -> None:
    path = str(FIGURES / "bad.sexp")
    headers = [d.header() for d in validate_agent_spec(path)]
    assert f"{path}:4:10: error: unknown state property ':txt' (did you mean ':text'?)" in headers
    assert any(":5:39: error: unknown flag :env-inptu" in h for h in headers)
    assert any(":8:5: error: unknown operator 'nxet' (did you mean 'next'?)" in h for h in headers)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert info.value.location is not None and info.value.location.line == 4


@pytest.mark.parametrize(
    ("text", "message", "needle"),
    [
        (
            '(define a (:states (X (:text "X:"))) (:behavior (next X Y)))',
            "unknown state 'Y'",
            "Y)))",
        ),
        (
            '(define a (:states (X (:text "X:"))) (:behavior (until X)))',
            "'until' takes 2",
            "(until",
        ),
        (
            '(define a (:states (X (:text "X:")) (Y (:text "X:"))) (:behavior X))',
            "share the tag",
            "(Y ",
        ),
        ('(define a (:states (X (:text "X:"))) (:behavior (next X X))', "never closed", "(define"),
        (
            '(define a (:states (X (:text "X:") (:flags :env-input) (:choices "p")))'
            " (:behavior X))",
            "cannot have :choices",
            "(X ",
        ),
        (
            '(define a (:states (X (:text "X:"))) (:behavior X) (:final Z))',
            "unknown final state 'Z'",
            "Z)",
        ),
    ],
)
def test_sexp_mistakes(text: str, message: str, needle: str) -> None:
    spec, diags = parse_spec(text, "x.sexp")
    errors = [d for d in diags if d.severity == "error"]
    assert spec is None and errors
    hit = next(d for d in errors if message in d.message)
    assert hit.location is not None
    assert (hit.location.line, hit.location.col) == (1, text.index(needle) + 1)


def test_yaml_mistakes_are_located() -> None:
    text = "agent:\n  states:\n    A: {text: 'A:', env_input: true}\n  behavior: [nxt, A]\n"
    spec, diags = parse_spec(text, "x.yaml")
    assert spec is None
    headers = [d.header() for d in diags]
    assert any(h.startswith("x.yaml:3:") and "unknown key 'env_input'" in h for h in headers)
    assert any(h.startswith("x.yaml:4:") and "unknown operator 'nxt'" in h for h in headers)


def test_empty_behaviour_is_an_error(tmp_path: Path) -> None:
    f = tmp_path / "e.sexp"
    f.write_text(
        '(define e (:states (A (:text "A:")) (B (:text "B:"))) (:behavior (next A B)) (:final A))'
    )
    diags = validate_agent_spec(str(f))
    assert [d.severity for d in diags] == ["error"] and "admits no run" in diags[0].message


def test_renderings_show_the_react_loop() -> None:
    path = str(AGENTS / "react.sexp")
    mermaid = render_agent_automaton(path, "mermaid")
    assert "n4 --> n1 : Thought" in mermaid and "n4 --> n5 : Final-Thought" in mermaid
    dot = render_agent_automaton(path, "dot")
    assert "doublecircle" in dot and 'label="Observation:", style=dashed' in dot
    table = render_agent_automaton(path, "table")
    assert "Thought: → 1, Final Thought: → 5" in table
    import json

    data = json.loads(render_agent_automaton(path, "json"))
    assert data["start"] == "Thought" and data["final"] == "Answer" and len(data["nodes"]) == 7
