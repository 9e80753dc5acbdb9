"""One trace schema and one meter for every command.

Each command's ``--trace`` replays with ``--model replay:TRACE`` (same result, no model), and
``--max-cost`` stops every command that calls a model once a (fake, priced) model has spent it.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from fllm_cli.llm.meter import RunMeter
from fllm_cli.llm.simple import ScriptedModel
from fllm_cli.solve.pipeline import Settings, solve
from fllm_cli.solve.problem import load_problem
from fllm_cli.solve.sandbox import Limits
from tests.conftest import InProc
from tests.fake_backends import install_priced
from tests.solve.scripts import DEFINITION, FORMULATION, MC, assessment, code, formatted

ROOT = Path(__file__).resolve().parents[2]
REACT = str(ROOT / "domains" / "agents" / "react.sexp")
COFFEE = str(ROOT / "domains" / "problems" / "coffee.yaml")
QUERY = "What would happen if cafe1 experienced a 23% rise in demand for light coffee?"
TASK = "Given noisy grayscale image, how to return the caption in German step by step?"
AGENT_SCRIPT = "Compute it.\n1\n0.17 * 240 + 12\n2\nThat is 52.8.\n52.8\n"
CALL_FIELDS = {"type", "kind", "prompt", "reply", "usage", "latency", "cached", "calls"}


def read_trace(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def check_schema(records: list[dict[str, Any]]) -> None:
    for record in records:
        assert record["type"] in ("choice", "generate", "event"), record
        if record["type"] != "event":
            assert record.keys() >= CALL_FIELDS, record
        if record["type"] == "choice":
            assert {"options", "choice", "fallback"} <= record.keys()


# ---------------------------------------------------------------- record, then replay


def test_plan_trace_replays(tmp_path: Path, openagi: str, fllm_inproc: InProc):
    trace = tmp_path / "plan.jsonl"
    # No --input/--output and step-by-step search: the model is asked both questions and every
    # choice.
    args = ["plan", openagi, TASK, "-f", "json", "--search", "greedy"]
    code_, out, err = fllm_inproc(*args, "--model", "random:3", "--trace", str(trace))
    assert code_ == 0, err
    records = read_trace(trace)
    check_schema(records)
    assert {r["kind"] for r in records} == {"interface", "plan"}
    code_, again, err = fllm_inproc(*args, "--model", f"replay:{trace}")
    assert code_ == 0, err
    assert json.loads(again)["word"] == json.loads(out)["word"]


def test_agent_trace_replays_without_the_model(tmp_path: Path, fllm_inproc: InProc) -> None:
    script, trace = tmp_path / "s.txt", tmp_path / "agent.jsonl"
    script.write_text(AGENT_SCRIPT)
    question = "What is 17% of 240, plus 12?"
    base = ["agent", REACT, question, "-f", "json"]
    code_, out, err = fllm_inproc(*base, "--model", f"scripted:{script}", "--trace", str(trace))
    assert code_ == 0, err
    records = read_trace(trace)
    check_schema(records)
    assert {r["type"] for r in records} == {"generate", "choice", "event"}
    script.unlink()  # the scripted model could not answer any more
    code_, again, err = fllm_inproc(*base, "--model", f"replay:{trace}")
    assert code_ == 0, err
    first, second = json.loads(out), json.loads(again)
    assert second["steps"] == first["steps"] and second["answer"] == first["answer"] == "52.8"
    assert second["stats"]["llm_calls"] == 0
    # Another question changes the prompts: replay refuses and names the trace line.
    code_, _, err = fllm_inproc("agent", REACT, "Another question?", "--model", f"replay:{trace}")
    assert code_ == 1 and "different prompt" in err and f"{trace}:" in err


def test_solve_trace_replays(tmp_path: Path, fllm_inproc: InProc) -> None:
    scripted = ScriptedModel(
        [DEFINITION, FORMULATION, code("coffee"), formatted({"total_cost": 2520}), assessment(MC)]
    )
    meter = RunMeter(scripted)
    settings = Settings(limits=Limits(timeout=8))
    recorded = solve(load_problem(COFFEE), QUERY, meter, settings)
    assert recorded.objective == 2520 and recorded.accepted
    trace = tmp_path / "solve.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in meter.records))
    check_schema(meter.records)
    asked = len(scripted.prompts)
    out = tmp_path / "out.json"
    args = ["solve", COFFEE, QUERY, "--code-timeout", "8", "-o", str(out)]
    code_, _, err = fllm_inproc(*args, "--model", f"replay:{trace}")
    assert code_ == 0, err
    replayed = json.loads(out.read_text())
    assert (replayed["objective"], replayed["accepted"]) == (2520, True)
    assert replayed["solution"] == recorded.solution
    assert len(scripted.prompts) == asked  # the recording model was not asked again
    # Stats: each stage's model usage in the one shape, and the sandboxed runs apart.
    assert replayed["stats"]["execute"]["runs"] == replayed["runs"] >= 1
    stages = {k: v for k, v in recorded.stats.items() if k != "execute"}
    asked_per_stage = Counter(r["kind"] for r in meter.records if r["type"] == "generate")
    assert {k: v["llm_calls"] for k, v in stages.items()} == asked_per_stage
    assert replayed["stats"].keys() == recorded.stats.keys()
    assert all(
        {"cached", "fallbacks", "cost_usd", "model_seconds"} <= v.keys() for v in stages.values()
    )
    assert "call(s)" in err and "run(s)" in err  # the stats line on stderr
    code_, _, err = fllm_inproc(
        "solve", COFFEE, "Another query?", "--model", f"replay:{trace}", "--code-timeout", "8"
    )
    assert code_ == 1 and "different prompt" in err and f"{trace}:1:" in err


# ---------------------------------------------------------------- --max-cost everywhere


def replies_trace(path: Path) -> Path:
    replies = [
        DEFINITION,
        FORMULATION,
        code("coffee"),
        formatted({"total_cost": 2520}),
        assessment(MC),
    ]
    path.write_text("".join(json.dumps({"type": "generate", "reply": r}) + "\n" for r in replies))
    return path


def test_plan_max_cost(
    tmp_path: Path, openagi: str, monkeypatch: pytest.MonkeyPatch, fllm_inproc: InProc
) -> None:
    install_priced(monkeypatch)
    trace = tmp_path / "plan.jsonl"
    args = ["plan", openagi, TASK, "--input", "image", "--output", "text", "--search", "greedy"]
    assert fllm_inproc(*args, "--model", "random:3", "--trace", str(trace))[0] == 0
    assert len(read_trace(trace)) >= 3
    code_, _, err = fllm_inproc(*args, "--model", f"priced:{trace}", "--max-cost", "0.015")
    assert code_ == 1 and "cost budget" in err


def test_agent_max_cost_closes_the_run_validly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fllm_inproc: InProc
) -> None:
    install_priced(monkeypatch)
    script, trace = tmp_path / "s.txt", tmp_path / "agent.jsonl"
    script.write_text(AGENT_SCRIPT)
    base = ["agent", REACT, "What is 17% of 240, plus 12?", "-f", "json"]
    assert fllm_inproc(*base, "--model", f"scripted:{script}", "--trace", str(trace))[0] == 0
    code_, out, err = fllm_inproc(*base, "--model", f"priced:{trace}", "--max-cost", "0.015")
    # The run closes validly but gave no answer: the output is kept and the exit says so.
    assert code_ == 1 and "without an answer" in err and "max-cost" in err, err
    data = json.loads(out)
    assert data["reached_final"] and data["stats"]["budget_hit"] == "max-cost"
    assert data["stats"]["cost_usd"] == pytest.approx(0.02)


def test_solve_max_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fllm_inproc: InProc
) -> None:
    install_priced(monkeypatch)
    replies = replies_trace(tmp_path / "replies.jsonl")
    args = ["solve", COFFEE, QUERY, "--model", f"priced:{replies}", "--code-timeout", "8"]
    code_, _, err = fllm_inproc(*args, "--max-cost", "0.015")
    assert code_ == 1 and "cost budget" in err and "--max-cost" in err
    assert fllm_inproc(*args)[0] == 0  # without the ceiling the same run finishes


def test_solve_bench_max_cost_stops_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fllm_inproc: InProc
) -> None:
    install_priced(monkeypatch)
    replies = replies_trace(tmp_path / "replies.jsonl")
    bench = tmp_path / "bench.json"
    question = {"QUESTION": QUERY, "GT EXEC RESULT": 2520.0}
    bench.write_text(json.dumps({"questions": [question, question]}))
    report = tmp_path / "report.json"
    args = ["solve-bench", COFFEE, str(bench), "--model", f"priced:{replies}", "-o", str(report)]
    code_, _, err = fllm_inproc(*args, "--code-timeout", "8", "--max-cost", "0.015")
    assert code_ == 0, err
    data = json.loads(report.read_text())
    assert data["stopped"] == "max_cost" and data["partial"] and data["queries"] == 1
    assert "cost budget" in data["rows"][0]["result"]["error"]
    assert "--max-cost reached" in err
