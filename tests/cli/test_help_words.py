"""--help reads like a man page: value words, not Python types."""

from __future__ import annotations

import pytest

from fllm_cli.cli.manhelp import man_type
from tests.conftest import run_fllm


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
