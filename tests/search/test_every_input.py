"""Every input a task declares is used: the automaton refuses plans that leave one unread."""

from __future__ import annotations

from pathlib import Path

import pytest

from fllm_cli import api
from fllm_cli.llm.simple import RandomModel
from tests.conftest import run_fllm

TWO_INPUTS = ["document=text", "query=text"]
TASK = "Given English document and English query, how to answer the question in German?"


def _with_limit(openagi: str, line: str) -> str:
    text = Path(openagi).read_text(encoding="utf-8")
    assert "\nlimits:\n" in text
    return text.replace("\nlimits:\n", f"\nlimits:\n  {line}\n", 1)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("search", ["greedy", "meaning", "words"])
def test_every_plan_reads_every_input(openagi: str, seed: int, search: str) -> None:
    doc = api.plan_task(
        openagi, TASK, RandomModel(seed), inputs=TWO_INPUTS, output="text", search=search
    ).document
    assert {"input:document", "input:query"} <= set(doc["word"]), doc["word"]
    problem = api.compile_problem(openagi, inputs=TWO_INPUTS, output="text", task=TASK)
    assert api.verify(problem, doc["word"]).valid
    assert doc["stats"]["backtracks"] == 0  # the look-ahead saw the rule: no dead ends


def test_verify_refuses_a_plan_that_leaves_an_input_unread(openagi: str) -> None:
    plan = "Question Answering\nMachine Translation\ninput:document\ninput:document\n"
    args = ["verify", openagi, "-", "--input", "document=text", "--input", "query=text"]
    code, _, err = run_fllm(*args, "--output", "text", stdin=plan)
    assert code == 1
    assert (
        "never uses the task's 'input query (text)'" in err and len(err.strip().splitlines()) == 1
    )


def test_a_domain_may_allow_unused_inputs(tmp_path: Path, openagi: str) -> None:
    text = _with_limit(openagi, "use_every_input: false")
    spec = tmp_path / "lenient.yaml"
    spec.write_text(text, encoding="utf-8")
    problem = api.compile_problem(str(spec), inputs=TWO_INPUTS, output="text", task=TASK)
    word = ["Question Answering", "Machine Translation", "input:document", "input:document"]
    assert api.verify(problem, word).valid
    strict = api.compile_problem(openagi, inputs=TWO_INPUTS, output="text", task=TASK)
    assert not api.verify(strict, word).valid


def test_use_every_input_must_be_a_boolean(tmp_path: Path, openagi: str) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text(_with_limit(openagi, "use_every_input: sometimes"), encoding="utf-8")
    code, out, err = run_fllm("validate", str(spec))
    assert code != 0 and "use_every_input" in (out + err)
