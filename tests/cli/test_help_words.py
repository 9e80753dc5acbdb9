"""--help reads like a man page: value words, not Python types."""

from __future__ import annotations

import pytest

from fllm_cli.cli.app import COMMANDS
from fllm_cli.cli.manhelp import man_type
from tests.conftest import InProc, run_fllm


@pytest.mark.parametrize(
    ("shown", "word"),
    [("<str>", "TEXT"), ("<list[str]>", "TEXT"), ("<int range>", "N"), ("<float>", "NUMBER"),
     ("<bool>", ""), ("<json|text>", "json|text"), (None, None), ("FILE", "FILE")],
)  # fmt: skip
def test_python_types_become_man_page_words(shown: str | None, word: str | None) -> None:
    assert man_type(shown) == word


@pytest.mark.parametrize("command", ["plan", "agent", "run", "import-tools", "solve", "verify"])
def test_help_shows_no_python_types(command: str) -> None:
    code, out, err = run_fllm(command, "--help", env={"COLUMNS": "100"})
    assert code == 0, err
    for python in ("<str>", "<bool>", "<int", "<float", "list[", "{spec}", "{task}"):
        assert python not in out, (command, python)
    usage = next(line for line in out.splitlines() if "Usage:" in line)
    first = usage.split("[OPTIONS]")[1].split()[0]
    assert first.strip("[]").split(".")[0].isupper(), usage  # SPEC, PLAN.json, [TOOLS.json]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_command_help_fits_a_screen_and_ends_in_examples(
    command: str, fllm_inproc: InProc, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = fllm_inproc(command, "--help")
    assert code == 0
    assert len(out.rstrip().splitlines()) <= 60, (command, len(out.splitlines()))
    assert "Examples:" in out and "fllm " in out.split("Examples:")[1]


def test_root_help_tells_completion_every_model_kind_and_the_model_flags(
    fllm_inproc: InProc, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = fllm_inproc("--help")
    assert code == 0
    assert "--install-completion" in out and "Shell completion" in out
    flat = " ".join(out.split())
    for word in ("random[:SEED]", "replay:TRACE.jsonl", "--api-base", "--temperature"):
        assert word in flat, word
    for flag in ("--timeout", "--retries", "--no-cache", "--choice-mode"):
        assert flag in flat, flag
