"""The oracle: run one case through ``python -m fllm_cli`` and classify what happened.

Bounds: a wall-clock timeout (default 20 s; the whole process group is killed) and an
address-space limit (default 2 GiB, ``RLIMIT_AS`` set in the child before exec).

The process is a fresh interpreter (``fresh_run``) or a fork of a preloaded one (a
:class:`fuzz.zygote.ForkServer`, ``run_case(..., runner=...)``); both report the same
:class:`~fuzz.zygote.RawRun`, and the classification and the checks are shared.

Outcomes (``FAILURES`` are the ones that fail a campaign):

* ``ok``             exit 0/1/2/3, no traceback, no "internal error", checks passed;
* ``internal-error`` fllm reported ``internal error`` (exit 70);
* ``traceback``      a Python traceback reached the user;
* ``bad-exit``       any other exit code (including death by a signal);
* ``timeout``        over the wall-clock bound;
* ``memory``         over the address-space bound (a MemoryError or an allocation failure);
* ``false-accept``   ``verify`` (or ``plan``) produced/accepted a plan that the independent
                     checker of :mod:`fuzz.checker` rejects;
* ``false-reject``   ``verify`` rejected (exit 1) a plan the independent checker accepts.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from fuzz import checker
from fuzz.zygote import ForkServer, RawRun, ZygoteError

FAILURES = (
    "internal-error",
    "traceback",
    "bad-exit",
    "timeout",
    "memory",
    "false-accept",
    "false-reject",
)
OK_CODES = {0, 1, 2, 3}
REPO = Path(__file__).resolve().parent.parent


@dataclass
class Case:
    """One input: files to write, the argv after ``python -m fllm_cli``, optional checks."""

    kind: str
    argv: list[str]
    files: dict[str, str] = field(default_factory=dict)
    stdin: str | None = None
    links: dict[str, str] = field(default_factory=dict)  # name in the case dir -> repo path
    # Differential check of a plan: {"domain": file, "plan": file, "inputs": [...] | None,
    # "output": str | None}. For "plan" commands the plan file is the -o output.
    check: dict | None = None
    seed: str = ""


@dataclass
class Result:
    outcome: str
    code: int | None
    seconds: float
    detail: str = ""
    stdout: str = ""
    stderr: str = ""


def _limits(memory_bytes: int):
    def apply() -> None:
        os.setsid()
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def child_env(home: str) -> dict[str, str]:
    """A small environment: no keys, no proxies, caches inside the case folder."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "HOME": home,
        "XDG_CACHE_HOME": os.path.join(home, "cache"),
        "FLLM_HOME": os.path.join(home, "fllm"),
        "FLLM_NO_CACHE": "1",
        "FLLM_MODEL": "random:0",  # never load the embedded model by default
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "COLUMNS": "100",
    }
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8", "surrogatepass"))


def fresh_run(
    argv: list[str],
    cwd: str,
    env: dict[str, str],
    stdin: bytes | None,
    timeout: float,
    memory_bytes: int,
    python: str | None = None,
    module: str = "fllm_cli",
) -> RawRun:
    """Run ``python -m MODULE ARGV`` in a fresh interpreter (one ``Popen``)."""
    cmd = [python or sys.executable, "-m", module, *argv]
    start = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_limits(memory_bytes),
    )
    try:
        out_b, err_b = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out_b, err_b = proc.communicate()
        return RawRun(None, out_b, err_b, time.monotonic() - start, True)
    return RawRun(proc.returncode, out_b, err_b, time.monotonic() - start, False)


def run_argv(
    argv: list[str],
    cwd: str,
    env: dict[str, str],
    stdin: bytes | None,
    timeout: float,
    memory_bytes: int,
    runner: ForkServer | None = None,
    python: str | None = None,
) -> RawRun:
    """``python -m fllm_cli ARGV``: a fork of ``runner``'s zygote, else a fresh interpreter
    (also when the zygote fails)."""
    if runner is not None:
        try:
            return runner.run(argv, cwd, env, stdin, timeout, memory_bytes)
        except ZygoteError as exc:
            print(f"fuzz: fork server failed ({exc}); running the case fresh", file=sys.stderr)
    return fresh_run(argv, cwd, env, stdin, timeout, memory_bytes, python)


def run_case(
    case: Case,
    timeout: float = 20.0,
    memory_mb: int = 2048,
    python: str | None = None,
    runner: ForkServer | None = None,
) -> Result:
    """Run ``case`` in a fresh temporary folder and classify the outcome.

    The process is a fresh interpreter, or with ``runner`` a fork of that zygote (see
    :mod:`fuzz.zygote`); everything else is the same.
    """
    with tempfile.TemporaryDirectory(prefix="fllm-fuzz-") as tmp:
        root = Path(tmp)
        for name, text in case.files.items():
            _write(root / name, text)
        for name, target in case.links.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(REPO / target, root / name)
        # A command line cannot carry a NUL byte (the OS refuses it before fllm runs), so a
        # generated argument with one is passed as the two characters a shell user would type.
        argv = [a.replace("\x00", "\\0") for a in case.argv]
        stdin = case.stdin.encode("utf-8", "surrogatepass") if case.stdin is not None else None
        raw = run_argv(argv, tmp, child_env(tmp), stdin, timeout, memory_mb << 20, runner, python)
        out, err = _text(raw.stdout), _text(raw.stderr)
        if raw.timed_out or raw.code is None:
            return Result("timeout", None, raw.seconds, f"over {timeout:g} s", out, err)
        outcome, detail = classify(raw.code, out, err)
        if outcome == "ok" and case.check:
            outcome, detail = differential(case, root, raw.code)
        return Result(outcome, raw.code, raw.seconds, detail, out, err)


