"""The CLI contract for misuse, through the real entry point (``python -m fllm_cli``).

Every command, misused in each of the usual ways, must exit 2 with exactly one line on stderr
that names what was wrong and points to ``--help``; nothing on stdout, no traceback, and never
"internal error". The funnel must not depend on which copy of click the installed typer uses,
so these tests run the process a user runs instead of typer's test runner.
"""

from __future__ import annotations

import pytest

from tests.conftest import ROOT, run_fllm

OPENAGI = str(ROOT / "domains" / "openagi.yaml")
REACT = str(ROOT / "domains" / "agents" / "react.sexp")
COFFEE = str(ROOT / "domains" / "problems" / "coffee.yaml")
TASKS = str(ROOT / "tests" / "data" / "openagi_tasks.jsonl")
PLAN = "missing-plan.txt"

# command -> (arguments that are complete, a numeric option to give a bad value)
COMMANDS: dict[str, tuple[list[str], str | None]] = {
    "plan": ([OPENAGI, "a task", "--model", "random:1"], "--max-moves"),
    "validate": ([OPENAGI], None),
    "render-pda": ([OPENAGI], None),
    "verify": ([OPENAGI, "-", "--input", "image", "--output", "text"], None),
    "bench": ([OPENAGI, TASKS, "--model", "random:1"], "--limit"),
    "agent": ([REACT, "What is 2 plus 2?", "--model", "random:1"], "--max-loops"),
    "check-trace": ([REACT, "-"], None),
    "solve": ([COFFEE, "a question", "--model", "random:1"], "--max-seconds"),
    "solve-bench": ([COFFEE, "bench.json", "--model", "random:1"], "--max-attempts"),
}

# Commands whose first argument is a file, and the file argument's position.
FILE_ARGS = {name: 0 for name in COMMANDS} | {"verify": 1, "check-trace": 1, "solve-bench": 1}


def assert_misuse(code: int, out: str, err: str, *needles: str) -> None:
    """Exit 2, one line on stderr naming the problem, nothing on stdout."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (code, out, err)
    assert len(lines) == 1, err
    assert out == ""
    line = lines[0]
    assert line.startswith("error:"), line
    assert "internal error" not in line and "Traceback" not in err
    for needle in needles:
        assert needle in line, (needle, line)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_unknown_option(command: str) -> None:
    args, _ = COMMANDS[command]
    code, out, err = run_fllm(command, *args, "--bogus-flag", stdin="")
    assert_misuse(code, out, err, "--bogus-flag", f"fllm {command} --help")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_missing_argument(command: str) -> None:
    code, out, err = run_fllm(command, stdin="")
    assert_misuse(code, out, err, "missing argument", f"fllm {command} --help")


@pytest.mark.parametrize("command", sorted(name for name, (_, opt) in COMMANDS.items() if opt))
def test_bad_value_type(command: str) -> None:
    args, option = COMMANDS[command]
    assert option is not None
    code, out, err = run_fllm(command, *args, option, "abc", stdin="")
    assert_misuse(code, out, err, option, "--help")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_unknown_format(command: str) -> None:
    args, _ = COMMANDS[command]
    code, out, err = run_fllm(command, *args, "--format", "bogus", stdin="")
    assert_misuse(code, out, err, "'bogus'", "--format")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_unreadable_file(command: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    args, _ = COMMANDS[command]
    args = list(args)
    missing = str(tmp_path / "no-such-file.yaml")
    args[FILE_ARGS[command]] = missing
    code, out, err = run_fllm(command, *args, stdin="")
    assert_misuse(code, out, err, "no-such-file.yaml")


@pytest.mark.parametrize("command", ["plan", "validate", "solve"])
def test_folder_and_binary_files_are_misuse(command: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"\x00\xff\xfe\x80" * 64)
    for path in (str(tmp_path), str(binary)):
        args = list(COMMANDS[command][0])
        args[0] = path
        code, out, err = run_fllm(command, *args, stdin="")
        assert_misuse(code, out, err)


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["nosuchcmd"], "nosuchcmd"),
        (["--bogus"], "--bogus"),
        (["plan", OPENAGI, "t", "--model", "random:1", "--temperature", "9"], "--temperature"),
        (["plan", OPENAGI, "t", "--model", "random:x"], "random"),
        (["plan", OPENAGI, "t", "--model", "random:1", "--max-moves", "0"], "--max-moves"),
        (["agent", REACT, "q", "--model", "random:1", "--format", "json", "-o"], "-o"),
    ],
)
def test_other_misuse(argv: list[str], needle: str) -> None:
    code, out, err = run_fllm(*argv, stdin="")
    assert_misuse(code, out, err, needle)


def test_bare_command_shows_help_and_exits_2() -> None:
    code, out, err = run_fllm()
    assert code == 2
    assert "Usage" in out + err and "plan" in out + err
    assert "internal error" not in out + err


@pytest.mark.slow
def test_old_option_names_still_work_with_a_note(tmp_path) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run_fllm(
        "plan", OPENAGI, "t", "-i", "image", "--output", "text", "--model", "random:1",
        "--max-steps", "500", "-f", "json",
    )  # fmt: skip
    assert code == 0, err
    assert "--max-steps is now --max-moves" in err
    assert '"word"' in out


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_file_name_too_long_for_the_system_is_misuse(command: str) -> None:
    # A relative name is looked up among the shipped domains too; both lookups must fail cleanly.
    args = list(COMMANDS[command][0])
    args[FILE_ARGS[command]] = "a" * 5000
    code, out, err = run_fllm(command, *args, stdin="")
    assert_misuse(code, out, err, "(5,000 characters)")
    assert len(err) < 400  # the name is shortened in the message
