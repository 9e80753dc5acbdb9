"""Hostile text from models, tasks, observations and data files reaches the terminal harmless.

Every run goes through the real entry point. Each is repeated with colour forced on, where rich
would turn markup into styles and hyperlinks if untrusted text were ever parsed as markup.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, run_fllm
from tests.solve.scripts import DEFINITION, FORMULATION, MC, assessment, code, formatted

REACT = str(ROOT / "tests" / "ltl" / "data" / "react_free_answer.sexp")  # a free-text answer
OPENAGI = str(ROOT / "domains" / "openagi.yaml")
COFFEE = str(ROOT / "domains" / "problems" / "coffee.yaml")

TITLE = "\x1b]0;pwned\x07"  # retitles the terminal window
CLEAR = "\x1b[2J"  # clears the screen
RED = "\x1b[31m"
BOLD_MARKUP = "[bold red]X[/]"
LINK_MARKUP = "[link=file:///etc/passwd]x[/link]"
BIDI = "\u202egnp.exe\u202c"
TEMPLATE = "{{ 7 * 7 }} {% for x in range(3) %}X{% endfor %}"
HOSTILE = f"{TITLE} {CLEAR} {RED} {BOLD_MARKUP} {LINK_MARKUP} {BIDI} \x9b31m {TEMPLATE}"

PLAIN: dict[str, str] = {}
COLOUR = {"NO_COLOR": "", "FORCE_COLOR": "1", "COLUMNS": "1000"}
MODES = [pytest.param(PLAIN, id="no-colour"), pytest.param(COLOUR, id="force-colour")]

# Never acceptable: these act on a terminal whatever rich does with colour.
# The last two would be the hostile colour code, and the style of interpreted markup.
ACTIVE = ("\x1b]", CLEAR, "\x07", "\x9b", "\u202e", "\u202c", "\x1bP", f"{RED} ", "\x1b[1;31mX")
SGR = re.compile(r"\x1b\[[0-9;]*m")


def assert_harmless(text: str, env: dict[str, str]) -> None:
    """No control sequence of the hostile text is left; without colour, no ESC or CR at all."""
    for sequence in ACTIVE:
        assert sequence not in text, f"{sequence!r} reached the terminal"
    if env is PLAIN:
        assert "\x1b" not in text and "\r" not in text


def visible(text: str) -> str:
    """Return what a reader sees: the output without rich's own colour codes."""
    return SGR.sub("", text)


def assert_shown_literally(text: str) -> None:
    """Markup is shown as the characters it is, controls as their escapes."""
    seen = visible(text)
    assert BOLD_MARKUP in seen and LINK_MARKUP in seen
    assert "\\x1b]0;pwned" in seen and "\\x1b[2J" in seen and "\\u202egnp.exe" in seen


# -- fllm agent ---------------------------------------------------------------------------------


def agent_script(tmp_path: Path) -> Path:
    """Replies for ReAct: a hostile thought, a calculator call, hostile final thought and answer."""
    script = tmp_path / "script.txt"
    lines = [f"think {HOSTILE}", "1", "6 * 7", "2", f"final {HOSTILE}", f"answer {HOSTILE}"]
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return script


@pytest.mark.parametrize("env", MODES)
@pytest.mark.parametrize("fmt", ["rich", "transcript"])
def test_agent_replies_are_shown_harmless(tmp_path: Path, fmt: str, env: dict[str, str]) -> None:
    args = ["agent", REACT, f"question {HOSTILE}", "--format", fmt]
    code_, out, err = run_fllm(
        *args, "--model", f"scripted:{agent_script(tmp_path)}", env=env, timeout=60
    )
    assert code_ == 0, err
    assert_harmless(out, env)
    assert_harmless(err, env)
    assert_shown_literally(out)
    assert visible(out).count(BOLD_MARKUP) >= 4  # question, thought, final thought, answer
    if fmt == "rich":
        assert "answer: answer \\x1b]0;pwned" in visible(out)