class ForkServers:
    """Fork servers (zygotes) shared by threads: ``with servers.lease() as runner`` takes an
    idle one (starting one if none is idle) and gives it back afterwards, so there are as many
    zygotes as cases run at once.

    The lease is None (run fresh) when disabled, or once a zygote could not start (a broken
    source tree, say: the fresh runs then show the real error case by case).
    """

    def __init__(self, enabled: bool = True, python: str | None = None) -> None:
        self.enabled = enabled
        self.python = python
        self.idle: list[ForkServer] = []
        self.servers: list[ForkServer] = []
        self.lock = threading.Lock()

    @contextlib.contextmanager
    def lease(self) -> Iterator[ForkServer | None]:
        server = self._take()
        try:
            yield server
        finally:
            if server is not None:
                with self.lock:
                    self.idle.append(server)

    def _take(self) -> ForkServer | None:
        with self.lock:
            if not self.enabled:
                return None
            if self.idle:
                return self.idle.pop()
        server = ForkServer(child_env, self.python)
        try:
            server.start()
        except ZygoteError as exc:
            print(f"fuzz: no fork server ({exc}); running cases fresh", file=sys.stderr)
            with self.lock:
                self.enabled = False
            return None
        with self.lock:
            self.servers.append(server)
        return server

    def close(self) -> None:
        with self.lock:
            servers, self.servers, self.idle = self.servers, [], []
        for server in servers:
            server.close()

    def __enter__(self) -> ForkServers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _text(b: bytes) -> str:
    return b.decode("utf-8", "replace")[-20000:]


MEMORY_HINTS = ("MemoryError", "Cannot allocate memory", "std::bad_alloc", "out of memory")


def first_line(text: str, needle: str) -> str:
    for line in text.splitlines():
        if needle in line:
            return line.strip()[:300]
    return ""


def classify(code: int, out: str, err: str) -> tuple[str, str]:
    both = err + "\n" + out
    if any(h in both for h in MEMORY_HINTS):
        return "memory", first_line(both, "rror") or "memory"
    if "Traceback (most recent call last)" in both:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        return "traceback", (lines[-1] if lines else "traceback")[:300]
    if "internal error" in both or code == 70:
        return "internal-error", first_line(both, "internal error") or f"exit {code}"
    if code not in OK_CODES:
        return "bad-exit", f"exit {code}: " + (err.strip().splitlines() or [""])[-1][:300]
    return "ok", ""


def differential(case: Case, root: Path, code: int) -> tuple[str, str]:
    """Compare fllm's verdict on a plan with the independent checker's."""
    chk = case.check or {}
    plan_path = root / chk["plan"]
    if not plan_path.exists():
        return "ok", "no plan written"
    try:
        valid, reason = checker.check_plan(
            (root / chk["domain"]).read_bytes().decode("utf-8", "surrogatepass"),
            plan_path.read_bytes().decode("utf-8", "replace"),
            chk.get("inputs"),
            chk.get("output"),
        )
    except checker.Unsupported as exc:
        return "ok", f"unchecked: {exc}"
    except RecursionError:
        return "ok", "unchecked: too deep"
    if code == 0 and not valid:
        return "false-accept", f"fllm accepted, checker: {reason}"
    if code == 1 and valid and chk.get("compare_rejects", True):
        return "false-reject", "fllm rejected a plan the checker accepts"
    return "ok", "checked"


def save_finding(out_dir: Path, index: int, case: Case, res: Result) -> Path:
    """Write the case's files, the command line and the output under ``out_dir``."""
    d = out_dir / f"{res.outcome}-{case.kind}-{index:05d}"
    d.mkdir(parents=True, exist_ok=True)
    for name, text in case.files.items():
        _write(d / name, text)
    argv = " ".join(_quote(a) for a in case.argv)
    meta = {
        "kind": case.kind,
        "seed": case.seed,
        "outcome": res.outcome,
        "exit": res.code,
        "seconds": round(res.seconds, 2),
        "detail": res.detail,
        "command": f"python -m fllm_cli {argv}",
        "links": case.links,
        "stdin": case.stdin,
    }
    (d / "case.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    (d / "stdout.txt").write_text(res.stdout)
    (d / "stderr.txt").write_text(res.stderr)
    return d


def _quote(a: str) -> str:
    import shlex

    return shlex.quote(a)
