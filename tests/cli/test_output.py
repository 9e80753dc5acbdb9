"""Output for people and for pipes, through the real entry point.

On a terminal a model run shows live progress on stderr; in a pipe nothing but results and
errors appear, tables and trees keep their natural width, ``--quiet`` silences everything but
errors, colour follows NO_COLOR / FORCE_COLOR, and a spent time budget ends cleanly (exit 3).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_fllm, run_fllm_on_terminal
from tests.stub_server import StubServer

OPENAGI = str(ROOT / "domains" / "openagi.yaml")
TASKS = str(ROOT / "tests" / "data" / "openagi_tasks.jsonl")
COFFEE = str(ROOT / "domains" / "problems" / "coffee.yaml")
REACT = str(ROOT / "domains" / "agents" / "react.sexp")
LONG_TASK = (
    "Given a noisy grayscale image that was taken at night, how to return the caption "
    "in German step by step, keeping every detail of the scene?"
)
NARROW = {"COLUMNS": "40"}


@pytest.mark.slow
def test_bench_table_keeps_its_width_in_a_pipe() -> None:
    code, out, err = run_fllm(
        "bench", OPENAGI, TASKS, "--model", "random:1", "--limit", "3", env=NARROW
    )
    assert code == 0, err
    assert "…" not in out
    for header in ("strategy", "tasks", "% valid", "LLM calls", "backtracks", "s/task"):
        assert header in out
    assert err == ""  # no progress bar off a terminal


@pytest.mark.slow
def test_plan_tree_is_not_wrapped_in_a_pipe() -> None:
    args = ["plan", OPENAGI, LONG_TASK, "-i", "image", "--output", "text", "--model", "random:3"]
    code, out, err = run_fllm(*args, env=NARROW)
    assert code == 0, err
    assert f"Plan for: {LONG_TASK}" in out.splitlines()[0]
    assert any(len(line) > 40 for line in out.splitlines())
    assert "…" not in out


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(
            ["bench", OPENAGI, TASKS, "--model", "random:1", "--limit", "2"], marks=pytest.mark.slow
        ),
        pytest.param(
            ["plan", OPENAGI, "t", "-i", "image", "--output", "text", "--model", "random:1"],
            marks=pytest.mark.slow,
        ),
        ["agent", REACT, "What is 2 plus 2?", "--model", "random:1"],
        ["validate", OPENAGI],
    ],
    ids=lambda a: a[0],
)
def test_quiet_prints_nothing_but_writes_the_file(args: list[str], tmp_path: Path) -> None:
    if args[0] == "agent":  # a model that answers: an agent without an answer exits 1
        script = tmp_path / "answers.txt"
        script.write_text("Compute it.\n1\n2 + 2\n2\nThat is 4.\n4\n", encoding="utf-8")
        args = [*args[:-1], f"scripted:{script}"]
    target = tmp_path / "result.out"
    code, out, err = run_fllm(*args, "--quiet", "-o", str(target))
    assert code == 0, err
    assert target.stat().st_size > 0
    assert out == "" and err == ""


def test_an_agent_without_an_answer_exits_1_but_keeps_its_output(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    # the ablated ReAct writes its answer as free text, which the random chooser never does
    ablated = str(ROOT / "domains" / "agents" / "react_ablation.sexp")
    args = ["agent", ablated, "What is 2 plus 2?", "--model", "random:1", "-q", "-o", str(target)]
    code, out, err = run_fllm(*args)
    assert code == 1 and out == ""
    assert "without an answer" in err and len(err.strip().splitlines()) == 1
    assert json.loads(target.read_text())["answer"] in (None, "")


def test_quiet_still_reports_errors() -> None:
    code, out, err = run_fllm(
        "plan", OPENAGI, "t", "--model", "random:1", "-q", "-i", "imgae", "--output", "text"
    )
    assert code != 0 and out == ""
    assert "unknown modality 'imgae'" in err


def test_colour_follows_force_color_and_no_color() -> None:
    args = ["render-pda", OPENAGI, "-i", "image", "--output", "text"]
    forced = run_fllm(*args, unset=("NO_COLOR",), env={"FORCE_COLOR": "1"}, timeout=120)
    assert forced.code == 0 and "\x1b[" in forced.out
    plain = run_fllm(*args, unset=("FORCE_COLOR",), env={"NO_COLOR": "1"}, timeout=120)
    assert plain.code == 0 and "\x1b[" not in plain.out
    piped = run_fllm(*args, unset=("FORCE_COLOR", "NO_COLOR"), timeout=120)
    assert piped.code == 0 and "\x1b[" not in piped.out


# --- a slow model server (tests/stub_server.py), for progress and time budgets ---------------


@pytest.fixture
def slow_server(stub_server: StubServer) -> str:
    """The stub's base URL; every reply takes 0.8 s and says nothing useful."""
    stub_server.play(then="slow:0.8:I am still thinking.")
    return stub_server.base


def _solve_args(base: str, trace: Path) -> list[str]:
    return [
        "solve", COFFEE, "What if demand at cafe1 rose by 10%?",
        "--model", "openai/stub", "--api-base", base, "--no-cache", "--retries", "0",
        "--max-seconds", "2", "--trace", str(trace),
    ]  # fmt: skip


@pytest.mark.slow
def test_solve_time_budget_stops_cleanly_with_the_stage(slow_server: str, tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    code, out, err = run_fllm(*_solve_args(slow_server, trace), env={"OPENAI_API_KEY": "x"})
    assert code == 3, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "stopped after" in lines[0] and "in stage" not in out
    assert "stage '" in lines[0] and "--max-seconds" in lines[0]
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    assert records and all(r["type"] == "generate" for r in records)


@pytest.mark.slow
def test_progress_is_shown_on_a_terminal_only(slow_server: str, tmp_path: Path) -> None:
    args = _solve_args(slow_server, tmp_path / "t.jsonl")
    code, shown, _ = run_fllm_on_terminal(
        *args, columns=120, stdout_too=False, env={"OPENAI_API_KEY": "x"}
    )
    assert code == 3
    assert "solving" in shown and "model calls" in shown and "tokens" in shown
    assert "definer" in shown  # the stage the run was in


@pytest.mark.slow
def test_bench_summary_on_a_narrow_terminal_cuts_nothing() -> None:
    bench = ["bench", OPENAGI, TASKS, "--model", "random:1", "--limit", "5"]
    shown = run_fllm_on_terminal(*bench, columns=60).out
    summary = shown[shown.index("fllm bench:") :]  # after the (transient) progress bar
    assert "…" not in summary
    assert "% valid: 100.0" in shown and "p95 s:" in shown
    wide = run_fllm_on_terminal(*bench, columns=200).out
    assert "% valid" in wide and "p95 s" in wide and "% valid:" not in wide
