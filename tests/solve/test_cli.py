"""The commands, driven by a replayed trace (no model, no network)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import InProc

from .scripts import DEFINITION, FORMULATION, MC, assessment, code, formatted

PROBLEMS = Path(__file__).resolve().parents[2] / "domains" / "problems"
QUERY = "What would happen if cafe1 experienced a 23% rise in demand for light coffee?"


def replies_trace(path: Path) -> None:
    replies = [
        DEFINITION,
        FORMULATION,
        code("coffee"),
        formatted({"total_cost": 2520}),
        assessment(MC),
    ]
    path.write_text("".join(json.dumps({"type": "generate", "reply": r}) + "\n" for r in replies))


def test_solve_command_writes_result_and_trace(tmp_path: Path, fllm_inproc: InProc) -> None:
    replies_trace(tmp_path / "replies.jsonl")
    out, trace = tmp_path / "out.json", tmp_path / "trace.jsonl"
    code_, stdout, _ = fllm_inproc(
        "solve",
        str(PROBLEMS / "coffee.yaml"),
        QUERY,
        "--model",
        f"replay:{tmp_path / 'replies.jsonl'}",
        "-o",
        str(out),
        "--trace",
        str(trace),
        "--code-timeout",
        "8",
    )
    assert code_ == 0
    result = json.loads(out.read_text())
    assert result["objective"] == 2520 and result["accepted"]
    stages = [json.loads(line)["kind"] for line in trace.read_text().splitlines()]
    assert stages == ["definer", "formulator", "codegen", "execute", "formatter", "assess"]
    assert "status: sat  objective: 2520" in stdout


def test_solve_bench_scores_the_query(tmp_path: Path, fllm_inproc: InProc) -> None:
    replies_trace(tmp_path / "replies.jsonl")
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"questions": [{"QUESTION": QUERY, "GT EXEC RESULT": 2520.0}]}))
    report = tmp_path / "report.json"
    code_, stdout, _ = fllm_inproc(
        "solve-bench",
        str(PROBLEMS / "coffee.yaml"),
        str(bench),
        "--model",
        f"replay:{tmp_path / 'replies.jsonl'}",
        "-o",
        str(report),
        "--code-timeout",
        "8",
    )
    assert code_ == 0
    data = json.loads(report.read_text())
    assert (data["optimal"], data["success"], data["queries"]) == (1, 1, 1)
    assert "optimal 1/1 (100.0%)" in stdout


def test_bad_problem_file_is_one_line_error(tmp_path: Path, fllm_inproc: InProc) -> None:
    bad = tmp_path / "p.yaml"
    bad.write_text("problem:\n  name: x\n  kind: other\n  description: d\n")
    code_, _, err = fllm_inproc("solve", str(bad), "q", "--model", "random")
    assert code_ != 0
    assert "p.yaml:3:9" in err and "Traceback" not in err


def test_score_rules() -> None:
    from fllm_cli.solve.bench import Item, score

    assert score(Item(0, "q", None), {"status": "unsat"}, 1e-4) == (True, True)
    assert score(Item(0, "q", 10.0), {"status": "sat", "objective": 11}, 1e-4) == (False, True)
    plan_item = Item(0, "q", None, optimal_length=4)
    assert score(plan_item, {"plan_check": {"valid": True, "length": 6}}, 0) == (False, True)


def test_solve_without_a_solver_result_exits_1_and_keeps_a_partial_result(
    tmp_path: Path, fllm_inproc: InProc
) -> None:
    nothing = "```python\nprint('no solver here')\n```"
    replies = [DEFINITION, FORMULATION, nothing, assessment(MC)]
    trace = tmp_path / "replies.jsonl"
    trace.write_text("".join(json.dumps({"type": "generate", "reply": r}) + "\n" for r in replies))
    out = tmp_path / "out.json"
    argv = ["solve", str(PROBLEMS / "coffee.yaml"), QUERY, "--model", f"replay:{trace}"]
    code_, _, err = fllm_inproc(*argv, "--max-rounds", "1", "-o", str(out), "--code-timeout", "8")
    assert code_ == 1
    result = json.loads(out.read_text())
    assert result["partial"] and not result["accepted"]
    last = err.strip().splitlines()[-1]
    assert last.startswith("error:") and "without an accepted solver result" in last
