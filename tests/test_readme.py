"""The README stays true: its shell commands run as written, offline.

Every command in a ```bash block runs, in README order, in one scratch folder that sees the
repository's files (so `-o plan.json` followed by `verify ... plan.json` works as a reader would
type it). Commands that need what a test cannot have are skipped only when the README says so on
the line before them (`# needs an API model`, or `# a long measurement, not run by the tests`
for a benchmark run that takes half an hour), and `make` targets are skipped because this test
runs inside `make test`. Each transcript block (```` ``` ```` starting with `$ `) is run too, and
its printed lines must appear in the output. A command that calls the embedded model is marked
slow; every command has a time limit.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

README = ROOT / "README.md"
LINKED = ("domains", "tests", "prompts", "bench", "docs", "src", ".venv")
NEEDS_API = "needs an API model"
LONG_RUN = "a long measurement, not run by the tests"
# Figures that change from run to run in transcripts: timings and spend in stats lines.
# Commands that run the planner (its sentence encoder included): seconds each.
PLANNER = re.compile(r"fllm (plan|agent|bench|solve|solve-bench) ")
VOLATILE = re.compile(r"\d+(\.\d+)? s\b|\$\d|LLM calls|tokens")


@dataclass(frozen=True)
class Command:
    """One command of the README and what it must print."""

    line: int
    text: str
    expected: tuple[str, ...] = ()

    @property
    def uses_local_model(self) -> bool:
        mentions = re.findall(r"--model[ =](\S+)", self.text)
        calls_model = PLANNER.search(self.text)
        return bool(calls_model) and (not mentions or any(m.startswith("local") for m in mentions))


def _blocks(text: str) -> list[tuple[int, str, list[str]]]:
    """Return (first line number, info string, lines) of each fenced block."""
    blocks, current, info, start = [], None, "", 0
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            if current is None:
                current, info, start = [], line[3:].strip(), number + 1
            else:
                blocks.append((start, info, current))
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def _join(lines: list[str], start: int) -> list[tuple[int, str, bool]]:
    """Join continued lines; return (line number, command, marked as needing an API model)."""
    out: list[tuple[int, str, bool]] = []
    pending, first, marked = "", 0, False
    for offset, raw in enumerate(lines):
        line = raw.rstrip()
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            marked = marked or NEEDS_API in line or LONG_RUN in line
            continue
        if not pending:
            first = start + offset
        body = line[:-1] if line.endswith("\\") else line
        pending = f"{pending} {body.strip()}" if pending else body.strip()
        if not line.endswith("\\"):
            out.append((first, pending, marked))
            pending, marked = "", False
    return out


def readme_commands() -> list[Command]:
    """Every runnable command of the README, in order."""
    commands = []
    for start, info, lines in _blocks(README.read_text(encoding="utf-8")):
        if info == "bash":
            for number, text, marked in _join(lines, start):
                if not marked and not text.startswith("make "):
                    commands.append(Command(number, text))
        elif info == "" and lines and lines[0].startswith("$ "):
            commands.extend(_transcript(lines, start))
    return commands


def _transcript(lines: list[str], start: int) -> list[Command]:
    """Split a ``$ command`` / output block into commands with their expected lines."""
    found: list[Command] = []
    text, number, expected, continued = "", 0, [], False
    for offset, line in enumerate(lines):
        if line.startswith("$ ") or continued:
            if line.startswith("$ ") and text and not continued:
                found.append(Command(number, text, tuple(expected)))
                text, expected = "", []
            body = line[2:] if line.startswith("$ ") else line.strip()
            number = number if continued else start + offset
            text = f"{text} {body.rstrip(chr(92)).strip()}".strip()
            continued = line.endswith("\\")
        else:
            expected.append(line)
    if text:
        found.append(Command(number, text, tuple(expected)))
    return found


COMMANDS = readme_commands()


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder that looks like the checkout to a reader's commands, but keeps their files."""
    folder = tmp_path_factory.mktemp("readme")
    for name in LINKED:
        if (ROOT / name).exists():
            (folder / name).symlink_to(ROOT / name)
    # bench/ is copied, not linked: its scripts write their results next to themselves
    # (bench/agent_accuracy_results.json), which would change the checkout at every run.
    (folder / "bench").unlink()
    shutil.copytree(ROOT / "bench", folder / "bench", symlinks=True)
    return folder


def test_the_readme_has_commands_to_check() -> None:
    assert len(COMMANDS) >= 15
    first = COMMANDS[0].text
    assert first.startswith(".venv/bin/fllm plan domains/openagi.yaml")


def _params() -> list[object]:
    """One param per command. A command that runs the planner (plan, agent, bench, solve) takes
    seconds and is marked slow; one that calls the embedded model is marked local_model too. A
    later command that reads a file such a command wrote (`-o FILE`, `> FILE`) gets its marks:
    with the writer left out (make test-fast), the file would never be there."""
    params: list[object] = []
    written: dict[str, set[str]] = {}  # file -> the marks of the command that wrote it
    for c in COMMANDS:
        marks = {"slow"} if PLANNER.search(c.text) else set()
        marks |= {"slow", "local_model"} if c.uses_local_model else set()
        for word in c.text.split():
            marks |= written.get(word, set())
        if marks:
            written.update(dict.fromkeys(re.findall(r"(?:^|\s)(?:-o|>)\s*(\S+)", c.text), marks))
        chosen = [getattr(pytest.mark, name) for name in sorted(marks)]
        params.append(pytest.param(c, id=f"line{c.line}", marks=chosen))
    return params


@pytest.mark.parametrize("command", _params())
def test_readme_command_runs(command: Command, scratch: Path) -> None:
    proc = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command.text],
        cwd=scratch,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    printed = proc.stdout + proc.stderr
    assert "Traceback" not in printed and "internal error" not in printed, printed
    if command.expected:
        for line in command.expected:
            if line.strip() and not VOLATILE.search(line):
                assert " ".join(line.split()) in " ".join(printed.split()), (line, printed)
        wants_error = any(line.startswith(("error:", "invalid plan:")) for line in command.expected)
        assert (proc.returncode != 0) == wants_error, printed
    else:
        assert proc.returncode == 0, f"README line {command.line}: {command.text}\n{printed}"