@pytest.mark.parametrize("env", MODES)
def test_agent_json_keeps_the_exact_text(tmp_path: Path, env: dict[str, str]) -> None:
    script = agent_script(tmp_path)
    code_, out, err = run_fllm(
        "agent", REACT, "q", "--format", "json", "--model", f"scripted:{script}", env=env
    )
    assert code_ == 0, err
    assert_harmless(out, env)
    assert json.loads(out)["answer"] == f"answer {HOSTILE}"


def test_tool_observation_cannot_overwrite_the_line(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    page = f"Safe start\r{CLEAR}overwritten {BOLD_MARKUP} {TITLE} {BIDI}"
    corpus.write_text(json.dumps({"title": "Page", "text": page}) + "\n", encoding="utf-8")
    script = tmp_path / "script.txt"
    script.write_text("look\n1\nPage\n2\ndone\nok\n", encoding="utf-8")
    args = ["agent", REACT, "q", "--tools", "search", "--corpus", str(corpus)]
    for env in (PLAIN, COLOUR):
        code_, out, err = run_fllm(*args, "--model", f"scripted:{script}", env=env)
        assert code_ == 0, err
        assert_harmless(out, env)
        assert "\r" not in out
        assert f"\\x1b[2Joverwritten {BOLD_MARKUP}" in visible(out)


# -- fllm plan ----------------------------------------------------------------------------------

TASK = f"caption {CLEAR}[bold]hi[/bold] {TITLE} {LINK_MARKUP} {BIDI}"


@pytest.mark.slow
@pytest.mark.parametrize("env", MODES)
@pytest.mark.parametrize("fmt", ["rich", "text", "json", "yaml", "mermaid"])
def test_plan_task_text_is_not_markup(fmt: str, env: dict[str, str]) -> None:
    code_, out, err = run_fllm(
        "plan", OPENAGI, TASK, "--model", "random:1", "--format", fmt, env=env, timeout=60
    )
    assert code_ == 0, err
    assert_harmless(out, env)
    assert_harmless(err, env)
    if fmt == "rich":
        assert "Plan for: caption \\x1b[2J[bold]hi[/bold] \\x1b]0;pwned" in visible(out)
        assert LINK_MARKUP in visible(out)
    if fmt == "json":
        assert json.loads(out)["task"] == TASK
    if fmt == "yaml":
        assert yaml.safe_load(out)["task"] == TASK


@pytest.mark.slow
def test_plan_stats_note_in_brackets_is_shown() -> None:
    # Step by step, where the model is asked at each choice (with the default strategy a
    # request as empty as "x" is planned from the evidence and the model is never asked).
    args = ("plan", OPENAGI, "x", "--model", "random:1", "--search", "greedy")
    code_, out, err = run_fllm(*args, "--max-llm-calls", "0")
    assert code_ == 0, err
    assert "[budget max_llm_calls ran out: later choices were defaults]" in out


def test_plan_task_is_never_a_template(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    task = f"caption this {TEMPLATE}"
    code_, _, err = run_fllm(
        "plan",
        OPENAGI,
        task,
        "--model",
        "random:1",
        "--trace",
        str(trace),
        "--search",
        "greedy",
        timeout=60,
    )
    assert code_ == 0, err
    prompts = [json.loads(line).get("prompt", "") for line in trace.read_text().splitlines()]
    assert prompts and all(TEMPLATE in p for p in prompts if p)
    assert not any("49 XXX" in p for p in prompts)


# -- fllm solve ---------------------------------------------------------------------------------


def solve_replies(tmp_path: Path, replies: list[str]) -> str:
    """Write replies as a trace for the replay model (one reply may span several lines)."""
    path = tmp_path / "replies.jsonl"
    lines = [json.dumps({"type": "generate", "reply": r}) + "\n" for r in replies]
    path.write_text("".join(lines), encoding="utf-8")
    return f"replay:{path}"


def solve(tmp_path: Path, model: str, env: dict[str, str], *extra: str) -> tuple[int, str, str]:
    query = f"What if demand rises? {CLEAR}[bold]q[/bold]"
    args = ["solve", COFFEE, query, "--model", model, "--code-timeout", "8", *extra]
    return run_fllm(*args, env=env)


@pytest.mark.parametrize("env", MODES)
def test_solve_answer_is_shown_harmless(tmp_path: Path, env: dict[str, str]) -> None:
    answer = formatted({"total_cost": 2520, "note": HOSTILE})
    replies = [f"{DEFINITION}\n{HOSTILE}", FORMULATION, code("coffee"), answer, assessment(MC)]
    code_, out, err = solve(tmp_path, solve_replies(tmp_path, replies), env)
    assert code_ == 0, err
    assert_harmless(out, env)
    assert_harmless(err, env)
    assert "objective: 2520" in out and BOLD_MARKUP in out
    code_, out, _ = solve(tmp_path, solve_replies(tmp_path, replies), env, "--format", "json")
    assert json.loads(out)["solution"]["note"] == HOSTILE
    assert_harmless(out, env)


def test_solve_error_from_generated_code_is_harmless(tmp_path: Path) -> None:
    crash = f"```python\nraise ValueError({json.dumps(HOSTILE)})\n```\n"
    replies = [DEFINITION, FORMULATION, crash, "JSON:\nRUNTIME ERROR\nCheck:\nno", assessment(MC)]
    limits = ("--max-attempts", "1", "--max-rounds", "1")
    _, out, err = solve(tmp_path, solve_replies(tmp_path, replies), COLOUR, *limits)
    assert "last error:" in out, err
    assert_harmless(out, COLOUR)
    assert_harmless(err, COLOUR)


def test_solve_reply_is_never_a_template(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    answer = formatted({"total_cost": 2520})
    replies = [f"{DEFINITION}\n{TEMPLATE}", FORMULATION, code("coffee"), answer, assessment(MC)]
    model = solve_replies(tmp_path, replies)
    code_, _, err = solve(tmp_path, model, PLAIN, "--trace", str(trace))
    assert code_ == 0, err
    prompts = [json.loads(line).get("prompt", "") for line in trace.read_text().splitlines()]
    later = [p for p in prompts[1:] if p]  # every prompt after the definer's reply
    assert len(later) >= 3 and all(TEMPLATE in p for p in later)
    assert not any("49 XXX" in p for p in later)


# -- agent replies are never templates -----------------------------------------------------------


def test_agent_reply_is_never_a_template(tmp_path: Path) -> None:
    script = tmp_path / "script.txt"
    script.write_text(f"think {TEMPLATE}\n1\n6 * 7\n2\ndone\n42\n", encoding="utf-8")
    trace = tmp_path / "trace.jsonl"
    question = f"what is {TEMPLATE}?"
    args = ["agent", REACT, question, "--model", f"scripted:{script}", "--trace", str(trace)]
    code_, _, err = run_fllm(*args)
    assert code_ == 0, err
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    prompts = [r["prompt"] for r in records if "prompt" in r]
    assert all(f"what is {TEMPLATE}?" in p for p in prompts)
    assert sum(f"think {TEMPLATE}" in p for p in prompts) == len(prompts) - 1
    assert not any("49 XXX" in p for p in prompts)


# -- check-trace, verify, errors ----------------------------------------------------------------


@pytest.mark.parametrize("env", MODES)
def test_check_trace_quotes_the_transcript_harmlessly(tmp_path: Path, env: dict[str, str]) -> None:
    transcript = tmp_path / "run.txt"
    body = f"Question: q\nThought: {HOSTILE}\nAction: {TITLE}{BOLD_MARKUP}\nAction Input: 1\n"
    transcript.write_text(body, encoding="utf-8")
    args = ["check-trace", REACT, str(transcript), "--tools", "calculator"]
    code_, out, err = run_fllm(*args, env=env)
    assert code_ == 1
    assert_harmless(out, env)
    assert_harmless(err, env)
    assert f"must be one of [calculator], got '\\x1b]0;pwned\\x07{BOLD_MARKUP}'" in visible(out)


@pytest.mark.parametrize("env", MODES)
def test_verify_and_its_error_are_harmless(tmp_path: Path, env: dict[str, str]) -> None:
    plan = tmp_path / "plan.txt"
    plan.write_text(f"Image Denoising {HOSTILE}\n", encoding="utf-8")
    args = ["verify", OPENAGI, str(plan), "--input", "image", "--output", "image"]
    code_, out, err = run_fllm(*args, env=env)
    assert code_ == 1
    assert_harmless(out, env)
    assert_harmless(err, env)
    assert BOLD_MARKUP in visible(err) and "\\x1b[2J" in visible(err)


@pytest.mark.parametrize("env", MODES)
def test_error_messages_neutralise_controls(tmp_path: Path, env: dict[str, str]) -> None:
    corpus = tmp_path / f"corpus{TITLE}[bold red]X.jsonl"  # a file name is untrusted too
    corpus.write_text("not json\n", encoding="utf-8")
    args = ["agent", REACT, "q", "--tools", "search", "--corpus", str(corpus)]
    code_, out, err = run_fllm(*args, "--model", "random", env=env)
    assert code_ != 0 and err.count("error:") == 1
    assert_harmless(out, env)
    assert_harmless(err, env)
    assert "corpus\\x1b]0;pwned\\x07[bold red]X.jsonl" in visible(err)


# -- search and lookup stay inside their corpus -------------------------------------------------

SECRET = "TOP-SECRET-7f3a"
ESCAPES = [
    "../secret.txt",
    "../../etc/passwd",
    "/etc/passwd",
    "file:///etc/passwd",
    "secret.txt",
    "[secret.txt]",
    "~/.ssh/id_rsa",
    "../corpus.jsonl",
]


def corpus_with_secret_beside(tmp_path: Path) -> Path:
    """A corpus whose titles look like paths, next to a secret file in the same folder."""
    (tmp_path / "secret.txt").write_text(f"{SECRET}. Nothing else.\n", encoding="utf-8")
    inner = tmp_path / "corpus"
    inner.mkdir()
    (inner / "secret.txt").write_text(f"{SECRET} inside.\n", encoding="utf-8")
    pages = [
        {"title": "Galesburg", "text": "Galesburg is a city in Illinois. Ferris was born there."},
        {"title": "../notes.txt", "text": "A page whose title looks like a path. Harmless."},
    ]
    corpus = inner / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in pages), encoding="utf-8")
    return corpus


@pytest.mark.parametrize("query", ESCAPES)
def test_search_and_lookup_never_open_files(tmp_path: Path, query: str) -> None:
    from fllm_cli.ltl.tools import ToolContext, build_tools, run_tool

    corpus = corpus_with_secret_beside(tmp_path)
    tools = build_tools(["search", "lookup"], ToolContext(corpus=str(corpus)))
    seen = [run_tool(tools, "search", query)[0]]
    seen += [run_tool(tools, "lookup", word)[0] for word in (query, "SECRET", "Nothing")]
    seen.append(run_tool(tools, "search", "Galesburg")[0])
    seen += [run_tool(tools, "lookup", word)[0] for word in (query, "TOP")]
    assert not any(SECRET in text for text in seen)
    assert seen[-3].startswith("Galesburg is a city")


def test_a_title_with_path_characters_is_only_a_title(tmp_path: Path) -> None:
    from fllm_cli.ltl.tools import ToolContext, build_tools, run_tool

    tools = build_tools(["search"], ToolContext(corpus=str(corpus_with_secret_beside(tmp_path))))
    assert run_tool(tools, "search", "../notes.txt") == (
        "A page whose title looks like a path. Harmless.",
        True,
    )


def test_agent_cannot_read_a_file_through_search(tmp_path: Path) -> None:
    corpus = corpus_with_secret_beside(tmp_path)
    script = tmp_path / "script.txt"
    replies = ["read it", "1", "../secret.txt", "1", "again", "1", "/etc/passwd", "2", "no", "x"]
    script.write_text("\n".join(replies) + "\n", encoding="utf-8")
    args = ["agent", REACT, "q", "--tools", "search", "--corpus", str(corpus), "--format", "json"]
    code_, out, err = run_fllm(*args, "--model", f"scripted:{script}")
    assert code_ == 0, err
    observations = [s["text"] for s in json.loads(out)["steps"] if s["source"] == "env"]
    assert len(observations) == 2 and all(o.startswith("Could not find") for o in observations)
    assert SECRET not in out and "root:" not in out
