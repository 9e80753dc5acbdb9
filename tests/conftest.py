"""Shared fixtures: paths, golden files, a fake model server, and the one CLI runner.

There is one way to drive the ``fllm`` command from a test, in a subprocess (two modes) or
in this process:

* ``run_fllm(*args, stdin=None, env=None, unset=(), timeout=180) -> (code, out, err)`` -- a
  subprocess through the real entry point (``python -m fllm_cli``), stdout and stderr read
  through pipes. Use it when the real process matters: environment variables (``env`` adds
  or overrides, ``unset`` removes, e.g. ``unset=("NO_COLOR",)``), exit codes through the
  error funnel, signals, output off a terminal.
* ``run_fllm_on_terminal(*args, columns=80, stdout_too=True, env=None, unset=(),
  timeout=120) -> (code, out, "")`` -- the same subprocess with stderr (and stdout, unless
  ``stdout_too=False``) on a pseudo-terminal ``columns`` wide, for what only a terminal
  shows: progress, wrapping, truncation. A terminal merges the streams, so ``out`` is all
  the terminal showed and ``err`` is always empty.
* the ``fllm_inproc`` fixture -- ``fllm_inproc(*args, stdin=None) -> (code, out, err)``,
  calling ``fllm_cli.cli.app.main(args)`` in this process (fast; error funnel included)
  and asserting that no traceback was printed.

The ``readers_silent`` fixture switches both learned readers (``search.needs``,
``search.roles``) off for one test, for tests that show another mechanism on its own.

The ``stub_server`` fixture yields a started ``tests.stub_server.StubServer``: a scripted
OpenAI-compatible server on 127.0.0.1 (replies, HTTP errors, slow or broken answers).

Shared data lives in ``tests/data/`` (``SPECS``, ``BROKEN``, ``RENDERINGS`` below).
"""

from __future__ import annotations

import io
import json
import os
import pty
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.stub_server import StubServer

ROOT = Path(__file__).resolve().parent.parent


def bench_script(name: str) -> Any:
    """Import ``bench/NAME.py`` as the bench runs it (its folder first on the path)."""
    import importlib

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(ROOT / "bench"))


DATA = Path(__file__).resolve().parent / "data"
SPECS = DATA / "specs"  # small valid domains (anbn.yaml)
BROKEN = DATA / "broken"  # invalid domains, each with its expected diagnostics
RENDERINGS = DATA / "golden"  # golden PDA renderings (dot, json, mmd, table)

# A fresh cache home per test process: no test may depend on replies cached by an earlier run,
# and each pytest-xdist worker (make test-fast) has its own. It is removed when the process
# ends: it holds the embedded model's unpacked copy (about 260 MB) once a test has loaded it.
HOME = Path(tempfile.mkdtemp(prefix="fllm-test-home-"))
os.environ["FLLM_HOME"] = str(HOME)
os.environ["COLUMNS"] = "200"
os.environ["NO_COLOR"] = "1"
os.environ.pop("FLLM_MODEL", None)
# Model processes share the cores through $FLLM_HOME/cores.lock (llm/local.py), which the
# workers' separate homes hide from each other: each worker takes its share of the cores
# instead, or two workers' models would each use every core and slow both several times.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
if _WORKERS > 1 and "FLLM_LOCAL_THREADS" not in os.environ:
    _CORES = min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
    os.environ["FLLM_LOCAL_THREADS"] = str(max(1, _CORES // _WORKERS))


def pytest_sessionfinish(session: pytest.Session) -> None:
    shutil.rmtree(HOME, ignore_errors=True)


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
def readers_silent(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both learned readers answer nothing for this test, as when their weights are missing."""
    from fllm_cli.search import needs, roles

    monkeypatch.setattr(needs, "_MODEL", {"model": None})
    monkeypatch.setattr(roles, "_MODEL", {"model": None})


@pytest.fixture
def openagi() -> str:
    """Path of the shipped OpenAGI domain."""
    return str(ROOT / "domains" / "openagi.yaml")


class CliResult(NamedTuple):
    """Exit code and captured output of one ``fllm`` command; unpacks as ``code, out, err``."""

    code: int
    out: str
    err: str


def _cli_env(env: dict[str, str] | None, unset: Iterable[str]) -> dict[str, str]:
    """This process's environment without ``unset``, then with ``env`` on top."""
    removed = set(unset)
    return {**{k: v for k, v in os.environ.items() if k not in removed}, **(env or {})}


def run_fllm(
    *args: str,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
    unset: Iterable[str] = (),
    timeout: float = 180,
) -> CliResult:
    """Run the real console entry point in a subprocess; return (code, stdout, stderr).

    ``unset`` names variables to remove from the inherited environment; ``env`` is applied
    after it, so a name in both ends up set.
    """
    proc = subprocess.run(
        [sys.executable, "-m", "fllm_cli", *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=timeout,
        env=_cli_env(env, unset),
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def run_fllm_on_terminal(
    *args: str,
    columns: int = 80,
    stdout_too: bool = True,
    env: dict[str, str] | None = None,
    unset: Iterable[str] = (),
    timeout: float = 120,
) -> CliResult:
    """Run the entry point with stderr (and stdout) on a pty; ``out`` is what the terminal showed.

    The terminal is ``columns`` wide (``COLUMNS``, with ``TERM=xterm``; ``env`` may still
    override both). With ``stdout_too=False`` stdout goes to /dev/null, so only stderr is shown.
    ``err`` is always empty. A run longer than ``timeout`` is killed and raises
    ``subprocess.TimeoutExpired``, as ``run_fllm`` does.
    """
    command = [sys.executable, "-m", "fllm_cli", *args]
    full = {**_cli_env(None, unset), "TERM": "xterm", "COLUMNS": str(columns), **(env or {})}
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            command,
            stdout=slave if stdout_too else subprocess.DEVNULL,
            stderr=slave,
            env=full,
        )
    finally:
        os.close(slave)  # the child holds its own copy; EOF comes when it closes that
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                proc.kill()
                proc.wait()
                raise subprocess.TimeoutExpired(command, timeout)
            ready, _, _ = select.select([master], [], [], left)
            if not ready:
                continue
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: every writer has closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        code = proc.wait(timeout=max(deadline - time.monotonic(), 1))
    finally:
        os.close(master)
    return CliResult(code, b"".join(chunks).decode(errors="replace"), "")


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


@pytest.fixture
def stub_server() -> Iterator[StubServer]:
    """A started fake OpenAI-compatible server (``tests/stub_server.py``), closed afterwards."""
    with StubServer() as server:
        yield server


def load_tasks() -> list[dict[str, Any]]:
    """The 185 OpenAGI benchmark tasks with their interfaces."""
    lines = (DATA / "openagi_tasks.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]
