"""fllm run: plans carried out through bindings, checked, concurrent, re-planned on failure."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from fllm_cli import api
from fllm_cli.errors import UsageError
from fllm_cli.execute import Binding, Runner, read_bindings
from tests.conftest import run_fllm

ROOT = Path(__file__).resolve().parents[2]
TEXTBOX = ROOT / "domains" / "examples" / "textbox.yaml"
BIND = ROOT / "domains" / "examples" / "textbox.bind.yaml"
TEXT = "See https://a.example/x and  https://b.example, or read   nothing. Then stop."


def _plan(tmp_path: Path, task: str, output: str, name: str = "plan.json") -> Path:
    doc = api.plan_task(str(TEXTBOX), task, "random:1", inputs=["text"], output=output).document
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.slow
def test_the_readme_example_runs_through_the_real_entry_point(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    code, _, err = run_fllm(
        "plan", str(TEXTBOX), "How many links are in this text?", "-i", "text",
        "--output", "number", "-f", "json", "-o", str(plan), "-q",
    )  # fmt: skip
    assert code == 0, err
    steps = [s["tool"] for s in json.loads(plan.read_text())["steps"]]
    assert steps == ["extract_links", "count_items"]
    code, stdout, err = run_fllm("run", str(plan), "--bind", str(BIND), "--input", f"text={TEXT}")
    assert code == 0, err
    assert stdout.strip() == "2"
    assert "step 1 extract_links: done" in err and "step 2 count_items: done" in err


@pytest.mark.slow
def test_a_failing_tool_is_planned_around_and_shared_results_are_reused(tmp_path: Path) -> None:
    doc = {
        "domain_path": str(TEXTBOX), "task": "translate the first sentence", "output": "text",
        "inputs": {"text": "text"},
        "steps": [
            {"id": 1, "tool": "first_sentence", "inputs": ["input:text"], "output": "text"},
            {"id": 2, "tool": "translate_to_french", "inputs": ["step:1"], "output": "text"},
        ],
    }  # fmt: skip
    calls: list[str] = []
    table = read_bindings(str(BIND))
    for binding in table.values():
        inner = binding.call

        def counted(values: list[Any], inner: Any = inner, name: str = binding.tool) -> Any:
            calls.append(name)
            return inner(values)

        binding.call = counted  # type: ignore[method-assign]
    result = api.run_plan(doc, table, {"text": TEXT}, model="random:2")
    assert result.ok and result.failed_tools == ["translate_to_french"]
    assert result.plans[0] == ["first_sentence", "translate_to_french"]
    assert "translate_to_french" not in result.plans[1]
    assert calls.count("first_sentence") == 1  # the re-plan reused its result
    assert any(s.reused for s in result.steps)
    failed = [s for s in result.steps if s.error]
    assert failed[0].error == "ConnectionError: translation service unreachable"


@pytest.mark.slow
def test_no_plan_left_stops_with_exit_1_and_keeps_every_value(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "say it louder", "text")
    bind = tmp_path / "b.yaml"
    always_fails = {"command": [sys.executable, "-c", "import sys; sys.exit(3)"]}
    table = {
        t: {"args": ["text"], **always_fails}
        for t in ("clean_whitespace", "first_sentence", "shout", "translate_to_french")
    }
    table.update(
        {
            "word_count": {"args": ["text"], "python": "textbox:word_count"},
            "extract_links": {"args": ["text"], "python": "textbox:extract_links"},
            "count_items": {"args": ["items"], "python": "textbox:count_items"},
        }
    )
    bind.write_text(json.dumps({"tools": table}), encoding="utf-8")
    (tmp_path / "textbox.py").write_text((ROOT / "domains/examples/textbox.py").read_text())
    out = tmp_path / "run.json"
    code, _, err = run_fllm("run", str(plan), "--bind", str(bind), "--input", "text=a b",
                            "--max-replans", "5", "-o", str(out))  # fmt: skip
    assert code == 1 and "no valid plan remains without" in err and "Traceback" not in err
    assert f"the values made so far are in {out}" in err
    kept = json.loads(out.read_text())
    assert kept["ok"] is False and len(kept["failed_tools"]) >= 2
    assert all("exited with 3" in s["error"] for s in kept["steps"] if "error" in s)


def test_values_of_the_wrong_type_are_failures() -> None:
    binding = Binding("word_count", ("text",))
    binding.call = lambda values: "many"  # type: ignore[method-assign]
    runner = Runner({"word_count": binding}, {"word_count": (("text",), "number")}, {"text": "a"})
    doc = {
        "inputs": {"text": "text"},
        "steps": [{"id": 1, "tool": "word_count", "inputs": ["input:text"], "output": "number"}],
    }
    result = runner.run(doc, None, 0)
    assert not result.ok and result.steps[0].error == "returned 'many', not number"


def test_independent_branches_run_at_the_same_time() -> None:
    """Eight leaves under one join run at once: each waits until all eight have started, which
    one-after-another running never reaches (the wait then breaks)."""
    import threading

    everyone = threading.Barrier(8, timeout=5)
    slow = Binding("leaf", ("x",))
    slow.call = lambda values: (everyone.wait(), values[0])[1]  # type: ignore[method-assign]
    join = Binding("join", tuple(f"x{i}" for i in range(8)))
    join.call = lambda values: " ".join(values)  # type: ignore[method-assign]
    steps = [{"id": i + 1, "tool": "leaf", "inputs": [f"input:v{i}"]} for i in range(8)]
    steps.append({"id": 9, "tool": "join", "inputs": [f"step:{i + 1}" for i in range(8)]})
    types = {"leaf": (("text",), "text"), "join": (("text",) * 8, "text")}
    given = {f"v{i}": str(i) for i in range(8)}
    runner = Runner({"leaf": slow, "join": join}, types, given, workers=8)
    result = runner.run({"inputs": {k: "text" for k in given}, "steps": steps}, None, 0)
    assert result.ok and result.output == "0 1 2 3 4 5 6 7"
    one_at_a_time = Runner({"leaf": slow, "join": join}, types, given, workers=1)
    everyone.reset()
    with pytest.raises(threading.BrokenBarrierError):  # the first leaf waited alone
        one_at_a_time.run({"inputs": {k: "text" for k in given}, "steps": steps}, None, 0)


def test_commands_get_their_arguments_as_words_never_through_a_shell(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    binding = Binding("echo", ("text",), command=(sys.executable, "-c",
                      "import sys; print(sys.argv[1])", "{text}"), base=tmp_path)  # fmt: skip
    hostile = f"$(touch {marker}); `touch {marker}` && touch {marker}"
    assert binding.call([hostile]) == hostile
    assert not marker.exists()


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("tools: 3", "a mapping with a 'tools' mapping"),
        ("tools: {a: {args: [x]}}", "give exactly one of python, command or mcp (it gives none)"),
        ("tools: {a: {python: m:f, command: [x]}}", "(it gives python, command)"),
        ("tools: {a: {command: 'rm -rf /'}}", "must be a list of words (no shell reads it)"),
        ("tools: {a: {python: nocolon}}", "python must be MODULE:FUNCTION"),
        ("tools: {a: {python: m:f, colour: red}}", "unknown key(s) ['colour']"),
        ("tools: [", "not valid YAML"),
    ],
)
def test_bad_bindings_are_one_line_errors(body: str, needle: str, tmp_path: Path) -> None:
    path = tmp_path / "b.yaml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(UsageError) as info:
        read_bindings(str(path))
    assert needle in info.value.message


def test_missing_bindings_and_inputs_are_misuse(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "How many words?", "number")
    bind = tmp_path / "b.yaml"
    bind.write_text("tools: {}\n", encoding="utf-8")
    code, _, err = run_fllm("run", str(plan), "--bind", str(bind), "--input", "text=a b")
    assert code == 2 and "no binding for tool(s)" in err
    code, _, err = run_fllm("run", str(plan), "--bind", str(BIND))
    assert code == 2 and "give --input text=VALUE" in err


@pytest.mark.slow
def test_plan_and_run_in_one_step(tmp_path: Path) -> None:
    args = (
        "plan", str(TEXTBOX), "How many links are in this text?", "-i", "text",
        "--output", "number", "--run", "--bind", str(BIND), "--value", f"text={TEXT}",
    )  # fmt: skip
    code, stdout, err = run_fllm(*args)
    assert code == 0, err
    assert stdout.rstrip().endswith("Result: 2")
    code, stdout, _ = run_fllm(*args, "-f", "json")
    doc = json.loads(stdout)
    assert doc["valid"] and doc["run"]["ok"] and doc["run"]["output"] == 2
    code, _, err = run_fllm(*args[:8], "--run")
    assert code == 2 and "--run needs --bind FILE" in err
