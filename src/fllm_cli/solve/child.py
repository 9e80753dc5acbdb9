"""Run one piece of generated Z3 code inside the sandbox process (never imported by fllm).

The parent starts ``python -I child.py LIMITS_JSON`` in an empty temporary folder with a clean
environment and writes a JSON job to stdin. This script applies the resource limits to itself,
pre-imports what the code may use, installs an audit hook that blocks network, process creation,
native-library loading and file access outside the folder, then runs the code once per horizon
and prints one result line after a marker. It imports nothing from fllm so that nothing of the
parent's process state is visible here.
"""

from __future__ import annotations

import builtins
import contextlib
import gc
import io
import json
import os
import resource
import sys
import traceback
from typing import Any

MARKER = "@@FLLM-RESULT@@"
GENERATED = "<generated>"


def apply_limits(limits: dict[str, int]) -> None:
    """Cap memory, CPU time, file size, core dumps and open files for this process."""
    memory = limits["memory_bytes"]
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = limits["cpu_seconds"]
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_bytes"], limits["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


class Blocked(PermissionError):
    """Raised by the audit hook; the message starts with 'fllm sandbox:'."""


_DENY_PREFIXES = (
    "socket.",
    "subprocess.",
    "os.exec",
    "os.spawn",
    "os.posix_spawn",
    "os.fork",
    "pty.",
    "os.system",
    "os.kill",
    "os.killpg",
    "urllib.",
    "http.",
    "ftplib.",
    "smtplib.",
    "ctypes.dlopen",
    "ctypes.dlsym",
    "ctypes.call_function",
    "webbrowser.",
    "sqlite3.",
    "winreg.",
)
_PATH_EVENTS = {
    "open",
    "os.listdir",
    "os.scandir",
    "os.chdir",
    "os.remove",
    "os.rename",
    "os.mkdir",
    "os.rmdir",
    "os.truncate",
    "shutil.rmtree",
    "os.link",
    "os.symlink",
    "os.chmod",
    "os.chown",
    "os.utime",
    "glob.glob",
}


def make_hook(workdir: str, read_roots: tuple[str, ...]) -> Any:
    """Return an audit hook allowing files only in ``workdir`` (read-only in ``read_roots``)."""
    workdir = os.path.realpath(workdir)

    def inside(path: str, roots: tuple[str, ...]) -> bool:
        real = os.path.realpath(os.path.join(workdir, path))
        return any(real == r or real.startswith(r + os.sep) for r in roots)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event.startswith(_DENY_PREFIXES):
            raise Blocked(f"fllm sandbox: '{event}' is not allowed (no network or processes)")
        if event not in _PATH_EVENTS or not args:
            return
        path = args[0]
        if isinstance(path, int) or path is None:
            return
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        path = str(path)
        writing = event != "open" or (len(args) > 1 and any(c in str(args[1]) for c in "wax+"))
        reading_ok = event in {"open", "os.listdir", "os.scandir", "glob.glob"} and not writing
        roots = (workdir, *read_roots) if reading_ok else (workdir,)
        if not inside(path, roots):
            raise Blocked(f"fllm sandbox: access to '{path}' is not allowed")

    return hook


def python_roots() -> tuple[str, ...]:
    """Return the folders holding Python's library and installed packages (read-only)."""
    roots = {os.path.realpath(p) for p in sys.path if p and os.path.isdir(p)}
    return tuple(sorted(roots))


class CappedWriter(io.StringIO):
    """A stdout replacement that keeps at most ``cap`` characters."""

    def __init__(self, cap: int) -> None:
        super().__init__()
        self.cap = cap
        self.dropped = 0

    def write(self, text: str) -> int:
        room = self.cap - self.tell()
        if room > 0:
            super().write(text[:room])
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)


