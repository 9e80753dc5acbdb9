"""Run generated code in separate, locked-down processes and bring back what happened.

Generated code never runs in the fllm process. Each run gets:

* a new ``python -I`` process (isolated mode: no PYTHON* variables, no user site, no script
  folder on ``sys.path``) started in its own session so the whole group can be killed;
* a clean environment (no variables of the user: no keys, no proxies, HOME is the run folder);
* an empty temporary working folder, deleted afterwards;
* resource limits: address space (memory), CPU seconds, file size, no core dumps; plus a
  wall-clock timeout and byte caps on everything read back, enforced here by killing the group;
* kernel-enforced isolation of the process running the code (``lockdown.py``): Landlock allows
  reading only Python's library and packages and writing only the work folder; a seccomp filter
  refuses new processes, sockets, debugging or signalling other processes and new native code;
* an audit hook (PEP 578) whose only job is to give the model readable refusal messages;
* a result channel the code cannot reach: the code runs in a worker process, and only the
  supervisor process (which runs no generated code) writes the result, after solving the
  constraints the worker stated with its own Z3 (see ``child.py`` and docs/security.md).

If the machine cannot provide the kernel layers, :func:`run_code` refuses to run the code with
:class:`~fllm_cli.errors.SandboxUnavailable` unless the caller opts in with
``allow_unisolated=True``. Every failure of the code itself (syntax error, exception, timeout,
memory, blocked access, crash) comes back as an :class:`ExecResult` with ``ok`` false and a
message for the model; nothing here raises for them.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from fllm_cli.errors import SandboxUnavailable
from fllm_cli.solve import lockdown

CHILD = Path(__file__).with_name("child.py")
RESULT_CAP = 32 * 2**20  # bytes of result JSON read back from the supervisor
STDERR_CAP = 256 * 2**10  # bytes of diagnostics read back before the group is killed
KINDS = {"ok", "error", "timeout", "memory", "disk", "blocked", "crash", "unisolated"}
STATUSES = {"sat", "unsat", "unknown", "no-solver", ""}


@dataclass(frozen=True)
class Limits:
    """Resource limits for one run of generated code."""

    timeout: float = 30.0
    memory_mb: int = 1024
    cpu_seconds: int | None = None
    max_output: int = 20000
    file_mb: int = 16
    # The work folder as a whole: files and folders, and the disk they take. Checked while the
    # code runs (a few times a second, so a fast writer may pass it by what it writes in that
    # time, each file at most file_mb) and exactly when the folder is removed.
    work_mb: int = 64
    work_entries: int = 10_000


@dataclass
class ExecResult:
    """What one sandboxed run produced."""

    ok: bool
    kind: str  # "ok", "error", "timeout", "memory", "disk", "blocked", "crash"
    status: str = ""  # solver status: sat, unsat, unknown, no-solver
    objective: Any = None
    values: dict[str, Any] = field(default_factory=dict)
    stdout: str = ""
    error: str = ""
    horizon: int | None = None
    tried: list[int] = field(default_factory=list)
    isolation: str = ""  # the layers in force while the code ran, e.g. "seccomp + landlock ..."

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


@functools.cache
def isolation_report() -> lockdown.Isolation:
    """Return which kernel isolation layers this machine offers (probed once per process)."""
    return lockdown.probe()


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
    allow_unisolated: bool = False,
    audit_hook: bool = True,
) -> ExecResult:
    """Run ``code`` after ``setup`` in the sandbox; never raises for the code's faults.

    Raises :class:`SandboxUnavailable` when the kernel isolation is missing, unless
    ``allow_unisolated`` is true. ``audit_hook=False`` leaves only the kernel layers in place
    (the escape tests use it to show those layers hold on their own).
    """
    report = isolation_report()
    if not report.complete and not allow_unisolated:
        raise _unavailable(report.missing())
    limits = limits or Limits()
    job = {
        "code": code,
        "setup": setup,
        "objective": objective,
        "horizons": horizons,
        "max_output": limits.max_output,
    }
    memory = limits.memory_mb * 2**20
    config = {
        "limits": {
            "memory_bytes": memory,
            "cpu_seconds": int(limits.cpu_seconds or max(1, int(limits.timeout) + 1)),
            "file_bytes": limits.file_mb * 2**20,
        },
        "require_isolation": not allow_unisolated,
        "audit_hook": audit_hook,
        "message_cap": max(2**20, min(64 * 2**20, memory // 8)),
    }
    workdir = tempfile.mkdtemp(prefix="fllm-solve-")
    used = WorkUsage()
    try:
        result = _spawn(job, config, limits, workdir)
    finally:
        used = remove_tree(workdir)
    over = used.over(limits)
    if over is not None and result.kind != "disk":
        result = ExecResult(False, "disk", error=over)
    if result.kind == "unisolated":
        raise _unavailable(result.error)
    return result


@dataclass
class WorkUsage:
    """What a work folder held: entries (files, folders, links) and the disk they took."""

    entries: int = 0
    disk_bytes: int = 0

    def add(self, name: str, folder: int) -> None:
        """Count entry ``name`` of the open ``folder`` (never following a link)."""
        self.entries += 1
        with contextlib.suppress(OSError):
            self.disk_bytes += os.stat(name, dir_fd=folder, follow_symlinks=False).st_blocks * 512

    def over(self, limits: Limits) -> str | None:
        """Say how the code used too much disk, else None."""
        mb = self.disk_bytes / 2**20
        if self.entries > limits.work_entries or mb > limits.work_mb:
            return (
                f"the program used too much disk: {self.entries:,} files and folders, "
                f"{mb:,.1f} MB in its work folder (at most {limits.work_entries:,} and "
                f"{limits.work_mb} MB)"
            )
        return None


def work_usage(root: str, limits: Limits) -> WorkUsage:
    """Count the work folder while the code runs, stopping once it is over ``limits``.

    Paths are walked as written: a part nested deeper than a path can be written is not
    seen here, but is counted when the folder is removed (``remove_tree``)."""
    used = WorkUsage()
    stack = [root]
    while stack and used.over(limits) is None:
        folder = stack.pop()
        try:
            fd = os.open(folder, _DIR_FLAGS)
        except OSError:
            continue
        try:
            with os.scandir(fd) as entries:
                for entry in entries:
                    used.add(entry.name, fd)
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(os.path.join(folder, entry.name))
        except OSError:
            pass
        finally:
            os.close(fd)
    return used


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def remove_tree(root: str) -> WorkUsage:
    """Remove a folder whatever its shape: no recursion and no long paths (3,000 nested
    folders made ``shutil.rmtree`` raise RecursionError and leave the folder behind), never
    following a link. Each folder inside the top one has its own folders moved up to the top
    and its files removed, so at most two folders are open at a time. Best effort: what cannot
    be removed stays. Returns what the folder held."""
    used = WorkUsage()
    try:
        top = os.open(root, _DIR_FLAGS)
    except OSError:
        return used
    moved, first = 0, True
    try:
        while True:
            with os.scandir(top) as entries:
                names = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
            if not names:
                break
            progress = False
            if first:  # the top level; deeper entries are counted inside their folder
                for name, _ in names:
                    used.add(name, top)
                first = False
            for name, is_dir in names:
                if not is_dir:
                    progress |= _unlink(name, top)
                    continue
                try:
                    inner = os.open(name, _DIR_FLAGS, dir_fd=top)
                except OSError:
                    continue
                try:
                    with os.scandir(inner) as entries:
                        children = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
                    for child, child_is_dir in children:
                        used.add(child, inner)
                        if child_is_dir:  # up to the top folder, under a fresh name
                            moved += 1
                            try:
                                os.rename(child, f".up{moved}", src_dir_fd=inner, dst_dir_fd=top)
                                progress = True
                            except OSError:
                                pass
                        else:
                            progress |= _unlink(child, inner)
                finally:
                    os.close(inner)
                try:
                    os.rmdir(name, dir_fd=top)
                    progress = True
                except OSError:
                    pass
            if not progress:
                break
    finally:
        os.close(top)
    with contextlib.suppress(OSError):
        os.rmdir(root)
    return used


def _unlink(name: str, folder: int) -> bool:
    try:
        os.unlink(name, dir_fd=folder)
        return True
    except OSError:
        return False


def _unavailable(missing: str) -> SandboxUnavailable:
    return SandboxUnavailable(
        f"the sandbox cannot isolate generated code on this machine: {missing}",
        hint="fix the kernel setup (docs/security.md), or opt in to running it unisolated",
    )


def _spawn(job: dict[str, Any], config: dict[str, Any], limits: Limits, workdir: str) -> ExecResult:
    """Start the child, feed it the job, enforce the wall clock and caps, parse its answer."""
    argv = [sys.executable, "-I", str(CHILD), json.dumps(config)]
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
        watch = (workdir, limits)
        out, err, trouble = _collect(proc, json.dumps(job).encode("utf-8"), limits.timeout, watch)
    finally:
        _kill(proc)
    timeout = limits.timeout
    if trouble.startswith("disk:"):
        return ExecResult(False, "disk", error=trouble[len("disk:") :])
    if trouble == "timeout":
        return ExecResult(
            False,
            "timeout",
            error=f"the code did not finish within {timeout:g} s "
            "(wall-clock limit); look for an endless loop or a model too large",
        )
    if trouble == "overflow":
        return ExecResult(False, "crash", error="the sandbox sent more output than allowed")
    return _parse(out, err.decode("utf-8", "replace"), proc.returncode)


def _feed(pipe: IO[bytes] | None, data: bytes) -> None:
    """Write the job to the child's stdin (in a thread: the job may exceed a pipe buffer)."""
    if pipe is None:
        return
    with contextlib.suppress(OSError):
        pipe.write(data)
    with contextlib.suppress(OSError):
        pipe.close()


