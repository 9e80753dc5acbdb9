"""Text and JSON plan files: comments, tool names with '#', the empty plan, a byte-order mark."""

from __future__ import annotations

import json
from pathlib import Path

from fllm_cli import api
from tests.conftest import ROOT, SPECS, run_fllm

ANBN = str(SPECS / "anbn.yaml")
SHARP = """\
fllm: 1
name: compilers
kind: tools
modalities: [code, binary]
tools:
  - {name: "C# Compiler", description: build C# code, inputs: [code], output: binary}
task: {inputs: [code], outputs: [binary]}
"""


def test_a_hash_inside_a_name_is_not_a_comment(tmp_path: Path) -> None:
    spec = tmp_path / "compilers.yaml"
    spec.write_text(SHARP, encoding="utf-8")
    plan = "# a plan that builds the program\nC# Compiler   # the only step\ninput:code\n"
    word, doc = api.read_plan_file(plan, "plan.txt")
    assert word == ["C# Compiler", "input:code"] and doc is None
    code, out, err = run_fllm(
        "verify", str(spec), "-", "-i", "code", "--output", "binary", stdin=plan
    )
    assert code == 0, err
    assert "C# Compiler" in out


def test_the_empty_plan_is_written_as_epsilon() -> None:
    problem = api.compile_problem(ANBN)
    word, _ = api.read_plan_file("ε\n", "empty.txt")
    assert word == [] and problem.verify(word).valid
    code, _, err = run_fllm("verify", ANBN, "-", stdin="eps\n")
    assert code == 0, err
    code, _, err = run_fllm("verify", ANBN, "-", stdin="# nothing at all\n")
    assert code == 1 and "write ε for the empty plan" in err


def test_a_json_plan_may_start_with_a_byte_order_mark(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text("\ufeff" + json.dumps({"word": ["a", "b"]}), encoding="utf-8")
    code, _, err = run_fllm("verify", ANBN, str(plan))
    assert code == 0, err


OPENAGI = str(ROOT / "domains" / "openagi.yaml")


def test_hostile_plan_json_is_one_line_error(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"word": ["a"], "x": ' + "[" * 5000 + "]" * 5000 + "}", encoding="utf-8")
    code, _, err = run_fllm("verify", ANBN, str(deep))
    assert code == 1 and "nested deeper than 64" in err and "Traceback" not in err
    typed = tmp_path / "typed.json"
    doc = {
        "word": ["Image Captioning", "input:image"],
        "output": True,
        "inputs": {"image": "image"},
    }
    typed.write_text(json.dumps(doc), encoding="utf-8")
    code, _, err = run_fllm("verify", OPENAGI, str(typed))
    assert code == 1 and "'output' must be a modality name, got bool" in err
    huge = tmp_path / "huge.json"
    huge.write_text('{"word": ["a"], "n": ' + "9" * 5000 + "}", encoding="utf-8")
    code, _, err = run_fllm("verify", ANBN, str(huge))
    assert code == 1 and "unreadable JSON" in err


def test_an_empty_tool_name_is_an_error_not_a_dropped_tool(tmp_path: Path) -> None:
    spec = tmp_path / "t.yaml"
    spec.write_text(
        "name: t\nmodalities: [text]\ntools:\n"
        '  - {name: "", description: x, inputs: [text], output: text}\n'
        "  - {name: A, description: x, inputs: [text], output: text}\n",
        encoding="utf-8",
    )
    code, out, _ = run_fllm("validate", str(spec))
    assert code == 1 and "tool name must not be empty" in out
