"""The agent and check-trace commands: exit codes, output formats, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import InProc

ROOT = Path(__file__).resolve().parents[2]
REACT = str(ROOT / "domains" / "agents" / "react.sexp")
EXAMPLES = str(ROOT / "prompts" / "react_examples.txt")


def test_shipped_examples_pass_check_trace(fllm_inproc: InProc) -> None:
    code, out, _ = fllm_inproc(
        "check-trace", REACT, EXAMPLES, "--tools", "calculator,search,lookup"
    )
    assert code == 0 and "all examples follow the spec" in out


def test_check_trace_reports_the_first_violation(tmp_path: Path, fllm_inproc: InProc) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text(
        "Question: q\nThought: t\nAction: calculator\nObservation: 3\nFinal Thought: f\nAnswer: 3\n"
    )
    code, out, _ = fllm_inproc("check-trace", REACT, str(bad))
    assert code == 1
    assert (
        f"{bad}:4: example 1: 'Observation:' is not allowed here; allowed here: Action Input:"
        in out
    )


def test_check_trace_reports_an_unfinished_trace_and_bad_content(
    tmp_path: Path, fllm_inproc: InProc
) -> None:
    f = tmp_path / "t.txt"
    f.write_text(
        "Question: a\nThought: t\nAction: hammer\n\nQuestion: b\nThought: t\nAction: calculator\n"
    )
    code, out, _ = fllm_inproc("check-trace", REACT, str(f), "--tools", "calculator", "-f", "json")
    data = json.loads(out)
    assert code == 1 and not data["ok"]
    first, second = data["examples"]
    assert (
        first["violation"]["line"] == 3
        and "must be one of [calculator]" in first["violation"]["message"]
    )
    assert second["violation"]["line"] == 7 and second["violation"]["allowed"] == ["Action Input:"]


def test_agent_transcript_round_trips_through_check_trace(
    tmp_path: Path, fllm_inproc: InProc
) -> None:
    code, out, _ = fllm_inproc(
        "agent",
        REACT,
        "What is 2+2?",
        "--model",
        "random:7",
        "--max-loops",
        "2",
        "--format",
        "transcript",
    )
    # The random chooser writes no text of its own: the calculator's input and the grounded
    # answer are built in their languages by its choices, so the run finishes with an answer
    # taken from the last observation.
    assert code == 0 and out.startswith("Question: What is 2+2?\nThought:")
    observed = [x for x in out.splitlines() if x.startswith("Observation:")][-1]
    answer = [x for x in out.splitlines() if x.startswith("Answer:")][-1]
    assert answer.removeprefix("Answer:").strip() in observed
    f = tmp_path / "run.txt"
    f.write_text(out)
    code, out, _ = fllm_inproc("check-trace", REACT, str(f))
    assert code == 0


def test_agent_json_and_trace(tmp_path: Path, fllm_inproc: InProc) -> None:
    script = tmp_path / "s.txt"
    script.write_text("Compute it.\n1\n0.17 * 240 + 12\n2\nThat is 52.8.\n52.8\n")
    trace = tmp_path / "trace.jsonl"
    code, out, _ = fllm_inproc(
        "agent",
        REACT,
        "What is 17% of 240, plus 12?",
        "--model",
        f"scripted:{script}",
        "--format",
        "json",
        "--trace",
        str(trace),
    )
    data = json.loads(out)
    assert code == 0 and data["answer"] == "52.8" and data["reached_final"]
    assert [s["source"] for s in data["steps"]] == [
        "model",
        "choice",
        "model",
        "env",
        "model",
        "model",
    ]
    assert data["steps"][3]["text"] == "52.8"
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert {e["type"] for e in events} == {"generate", "choice", "event"}
    assert {e["event"] for e in events if e["type"] == "event"} == {"step", "env", "run"}
    calls = [e for e in events if e["type"] != "event"]
    assert all({"kind", "prompt", "reply", "usage", "latency"} <= e.keys() for e in calls)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["agent", "nope.sexp", "q"], "no such agent spec: 'nope.sexp'"),
        (
            ["agent", REACT, "q", "--tools", "calculater"],
            "unknown tool 'calculater' (did you mean 'calculator'?)",
        ),
        (["agent", REACT, "q", "--format", "xml"], "unknown --format 'xml'"),
        (["agent", REACT], "needs a QUESTION"),
        (["check-trace", REACT, "missing.txt"], "no such file: 'missing.txt'"),
        (
            ["agent", REACT, "q", "--answer", "(a"],
            "--answer: regex, line 1 column 3: missing ')'",
        ),
        (
            ["agent", REACT, "q", "--answer", "gbnf@missing.gbnf"],
            "no such --answer file: 'missing.gbnf'",
        ),
        (
            ["check-trace", REACT, EXAMPLES, "--answer", "[z-a]"],
            "--answer: regex, line 1 column 5: bad range z-a",
        ),
    ],
)
def test_bad_input_is_one_line(args: list[str], message: str, fllm_inproc: InProc) -> None:
    code, _, err = fllm_inproc(*args)
    assert code != 0 and message in " ".join(err.split()) and "Traceback" not in err


def test_bad_language_in_a_spec_is_a_located_spec_error(
    tmp_path: Path, fllm_inproc: InProc
) -> None:
    spec = tmp_path / "a.sexp"
    spec.write_text(
        '(define a\n  (:states (A (:text "A:") (:language (:gbnf "root ::= x"))))\n'
        "  (:behavior A))\n"
    )
    code, _, err = fllm_inproc("agent", str(spec), "q", "--model", "random")
    assert code == 1 and "Traceback" not in err  # a spec error, like every other one
    assert f"{spec}:2:" in err and "undefined rule 'x'" in err


def test_agent_answer_language_and_check_trace_agree(tmp_path: Path, fllm_inproc: InProc) -> None:
    script = tmp_path / "s.txt"
    # The first Action Input and the first answer are outside their languages: asked again.
    script.write_text(
        "Compute it.\n1\n17% of 240 plus 12\n0.17 * 240 + 12\n2\nThat is 52.8.\nIt is 52.8\n52.8\n"
    )
    code, out, _ = fllm_inproc(
        "agent",
        REACT,
        "What is 17% of 240, plus 12?",
        "--model",
        f"scripted:{script}",
        "--answer",
        "number",
        "--format",
        "json",
    )
    data = json.loads(out)
    assert code == 0 and data["answer"] == "52.8"
    assert data["steps"][2]["text"] == "0.17 * 240 + 12" and data["steps"][3]["text"] == "52.8"
    run = tmp_path / "run.txt"
    code, out, _ = fllm_inproc(
        "agent",
        REACT,
        "What is 17% of 240, plus 12?",
        "--model",
        f"scripted:{script}",
        "--answer",
        "number",
        "--format",
        "transcript",
    )
    run.write_text(out)
    args = ["check-trace", REACT, str(run), "--tools", "calculator", "--answer", "number"]
    code, out, _ = fllm_inproc(*args)
    assert code == 0, out
    run.write_text(run.read_text().replace("Answer: 52.8", "Answer: It is 52.8"))
    code, out, _ = fllm_inproc(*args)
    assert code == 1 and "is not a number such as 52.8" in " ".join(out.split())


def test_check_trace_names_a_step_outside_its_language(tmp_path: Path, fllm_inproc: InProc) -> None:
    f = tmp_path / "t.txt"
    f.write_text(
        "Question: q\nThought: t\nAction: calculator\nAction Input: 17% of 240\n"
        "Observation: 40.8\nFinal Thought: f\nAnswer: 40.8\n"
    )
    code, out, _ = fllm_inproc("check-trace", REACT, str(f), "--tools", "calculator")
    assert code == 1
    flat = " ".join(out.split())
    assert f"{f}:4: example 1: the text of 'Action Input:' is not an arithmetic expression" in flat
    code, out, _ = fllm_inproc("check-trace", REACT, str(f))  # no --tools: order only
    assert code == 0


def test_check_trace_applies_the_input_language_a_module_tool_declares(
    tmp_path: Path, fllm_inproc: InProc
) -> None:
    trace = (
        "Question: q\nThought: t\nAction: square\nAction Input: {x}\nObservation: 25\n"
        "Final Thought: done\nAnswer: 25\n"
    )
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_text(trace.format(x="5"))
    bad.write_text(trace.format(x="five"))
    args = ("--tools", "square", "--tool-module", "tests.ltl.sample_tools", "-f", "json")
    code, out, err = fllm_inproc("check-trace", REACT, str(good), *args)
    assert code == 0, out + err
    code, out, _ = fllm_inproc("check-trace", REACT, str(bad), *args)
    violation = json.loads(out)["examples"][0]["violation"]
    assert code == 1 and violation["line"] == 4 and "whole number" in violation["message"]
    # Without --tools, every tool of the module brings its language.
    code, _, _ = fllm_inproc("check-trace", REACT, str(bad), *args[2:])
    assert code == 1
    # Without the module the tool's language is unknown, and the input is not checked.
    code, _, _ = fllm_inproc("check-trace", REACT, str(bad), "--tools", "square", "-f", "json")
    assert code == 0


def test_a_random_agent_run_replays_byte_for_byte(tmp_path: Path, fllm_inproc: InProc) -> None:
    """The random chooser builds the calculator input and the grounded answer by choices; the
    trace of those choices replays the same transcript, which check-trace accepts."""
    trace = tmp_path / "run.jsonl"
    question = "What is 2 plus 2?"
    common = ("agent", REACT, question, "--tools", "calculator", "--format", "transcript")
    code, first, err = fllm_inproc(*common, "--model", "random:3", "--trace", str(trace))
    assert code == 0, err
    code, second, err = fllm_inproc(*common, "--model", f"replay:{trace}")
    assert code == 0, err
    assert second == first
    run = tmp_path / "run.txt"
    run.write_text(first)
    code, out, _ = fllm_inproc("check-trace", REACT, str(run), "--tools", "calculator")
    assert code == 0 and "all examples follow the spec" in out
