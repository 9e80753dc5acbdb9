"""Run generated code in a separate, limited Python process and bring back what happened.

Generated code never runs in the fllm process. Each run gets:

* a new ``python -I`` process (isolated mode: no PYTHON* variables, no user site, no script
  folder on ``sys.path``) started in its own session so the whole group can be killed;
* a clean environment (no variables of the user: no keys, no proxies, HOME is the run folder);
* an empty temporary working folder, deleted afterwards;
* limits the child sets on itself first thing: address space (memory), CPU seconds, file size,
  no core dumps; plus a wall-clock timeout enforced here by killing the process group;
* an audit hook (PEP 578) installed before the code runs that refuses sockets, subprocesses,
  ``os.system``/exec/fork, loading native libraries, and files outside the run folder (Python's
  own library folders stay readable so ``import`` works).

Every failure (syntax error, exception, timeout, memory, blocked access, crash) comes back as an
:class:`ExecResult` with ``ok`` false and a message for the model; nothing here raises for them.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHILD = Path(__file__).with_name("child.py")
MARKER = "@@FLLM-RESULT@@"


@dataclass(frozen=True)
class Limits:
    """Resource limits for one run of generated code."""

    timeout: float = 30.0
    memory_mb: int = 1024
    cpu_seconds: int | None = None
    max_output: int = 20000
    file_mb: int = 16


@dataclass
class ExecResult:
    """What one sandboxed run produced."""

    ok: bool
    kind: str  # "ok", "error", "timeout", "memory", "blocked", "crash"
    status: str = ""  # solver status: sat, unsat, unknown, no-solver
    objective: Any = None
    values: dict[str, Any] = field(default_factory=dict)
    stdout: str = ""
    error: str = ""
    horizon: int | None = None
    tried: list[int] = field(default_factory=list)

    def feedback(self, limit: int = 6000) -> str:
        """Return the execution feedback shown to the model."""
        if not self.ok:
            return f"RUNTIME ERROR ({self.kind}):\n{self.error}".strip()[:limit]
        if self.status != "sat":
            tried = f" (tried horizons {self.tried})" if self.tried else ""
            return f"The solver cannot find a solution: status {self.status}{tried}."
        parts = ["solver status: sat"]
        if self.horizon is not None:
            parts.append(f"plan horizon T = {self.horizon}")
        if self.objective is not None:
            parts.append(f"objective value: {self.objective}")
        parts.append("values: " + json.dumps(compact(self.values), default=str))
        if self.stdout.strip():
            parts.append("printed output:\n" + self.stdout.strip())
        return "\n".join(parts)[:limit]


def compact(values: dict[str, Any]) -> dict[str, Any]:
    """Drop false entries of boolean maps so action and predicate tables stay readable."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        if isinstance(value, dict) and value and all(isinstance(v, bool) for v in value.values()):
            out[name] = {k: True for k, v in value.items() if v}
        else:
            out[name] = value
    return out


def clean_env(workdir: str) -> dict[str, str]:
    """Return the child's whole environment: nothing inherited from the user."""
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": workdir,
        "TMPDIR": workdir,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
    }


def run_code(
    code: str,
    *,
    setup: str = "",
    objective: str | None = None,
    horizons: list[int] | None = None,
    limits: Limits | None = None,
) -> ExecResult:
    """Run ``code`` after ``setup`` in a sandboxed process; never raises for the code's faults."""
    limits = limits or Limits()
    job = {
        "code": code,
        "setup": setup,
        "objective": objective,
        "horizons": horizons,
        "max_output": limits.max_output,
    }
    child_limits = {
        "memory_bytes": limits.memory_mb * 2**20,
        "cpu_seconds": int(limits.cpu_seconds or max(1, int(limits.timeout) + 1)),
        "file_bytes": limits.file_mb * 2**20,
    }
    workdir = tempfile.mkdtemp(prefix="fllm-solve-")
    try:
        return _spawn(job, child_limits, limits.timeout, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _spawn(
    job: dict[str, Any], child_limits: dict[str, Any], timeout: float, workdir: str
) -> ExecResult:
    """Start the child, feed it the job, enforce the wall clock and parse its answer."""
    argv = [sys.executable, "-I", str(CHILD), json.dumps(child_limits)]
    try:
        proc = subprocess.Popen(
            argv,
            cwd=workdir,
            env=clean_env(workdir),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        return ExecResult(False, "crash", error=f"cannot start the sandbox: {exc.strerror}")
    try:
        out, err = proc.communicate(json.dumps(job).encode("utf-8"), timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        return ExecResult(
            False,
            "timeout",
            error=f"the code did not finish within {timeout:g} s "
            "(wall-clock limit); look for an endless loop or a model too large",
        )
    finally:
        _kill(proc)
    return _parse(out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), proc.returncode)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill the child's whole process group and reap it."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _parse(out: str, err: str, code: int | None) -> ExecResult:
    """Turn the child's output and exit status into a result."""
    if MARKER not in out:
        return ExecResult(False, *_crash(err, code))
    data = json.loads(out.rsplit(MARKER, 1)[1].strip() or "{}")
    stdout = str(data.get("stdout", ""))
    if "error" in data:
        return ExecResult(
            False, str(data.get("kind", "error")), error=str(data["error"]), stdout=stdout
        )
    return ExecResult(
        True,
        "ok",
        status=str(data.get("status", "")),
        objective=data.get("objective"),
        values=dict(data.get("values") or {}),
        stdout=stdout,
        horizon=data.get("horizon"),
        tried=list(data.get("tried") or []),
    )


def _crash(err: str, code: int | None) -> tuple[str, str]:
    """Explain a child that died without answering."""
    if code is not None and code < 0:
        sig = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        if -code == signal.SIGXCPU:
            return "timeout", "the code used up its CPU-time limit (SIGXCPU)"
        if -code in (signal.SIGKILL, signal.SIGSEGV):
            return "memory", f"the sandbox process was killed ({sig}), most likely out of memory"
        return "crash", f"the sandbox process died from signal {sig}"
    tail = err.strip().splitlines()[-3:]
    if any("MemoryError" in line for line in tail):
        return "memory", "MemoryError: the code exceeded the sandbox memory limit"
    return "crash", "the sandbox process exited without a result: " + " | ".join(tail)