WORK_POLL_SECONDS = 0.25  # how often the work folder is measured while the code runs


def _collect(
    proc: subprocess.Popen[bytes],
    data: bytes,
    timeout: float,
    watch: tuple[str, Limits] | None = None,
) -> tuple[bytes, bytes, str]:
    """Read stdout and stderr until both close; return them and "", "timeout", "overflow" or
    "disk:WHY" (the work folder of ``watch`` went over its limits)."""
    threading.Thread(target=_feed, args=(proc.stdin, data), daemon=True).start()
    assert proc.stdout is not None and proc.stderr is not None
    caps = {proc.stdout.fileno(): RESULT_CAP, proc.stderr.fileno(): STDERR_CAP}
    chunks: dict[int, list[bytes]] = {fd: [] for fd in caps}
    sizes = dict.fromkeys(caps, 0)
    deadline = time.monotonic() + timeout
    measure = time.monotonic() + WORK_POLL_SECONDS
    with selectors.DefaultSelector() as sel:
        for fd in caps:
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map():
            now = time.monotonic()
            left = deadline - now
            if left <= 0:
                return b"", b"", "timeout"
            if watch is not None and now >= measure:
                over = work_usage(*watch).over(watch[1])
                if over is not None:
                    return b"", b"", "disk:" + over
                measure = time.monotonic() + WORK_POLL_SECONDS
            wait = left if watch is None else min(left, max(0.0, measure - now))
            for key, _ in sel.select(wait):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    sel.unregister(key.fd)
                    continue
                chunks[key.fd].append(chunk)
                sizes[key.fd] += len(chunk)
                if sizes[key.fd] > caps[key.fd]:
                    return b"", b"", "overflow"
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(max(0.1, deadline - time.monotonic()))
    out, err = (b"".join(chunks[fd]) for fd in caps)
    return out, err, ""


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill the child's whole process group (the worker too, even after the supervisor quit)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


def _parse(out: bytes, err: str, code: int | None) -> ExecResult:
    """Turn the supervisor's answer into a result; anything malformed counts as a crash."""
    try:
        data = json.loads(out)
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("kind") not in KINDS:
        return ExecResult(False, *_crash(err, code))
    kind = str(data["kind"])
    text = _text(data.get("stdout"))
    isolation = _text(data.get("isolation"))
    if kind != "ok":
        return ExecResult(
            False, kind, error=_text(data.get("error")), stdout=text, isolation=isolation
        )
    status = data.get("status")
    return ExecResult(
        True,
        "ok",
        status=status if status in STATUSES else "unknown",
        objective=_scalar(data.get("objective")),
        values=data["values"] if isinstance(data.get("values"), dict) else {},
        stdout=text,
        horizon=_int(data.get("horizon")),
        tried=[h for h in data.get("tried") or [] if isinstance(h, int)]
        if isinstance(data.get("tried"), list)
        else [],
        isolation=isolation,
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _scalar(value: Any) -> Any:
    """Accept a number, bool or string as an objective; anything else becomes None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value if isinstance(value, (int, float, str)) else None


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