def to_plain(value: Any, model: Any, depth: int = 0) -> Any:
    """Turn Z3 values (evaluated in ``model``) and containers of them into JSON values."""
    import z3

    if depth > 4:
        return None
    if isinstance(value, z3.ExprRef):
        return z3_value(model.eval(value, model_completion=True)) if model is not None else None
    if isinstance(value, bool) or value is None or isinstance(value, (int, float, str)):
        return value
    if isinstance(value, dict):
        out = {}
        for key, item in list(value.items())[:5000]:
            out[key if isinstance(key, str) else repr(key)] = to_plain(item, model, depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [to_plain(item, model, depth + 1) for item in list(value)[:5000]]
    return None


def z3_value(value: Any) -> Any:
    """Return a Python number or bool for a Z3 model value."""
    import z3

    if z3.is_true(value):
        return True
    if z3.is_false(value):
        return False
    if z3.is_int_value(value):
        return value.as_long()
    if z3.is_rational_value(value):
        fraction = value.as_fraction()
        return fraction.numerator if fraction.denominator == 1 else float(fraction)
    if z3.is_algebraic_value(value):
        return float(value.approx(12).as_decimal(12).rstrip("?"))
    return str(value)


def interesting(ns: dict[str, Any], baseline: set[str]) -> dict[str, Any]:
    """Return the names the generated code created that hold Z3 values or containers."""
    import z3

    keep = {}
    for name, value in ns.items():
        if (
            name.startswith("_")
            or name in baseline
            or (callable(value) and not isinstance(value, z3.ExprRef))
        ):
            continue
        if isinstance(value, (z3.ExprRef, dict, list, tuple, int, float)):
            keep[name] = value
    return keep


def find_solver(ns: dict[str, Any]) -> Any:
    """Return the ``solver`` the code built (or any Optimize/Solver it left in scope)."""
    import z3

    kinds = (z3.Optimize, z3.Solver)
    if isinstance(ns.get("solver"), kinds):
        return ns["solver"]
    for value in ns.values():
        if isinstance(value, kinds):
            return value
    return None


def solve_namespace(
    ns: dict[str, Any], baseline: set[str], objective: str | None
) -> dict[str, Any]:
    """Check the solver left by the code; return status, objective and the model's values."""
    import z3

    solver = find_solver(ns)
    if solver is None:
        return {"status": "no-solver"}
    status = str(solver.check())
    result: dict[str, Any] = {"status": status}
    if status != "sat":
        return result
    model = solver.model()
    values = {k: to_plain(v, model) for k, v in interesting(ns, baseline).items()}
    result["values"] = values
    if objective and objective in ns:
        target = ns[objective]
        if isinstance(target, z3.ExprRef):
            result["objective"] = z3_value(model.eval(target, model_completion=True))
        elif isinstance(target, (int, float)):
            result["objective"] = target
    return result


def run_once(
    code: Any, base: dict[str, Any], horizon: int | None, job: dict[str, Any]
) -> dict[str, Any]:
    """Execute the compiled code in a fresh copy of ``base`` and solve."""
    ns = dict(base)
    if horizon is not None:
        ns["T"] = horizon
    baseline = set(ns)
    out = CappedWriter(job["max_output"])
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            exec(code, ns)
            result = solve_namespace(ns, baseline, job.get("objective"))
    except MemoryError:
        ns.clear()
        gc.collect()
        return {
            "error": "MemoryError: the code exceeded the sandbox memory limit",
            "kind": "memory",
            "stdout": out.getvalue(),
        }
    except BaseException as exc:
        kind = "blocked" if isinstance(exc, Blocked) or "fllm sandbox:" in str(exc) else "error"
        return {"error": format_error(exc), "kind": kind, "stdout": out.getvalue()}
    result["stdout"] = out.getvalue()
    result["horizon"] = horizon
    return result


def format_error(exc: BaseException) -> str:
    """Return the traceback limited to frames of the generated code."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == GENERATED]
    lines = ["Traceback (most recent call last):\n"]
    lines += traceback.format_list(frames)
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines)


def main() -> None:
    """Read the job, run it, print the marker and one JSON line."""
    limits = json.loads(sys.argv[1])
    apply_limits(limits)
    job = json.loads(sys.stdin.read())
    result_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    import math  # noqa: F401 - pre-imported for the generated code

    import z3  # noqa: F401

    base: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    exec("from z3 import *\nimport math\nimport itertools\n", base)
    exec(compile(job.get("setup") or "", "<problem setup>", "exec"), base)
    sys.addaudithook(make_hook(os.getcwd(), python_roots()))
    try:
        code = compile(job["code"], GENERATED, "exec")
    except SyntaxError as exc:
        result = {"error": format_error(exc), "kind": "error"}
    else:
        result = run_horizons(code, base, job)
    payload = MARKER + json.dumps(result, default=str) + "\n"
    os.write(result_fd, payload.encode("utf-8"))


def run_horizons(code: Any, base: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
    """Run once, or for horizons 1..max until the solver finds a plan."""
    horizons = job.get("horizons")
    if not horizons:
        return run_once(code, base, None, job)
    tried: list[int] = []
    for horizon in horizons:
        result = run_once(code, base, horizon, job)
        if "error" in result or result.get("status") in {"sat", "no-solver"}:
            result["tried"] = [*tried, horizon]
            return result
        tried.append(horizon)
    return {"status": "unsat", "tried": tried, "horizon": None}


if __name__ == "__main__":
    main()
