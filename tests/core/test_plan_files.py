"""Text and JSON plan files: comments, tool names with '#', the empty plan, a byte-order mark."""

from __future__ import annotations

import json
from pathlib import Path

from fllm_cli import api
from tests.conftest import ROOT, run_fllm

ANBN = str(ROOT / "tests" / "core" / "specs" / "anbn.yaml")
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
