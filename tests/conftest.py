"""Shared fixtures: paths, golden files, and the one CLI runner (two variants).

Drive the ``fllm`` command with either:

* ``run_fllm(*args, stdin=None, env=None, timeout=180) -> (code, out, err)`` -- a subprocess
  through the real entry point (``python -m fllm_cli``). Use it when the real process
  matters: environment variables, a pty, exit codes through the error funnel, signals.
* the ``fllm_inproc`` fixture -- ``fllm_inproc(*args, stdin=None) -> (code, out, err)``,
  calling ``fllm_cli.cli.app.main(args)`` in this process (fast; error funnel included)
  and asserting that no traceback was printed.

Shared data lives in ``tests/data/`` (``SPECS``, ``BROKEN``, ``RENDERINGS`` below).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
SPECS = DATA / "specs"  # small valid domains (anbn.yaml)
BROKEN = DATA / "broken"  # invalid domains, each with its expected diagnostics
RENDERINGS = DATA / "golden"  # golden PDA renderings (dot, json, mmd, table)

# A fresh cache home per run: no test may depend on replies cached by an earlier run.
os.environ["FLLM_HOME"] = tempfile.mkdtemp(prefix="fllm-test-home-")
os.environ["COLUMNS"] = "200"
os.environ["NO_COLOR"] = "1"
os.environ.pop("FLLM_MODEL", None)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="Rewrite golden files from the current output instead of comparing with them.",
    )


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Callable[[Path, str], None]:
    """Compare text with a golden file exactly; a missing file fails unless --update-golden."""
    update = bool(request.config.getoption("--update-golden"))

    def check(path: Path, text: str) -> None:
        if update:
            path.write_text(text, encoding="utf-8")
            return
        assert path.exists(), f"missing golden file {path} (create it with --update-golden)"
        assert text == path.read_text(encoding="utf-8"), f"output differs from {path}"

    return check


@pytest.fixture
def openagi() -> str:
    """Path of the shipped OpenAGI domain."""
    return str(ROOT / "domains" / "openagi.yaml")


class CliResult(NamedTuple):
    """Exit code and captured output of one ``fllm`` command; unpacks as ``code, out, err``."""

    code: int
    out: str
    err: str


def run_fllm(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None, timeout: float = 180
) -> CliResult:
    """Run the real console entry point in a subprocess; return (code, stdout, stderr)."""
    proc = subprocess.run(
        [sys.executable, "-m", "fllm_cli", *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


class InProc:
    """The ``fllm_inproc`` fixture: ``(*args, stdin=None) -> (code, out, err)``."""

    def __init__(self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
        self._capsys = capsys
        self._monkeypatch = monkeypatch

    def __call__(self, *args: str, stdin: str | None = None) -> CliResult:
        from fllm_cli.cli.app import main

        self._capsys.readouterr()
        if stdin is not None:
            self._monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        with pytest.raises(SystemExit) as exc:
            main(list(args))
        out, err = self._capsys.readouterr()
        code = exc.value.code
        status = code if isinstance(code, int) else (0 if code is None else 1)
        assert "Traceback" not in out + err
        return CliResult(status, out, err)


@pytest.fixture
def fllm_inproc(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> InProc:
    """Run ``fllm`` in-process: ``fllm_inproc("validate", path) -> (code, out, err)``."""
    return InProc(capsys, monkeypatch)


def load_tasks() -> list[dict]:
    """The 185 OpenAGI benchmark tasks with their interfaces."""
    lines = (DATA / "openagi_tasks.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]
