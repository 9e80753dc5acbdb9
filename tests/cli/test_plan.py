"""`fllm plan` from the command line: formats, files, traces, replay, interface inference."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from fllm_cli.search import interface
from tests.conftest import InProc, run_fllm

TASK = "Given noisy grayscale image, how to return the caption in German step by step?"


@pytest.mark.slow
def test_json_plan_is_written_atomically_and_verifies(tmp_path: Path, openagi: str) -> None:
    out = tmp_path / "plan.json"
    code, _, err = run_fllm(
        "plan",
        openagi,
        TASK,
        "--input",
        "image",
        "--output",
        "text",
        "--model",
        "random:7",
        "--format",
        "json",
        "-o",
        str(out),
    )
    assert code == 0, err
    doc = json.loads(out.read_text())
    for key in ("domain", "task", "inputs", "output", "model", "word", "steps", "tree", "stats"):
        assert key in doc
    assert doc["model"] == "random:7" and doc["inputs"] == {"image": "image"}
    for key in (
        "llm_calls",
        "choice_points",
        "forced_moves",
        "backtracks",
        "fallbacks",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "seconds",
    ):
        assert key in doc["stats"]
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]  # no temp files left
    code, stdout, _ = run_fllm("verify", openagi, str(out))
    assert code == 0 and "valid plan" in stdout


@pytest.mark.slow
def test_named_inputs_and_tree_plans(tmp_path: Path, openagi: str) -> None:
    code, stdout, err = run_fllm(
        "plan",
        openagi,
        "Given English document and English query, answer in German?",
        "--input",
        "document=text",
        "--input",
        "query=text",
        "--output",
        "text",
        "--model",
        "random:11",
        "-f",
        "json",
    )
    assert code == 0, err
    doc = json.loads(stdout)
    assert doc["inputs"] == {"document": "text", "query": "text"}
    assert all(
        w in ("input:document", "input:query") for w in doc["word"] if w.startswith("input:")
    )


@pytest.mark.slow
def test_same_seed_same_plan_and_every_format(openagi: str) -> None:
    base = ["plan", openagi, TASK, "--input", "image", "--output", "text", "--model", "random:3"]
    first = run_fllm(*base, "-f", "text")
    assert first[0] == 0 and first[1] == run_fllm(*base, "-f", "text")[1]
    assert first[1].startswith("Step 1: ")
    assert run_fllm(*base, "-f", "mermaid")[1].startswith("flowchart LR")
    assert run_fllm(*base, "-f", "dot")[1].startswith("digraph plan {")
    assert "word:" in run_fllm(*base, "-f", "yaml")[1]
    rich = run_fllm(*base)
    assert "Execution order" in rich[1] and "LLM calls" in rich[1]


@pytest.mark.slow
def test_trace_then_replay_reproduces_the_run(tmp_path: Path, openagi: str) -> None:
    trace = tmp_path / "t.jsonl"
    base = ["plan", openagi, TASK, "--input", "image", "--output", "text", "-f", "json"]
    base += ["--search", "greedy"]  # a run that asks the model at every choice point
    code, stdout, _ = run_fllm(*base, "--model", "random:5", "--trace", str(trace))
    assert code == 0
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    assert records and all(
        {"type", "kind", "prompt", "options", "reply", "choice", "usage", "latency"} <= r.keys()
        for r in records
    )
    code, replayed, err = run_fllm(*base, "--model", f"replay:{trace}")
    assert code == 0, err
    assert json.loads(replayed)["word"] == json.loads(stdout)["word"]
    # A different task changes the prompts: replay must refuse and say where.
    code, _, err = run_fllm(
        "plan",
        openagi,
        "another task",
        "--input",
        "image",
        "--output",
        "text",
        "--model",
        f"replay:{trace}",
        "--search",
        "greedy",
    )
    assert code == 1 and "different prompt" in err and "Traceback" not in err


def test_scripted_file_model(tmp_path: Path, openagi: str) -> None:
    answers = tmp_path / "answers.txt"
    answers.write_text("Image Captioning\ninput image\n", encoding="utf-8")
    code, stdout, err = run_fllm(
        "plan",
        "--search",
        "greedy",
        openagi,
        TASK,
        "--input",
        "image",
        "--output",
        "text",
        "--model",
        f"scripted:{answers}",
        "-f",
        "json",
    )
    assert code == 0, err
    assert json.loads(stdout)["word"][0] == "Image Captioning"


@pytest.mark.slow
def test_interface_is_asked_when_omitted(tmp_path: Path, openagi: str) -> None:
    answers = tmp_path / "answers.txt"
    # inputs: "an image and a text"; output: "a text"; then plan choices.
    answers.write_text("an image and a text\na text\n" + "1\n" * 30, encoding="utf-8")
    code, stdout, err = run_fllm(
        "plan",
        openagi,
        "Given an image and a question, answer it?",
        "--model",
        f"scripted:{answers}",
        "-f",
        "json",
    )
    assert code == 0, err
    doc = json.loads(stdout)
    assert doc["inputs"] == {"image": "image", "text": "text"} and doc["output"] == "text"


@pytest.mark.slow
def test_bad_input_is_one_line_without_traceback(tmp_path: Path, openagi: str) -> None:
    cases = [
        ["plan", openagi, "t", "--input", "imgae", "--output", "text", "--model", "random"],
        ["plan", openagi, "t", "--input", "image", "--output", "text", "-f", "pdf"],
        ["plan", "domains/nope.yaml", "t", "--model", "random"],
        ["plan", openagi, "t", "--input", "image", "--model", "random"],
        ["plan", openagi, "t", "--input", "image", "--output", "text", "--model", "random:x"],
        [
            "plan",
            openagi,
            "t",
            "--input",
            "image",
            "--output",
            "text",
            "--model",
            "random",
            "-o",
            str(tmp_path / "missing" / "p.json"),
        ],
        [
            "plan",
            openagi,
            "t",
            "--input",
            "image",
            "--output",
            "text",
            "--model",
            "replay:/nonexistent",
        ],
    ]
    for args in cases:
        code, stdout, err = run_fllm(*args)
        assert code != 0, args
        assert "Traceback" not in err + stdout, args
        assert len(err.strip().splitlines()) == 1, (args, err)
    assert "did you mean 'image'" in run_fllm(*cases[0])[2]


@pytest.mark.slow
def test_existing_output_file_survives_a_failed_run(tmp_path: Path, openagi: str) -> None:
    out = tmp_path / "plan.json"
    out.write_text("precious", encoding="utf-8")
    code, _, _ = run_fllm(
        "plan",
        openagi,
        "t",
        "--input",
        "image",
        "--output",
        "text",
        "--model",
        "random",
        "--max-moves",
        "1",
        "-o",
        str(out),
    )
    assert code == 1
    assert out.read_text() == "precious"


RECURSIVE = (
    "name: sss\nkind: grammar\ngrammar:\n  start: S\n  terminals: [a]\n"
    "  productions:\n    S: ['S S S', 'a']\n"
)


def test_a_plan_cut_short_keeps_its_steps_beside_the_output(tmp_path: Path) -> None:
    spec = tmp_path / "sss.yaml"
    spec.write_text(RECURSIVE, encoding="utf-8")
    out = tmp_path / "plan.json"
    out.write_text("an earlier plan", encoding="utf-8")
    argv = ["plan", str(spec), "t", "--model", "random:1", "--max-moves", "300", "-q"]
    code, _, err = run_fllm(*argv, "-o", str(out))
    partial = tmp_path / "plan.partial.json"
    assert code == 1 and "--max-moves 300" in err and str(partial) in err
    assert out.read_text() == "an earlier plan"  # not lost
    doc = json.loads(partial.read_text())
    assert doc["partial"] is True and doc["valid"] is False and "word" not in doc
    assert doc["steps_so_far"] and set(doc["steps_so_far"]) == {"a"}
    assert doc["stats"]["steps"] == 301 and doc["model"] == "random:1"
    code, _, err = run_fllm("verify", str(spec), str(partial))
    assert code == 1 and "a partial record of a failed run" in err
    # A partial file that cannot be written does not hide the planner's own error.
    code, _, err = run_fllm(*argv, "-o", str(tmp_path / "no-such-folder" / "p.json"))
    assert code == 1 and "--max-moves 300" in err and "were not kept" in err
    # A rendering (here Mermaid) of a plan that does not exist is not written at all.
    code, _, _ = run_fllm(*argv, "-f", "mermaid", "-o", str(tmp_path / "p.mmd"))
    assert code == 1 and not list(tmp_path.glob("p.*"))


def test_help_for_every_command(fllm_inproc: InProc) -> None:
    for command in ([], ["plan"], ["validate"], ["render-pda"], ["verify"]):
        result = fllm_inproc(*command, "--help")
        assert result.code == 0, command
        assert "Usage" in result.out + result.err


def test_trace_is_kept_when_planning_fails(tmp_path: Path, openagi: str) -> None:
    trace = tmp_path / "t.jsonl"
    answers = tmp_path / "answers.txt"
    answers.write_text("Visual Question Answering\n", encoding="utf-8")  # then runs out
    code, _, err = run_fllm(
        "plan",
        "--search",
        "greedy",
        openagi,
        TASK,
        "--input",
        "image",
        "--output",
        "text",
        "--model",
        f"scripted:{answers}",
        "--trace",
        str(trace),
    )
    assert code == 1 and "ran out of answers" in err
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [r["chosen"] for r in records] == ["the output of Visual Question Answering"]


@pytest.mark.slow
def test_trace_has_no_duplicates(tmp_path: Path, openagi: str) -> None:
    trace = tmp_path / "t.jsonl"
    code, stdout, _ = run_fllm(
        "plan",
        openagi,
        TASK,
        "--input",
        "image",
        "--output",
        "text",
        "--model",
        "random:4",
        "-f",
        "json",
        "--trace",
        str(trace),
    )
    assert code == 0
    records = trace.read_text().splitlines()
    assert len(records) == json.loads(stdout)["stats"]["choice_points"]


def test_stats_line_shows_model_load_and_inference() -> None:
    from fllm_cli.cli.plan import stats_line

    stats = {
        "llm_calls": 3,
        "choice_points": 3,
        "forced_moves": 1,
        "backtracks": 0,
        "fallbacks": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cost_usd": 0.0,
        "seconds": 2.5,
        "backend": {"loaded": True, "load_seconds": 0.21, "infer_seconds": 2.2},
    }
    line = stats_line(stats)
    assert line.startswith("3 LLM calls, 3 choice points, 1 forced moves")
    # the parts add up to the total
    assert line.endswith(", 2.50 s = model load 0.21 s + inference 2.20 s + the rest 0.09 s")
    del stats["backend"]
    assert "model load" not in stats_line(stats)
    assert stats_line(stats).endswith(", 2.50 s")


def test_stats_count_the_interface_question_and_time_the_whole_call(tmp_path: Path) -> None:
    """The interface is asked before the search: its calls, tokens and time are in the stats."""
    from fllm_cli import api
    from fllm_cli.llm.base import ChoiceRequest, ChoiceResult, Usage
    from fllm_cli.llm.simple import RandomModel

    class Counting(RandomModel):
        def choose(self, request: ChoiceRequest) -> ChoiceResult:
            result = super().choose(request)
            time.sleep(0.01)
            result.calls, result.usage, result.seconds = 1, Usage(prompt_tokens=10), 0.01
            return result

    result = api.plan_task(
        "domains/openagi.yaml", "Given a noisy image, return its caption.", Counting(seed=1),
        search="greedy",
    )  # fmt: skip
    stats = result.document["stats"]
    assert result.document["why"]["interface"]["how"] == "asked the model"  # two questions
    assert stats["llm_calls"] == stats["choice_points"]
    assert stats["prompt_tokens"] == 10 * stats["llm_calls"]
    assert stats["seconds"] >= stats["search_seconds"] + 0.02
    assert stats["model_seconds"] >= 0.01 * stats["llm_calls"] - 1e-6


def test_a_plan_of_unread_replies_is_not_presented_as_the_models(
    tmp_path: Path, openagi: str
) -> None:
    """Every reply is garbage: the plan would be fllm's defaults, so the run fails (exit 1)
    unless the user accepts fallbacks; a few unread replies among many are accepted."""
    garbage = tmp_path / "garbage.txt"
    garbage.write_text("banana\n" * 40)
    out = tmp_path / "plan.json"
    args = ("plan", openagi, TASK, "--search", "greedy", "--model", f"scripted:{garbage}")
    code, stdout, err = run_fllm(*args, "-o", str(out))
    assert code == 1
    assert err.startswith("error: the model's replies could not be read: ")
    assert "--allow-fallbacks" in err and "Traceback" not in err
    assert not out.exists()
    code, stdout, _ = run_fllm(*args, "--allow-fallbacks", "-f", "json")
    assert code == 0
    stats = json.loads(stdout)["stats"]
    assert stats["unread_replies"] == stats["choices_asked"] > 0
    mostly = tmp_path / "mostly.txt"  # the first choice's reply and correction are garbage
    mostly.write_text("banana\n" * 2 + "1\n" * 40)
    code, stdout, _ = run_fllm(*args[:-1], f"scripted:{mostly}", "-f", "json")
    assert code == 0
    stats = json.loads(stdout)["stats"]
    assert stats["unread_replies"] == 1 and stats["choices_asked"] >= 4


@pytest.mark.slow
def test_an_interface_read_from_the_request_is_said_on_stderr(openagi: str) -> None:
    """What the plan takes and gives is what new wording most often gets wrong: when fllm read
    it from the request, a human format says so (and which flags fix it) on standard error."""
    request = "Tell me in a sentence what is in this photo."
    code, out, err = run_fllm("plan", openagi, request, "--model", "random:1")
    assert code == 0, err
    said = " ".join(err.split())
    assert "Read as: image -> text" in said and "--input and --output" in said
    assert "Read as" not in out  # the plan on standard output stays as it was
    given = ["-i", "image", "--output", "text", "--model", "random:1"]
    code, _, err = run_fllm("plan", openagi, request, *given)
    assert code == 0 and "Read as" not in err  # told, nothing to say
    for extra in (["--format", "json"], ["--quiet"]):
        code, out, err = run_fllm("plan", openagi, request, "--model", "random:1", *extra)
        assert code == 0 and "Read as" not in err + out


@pytest.mark.slow
def test_a_close_runner_up_reading_is_said_and_kept_in_the_plan(openagi: str) -> None:
    """When another reading of the request scores within interface.CLOSE of the chosen one, the
    plan JSON names it and the stderr line says the reading is unsure, with the alternative."""
    request = "Make a picture from my prompt, then answer my question about it: is it raining?"
    code, out, _ = run_fllm("plan", openagi, request, "--model", "random:1", "-f", "json")
    assert code == 0
    doc = json.loads(out)
    reading = doc["why"]["interface"]
    close = reading["close"]
    # The two readings are a hair apart: either may come first, but they are these two.
    chosen = (sorted(doc["inputs"].values()), doc["output"])
    assert {str(chosen), str((close["inputs"], close["output"]))} == {
        str((["text"], "text")),
        str((["text", "text"], "text")),
    }
    assert 0 <= close["behind"] <= interface.CLOSE
    top = reading["ranked"][0]["score"]
    assert any(
        (r["inputs"], r["output"]) == (close["inputs"], close["output"])
        and abs(top - r["score"] - close["behind"]) < 2e-3
        for r in reading["ranked"][1:]
    )
    code, _, err = run_fllm("plan", openagi, request, "--model", "random:1")
    assert code == 0
    other = f"{', '.join(close['inputs'])} -> {close['output']}"
    assert f"unsure, {other} scores close behind" in " ".join(err.split())
    clear = "Tell me in a sentence what is in this photo."  # one reading well ahead
    code, out, err = run_fllm("plan", openagi, clear, "--model", "random:1", "-f", "json")
    assert code == 0 and "close" not in json.loads(out)["why"]["interface"]
