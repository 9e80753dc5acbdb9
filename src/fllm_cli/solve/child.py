"""Run one piece of generated Z3 code inside the sandbox (never imported by fllm).

The parent starts ``python -I child.py CONFIG_JSON`` in an empty temporary folder with a clean
environment and writes a JSON job to stdin. Two processes take part here:

* the **supervisor** (this script's first process) reads the job, applies the resource limits,
  pre-imports Z3 and the modules the code may use, then forks the worker. It never runs any
  generated text as Python. It locks itself down too, and it is the only process holding the
  result channel (its stdout, duplicated to a private descriptor; fd 1 and 2 then point to
  stderr).
* the **worker** (the forked child) closes every descriptor but two pipes to the supervisor,
  locks itself down with Landlock and seccomp (see ``lockdown.py``), installs an audit hook that
  turns most refusals into readable messages, runs the problem setup and the generated code, and
  sends back the solver's constraints as SMT-LIB text plus the layout of the values to report.

The supervisor treats everything the worker sends as untrusted data: it checks its shape, gives
the constraints to its own Z3, solves them and evaluates the values in its own model. The code
cannot write to the result channel and cannot change what the supervisor's solver answers, so a
status or objective that Z3 did not produce for the stated constraints cannot reach fllm.
"""

from __future__ import annotations

import builtins
import contextlib
import gc
import importlib.util
import io
import json
import math
import os
import resource
import signal
import sys
import time
import traceback
from types import ModuleType
from typing import Any, NoReturn

GENERATED = "<generated>"
LEAF = "fllm!leaf!"
MAX_LEAVES = 50000
MAX_NODES = 200000
WORKER_KINDS = {"error", "memory", "blocked"}
PREIMPORT = (
    "z3", "math", "itertools", "functools", "collections", "json", "fractions", "decimal",
    "random", "statistics", "heapq", "bisect", "re", "datetime", "copy", "operator", "string",
    "typing", "dataclasses", "enum", "time", "array", "struct", "traceback", "linecache",
    "tokenize", "textwrap", "pprint", "socket", "select", "subprocess", "mmap",
    "unicodedata", "encodings.idna", "zlib", "binascii", "hashlib", "base64", "csv", "_strptime",
)  # fmt: skip


def apply_limits(limits: dict[str, int]) -> None:
    """Cap memory, CPU time, file size and core dumps for this process and the worker."""
    memory = limits["memory_bytes"]
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = limits["cpu_seconds"]
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_bytes"], limits["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def load_lockdown() -> ModuleType:
    """Load ``lockdown.py`` from this folder without importing the fllm package."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lockdown.py")
    spec = importlib.util.spec_from_file_location("fllm_lockdown", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


def preimport() -> None:
    """Import what the code may use while native libraries can still be loaded."""
    for name in PREIMPORT:
        with contextlib.suppress(ImportError):
            __import__(name)


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


# ----------------------------------------------------------------------------- worker side


def encode(value: Any, leaves: list[Any], depth: int = 0) -> list[Any]:
    """Describe a value as tagged nodes; Z3 terms become numbered leaves for the supervisor."""
    import z3

    if depth > 4:
        return ["V", None]
    if isinstance(value, z3.ExprRef):
        if len(leaves) >= MAX_LEAVES:
            return ["V", None]
        leaves.append(value)
        return ["L", len(leaves) - 1]
    if isinstance(value, float) and not math.isfinite(value):
        return ["V", str(value)]
    if isinstance(value, bool) or value is None or isinstance(value, (int, float, str)):
        return ["V", value]
    if isinstance(value, dict):
        items = list(value.items())[:5000]
        pairs = [
            [k if isinstance(k, str) else repr(k), encode(v, leaves, depth + 1)] for k, v in items
        ]
        return ["D", pairs]
    if isinstance(value, (list, tuple)):
        return ["A", [encode(item, leaves, depth + 1) for item in list(value)[:5000]]]
    return ["V", None]


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


def export_problem(ns: dict[str, Any], baseline: set[str], objective: str | None) -> dict[str, Any]:
    """Return the solver's constraints as SMT-LIB text and the layout of the values to report."""
    import z3

    solver = find_solver(ns)
    if solver is None:
        return {"status": "no-solver"}
    leaves: list[Any] = []
    values = {k: encode(v, leaves) for k, v in interesting(ns, baseline).items()}
    target = None
    if objective and isinstance(ns.get(objective), z3.ExprRef):
        target = encode(ns[objective], leaves)
    for i, leaf in enumerate(leaves):
        solver.add(z3.Const(f"{LEAF}{i}", leaf.sort()) == leaf)
    kind = "optimize" if isinstance(solver, z3.Optimize) else "solver"
    return {"solver": kind, "smt2": solver.sexpr(), "values": values, "objective": target}


def run_once(
    code: Any, base: dict[str, Any], horizon: int | None, job: dict[str, Any]
) -> dict[str, Any]:
    """Execute the compiled code in a fresh copy of ``base`` and export its problem."""
    ns = dict(base)
    if horizon is not None:
        ns["T"] = horizon
    baseline = set(ns)
    out = CappedWriter(job["max_output"])
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            exec(code, ns)
            result = export_problem(ns, baseline, job.get("objective"))
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
    return result


def format_error(exc: BaseException) -> str:
    """Return the traceback limited to frames of the generated code."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == GENERATED]
    lines = ["Traceback (most recent call last):\n"]
    lines += traceback.format_list(frames)
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines)


def send(fd: int, message: dict[str, Any]) -> None:
    """Write one JSON line to ``fd``."""
    data = (json.dumps(message, default=str) + "\n").encode("utf-8")
    while data:
        data = data[os.write(fd, data) :]


def keep_only_fds(keep: set[int]) -> None:
    """Point 0, 1 and 2 to /dev/null and close every other descriptor not in ``keep``."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    top = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    top = top if 0 < top < 1 << 20 else 1 << 16
    previous = 2
    for fd in [*sorted(keep), top]:
        if fd > previous + 1:
            os.closerange(previous + 1, fd)
        previous = fd


def worker(ctrl: int, msg: int, job: dict[str, Any], config: dict[str, Any]) -> NoReturn:
    """The forked process that runs generated code; it exits instead of returning."""
    status = 1
    try:
        worker_main(ctrl, msg, job, config)
        status = 0
    finally:
        os._exit(status)


def worker_main(ctrl: int, msg: int, job: dict[str, Any], config: dict[str, Any]) -> None:
    """Lock down, report the isolation, then run the code for each horizon asked for."""
    parent = os.getppid()
    lockdown = sys.modules["fllm_lockdown"]
    lockdown.set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != parent:
        return
    keep_only_fds({ctrl, msg})
    workdir = os.getcwd()
    roots = lockdown.read_roots()
    try:
        applied = lockdown.lock(roots, [workdir], required=config["require_isolation"])
    except lockdown.LockdownError as exc:
        send(msg, {"unavailable": str(exc)})
        return
    # Written before any untrusted text runs, so the supervisor can rely on this line.
    send(msg, {"isolation": applied.summary()})
    base: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    exec("from z3 import *\nimport math\nimport itertools\n", base)
    if config["audit_hook"]:
        sys.addaudithook(make_hook(workdir, tuple(roots)))
    serve(ctrl, msg, job, base)


def serve(ctrl: int, msg: int, job: dict[str, Any], base: dict[str, Any]) -> None:
    """Answer each horizon the supervisor asks for with one message."""
    setup_error = None
    try:
        exec(compile(job.get("setup") or "", "<problem setup>", "exec"), base)
        code = compile(job["code"], GENERATED, "exec")
    except BaseException as exc:  # a syntax error, or the problem setup itself failed
        setup_error = {"error": format_error(exc), "kind": "error"}
    requests = os.fdopen(ctrl, "r", encoding="utf-8")
    for line in requests:
        if setup_error is not None:
            send(msg, setup_error)
            continue
        horizon = json.loads(line)
        send(msg, run_once(code, base, horizon, job))


# ------------------------------------------------------------------------- supervisor side


class Lines:
    """Read newline-terminated messages from a pipe, refusing any longer than ``cap`` bytes."""

    def __init__(self, fd: int, cap: int) -> None:
        self.fd = fd
        self.cap = cap
        self.buffer = bytearray()
        self.overflow = False
        self.eof = False

    def next(self) -> bytes | None:
        """Return the next line; None at end of file or when the line is too long."""
        end = self.buffer.find(b"\n")
        while end < 0:
            if len(self.buffer) > self.cap:
                self.overflow = True
                return None
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                self.eof = True
                return None
            found = chunk.find(b"\n")
            end = len(self.buffer) + found if found >= 0 else -1
            self.buffer += chunk
        line = bytes(self.buffer[:end])
        del self.buffer[: end + 1]
        self.overflow = len(line) > self.cap
        return None if self.overflow else line


def read_message(lines: Lines) -> dict[str, Any] | None:
    """Return the worker's next message if it is a JSON object, else None."""
    raw = lines.next()
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def worker_death(pid: int, lines: Lines) -> dict[str, Any]:
    """Explain why the worker gave no (readable) answer; the parent kills it afterwards."""
    if lines.overflow:
        return {"kind": "crash", "error": "the code sent more output than the sandbox allows"}
    if not lines.eof:
        return {"kind": "crash", "error": "the sandbox worker sent a malformed message"}
    status = wait_briefly(pid)
    if status is None:
        return {"kind": "crash", "error": "the code closed the sandbox's result channel"}
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.valid_signals() else str(sig)
        if sig == signal.SIGXCPU:
            return {"kind": "timeout", "error": "the code used up its CPU-time limit (SIGXCPU)"}
        if sig in (signal.SIGKILL, signal.SIGSEGV):
            return {
                "kind": "memory",
                "error": f"the sandbox process was killed ({name}), most likely out of memory",
            }
        return {"kind": "crash", "error": f"the sandbox process died from signal {name}"}
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
    return {"kind": "crash", "error": f"the sandbox process exited ({code}) without a result"}


def wait_briefly(pid: int, seconds: float = 2.0) -> int | None:
    """Return the worker's wait status, or None if it is still running after ``seconds``."""
    for _ in range(int(seconds / 0.01)):
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return 0
        if done:
            return status
        time.sleep(0.01)
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


class Decoder:
    """Rebuild the worker's value layout with leaves taken from the supervisor's model."""

    def __init__(self, leaves: dict[int, Any]) -> None:
        self.leaves = leaves
        self.nodes = 0

    def node(self, item: Any, depth: int = 0) -> Any:
        """Decode one tagged node; anything malformed becomes None."""
        self.nodes += 1
        if depth > 6 or self.nodes > MAX_NODES or not isinstance(item, list) or len(item) != 2:
            return None
        tag, body = item
        if tag == "L":
            return self.leaves.get(body) if isinstance(body, int) else None
        if tag == "V":
            return body if body is None or isinstance(body, (bool, int, float, str)) else None
        if tag == "A" and isinstance(body, list):
            return [self.node(x, depth + 1) for x in body]
        if tag == "D" and isinstance(body, list):
            pairs = [p for p in body if isinstance(p, list) and len(p) == 2]
            return {str(k): self.node(v, depth + 1) for k, v in pairs if isinstance(k, str)}
        return None


def model_leaves(model: Any) -> dict[int, Any]:
    """Return the values of the ``fllm!leaf!N`` constants in ``model``."""
    leaves = {}
    for decl in model.decls():
        name = decl.name()
        if decl.arity() == 0 and name.startswith(LEAF) and name[len(LEAF) :].isdigit():
            leaves[int(name[len(LEAF) :])] = z3_value(model[decl])
    return leaves


def solve_message(message: dict[str, Any]) -> dict[str, Any]:
    """Solve the constraints the worker stated, with the supervisor's own Z3."""
    import z3

    text, values = message.get("smt2"), message.get("values")
    if not isinstance(text, str) or not isinstance(values, dict):
        return {"kind": "crash", "error": "the sandbox sent a malformed problem"}
    solver = z3.Optimize() if message.get("solver") == "optimize" else z3.Solver()
    try:
        solver.from_string(text)
    except z3.Z3Exception as exc:
        return {"kind": "error", "error": f"Z3 could not read the stated constraints back: {exc}"}
    status = str(solver.check())
    if status != "sat":
        return {"kind": "ok", "status": status}
    decoder = Decoder(model_leaves(solver.model()))
    result = {
        "kind": "ok",
        "status": "sat",
        "values": {str(k): decoder.node(v) for k, v in values.items()},
    }
    target = message.get("objective")
    if isinstance(target, list) and len(target) == 2 and target[0] == "L":
        result["objective"] = decoder.node(target)  # only a term the solver evaluated
    return result


def judge(message: dict[str, Any] | None, lines: Lines, pid: int, cap: int) -> dict[str, Any]:
    """Turn one worker message into a result (or explain its death)."""
    if message is None:
        return worker_death(pid, lines)
    stdout = message.get("stdout")
    stdout = stdout[:cap] if isinstance(stdout, str) else ""
    if "error" in message:
        kind = message.get("kind")
        kind = kind if kind in WORKER_KINDS else "error"
        return {"kind": kind, "error": str(message["error"])[:20000], "stdout": stdout}
    if message.get("status") == "no-solver":
        return {"kind": "ok", "status": "no-solver", "stdout": stdout}
    return {**solve_message(message), "stdout": stdout}


def supervise(pid: int, ctrl: int, msg: int, job: dict[str, Any], cap: int) -> dict[str, Any]:
    """Drive the worker over the horizons and build the final result."""
    lines = Lines(msg, cap)
    first = read_message(lines)
    if first is None:
        return worker_death(pid, lines)
    if "unavailable" in first:
        return {"kind": "unisolated", "error": str(first["unavailable"])}
    isolation = str(first.get("isolation", ""))
    horizons = job.get("horizons") or [None]
    tried: list[int] = []
    result: dict[str, Any] = {"kind": "ok", "status": "unsat"}
    for horizon in horizons:
        try:
            os.write(ctrl, (json.dumps(horizon) + "\n").encode())
        except OSError:  # the worker is gone
            lines.eof = True
            result = worker_death(pid, lines)
            break
        result = judge(read_message(lines), lines, pid, job["max_output"])
        result["horizon"] = horizon
        if horizon is not None:
            tried.append(horizon)
        if result["kind"] != "ok" or result.get("status") in {"sat", "no-solver"}:
            break
    else:
        if job.get("horizons"):
            result = {"kind": "ok", "status": "unsat", "horizon": None, "stdout": ""}
    result["tried"] = tried
    result["isolation"] = isolation
    return result


def main() -> None:
    """Read the job, fork the worker, supervise it and write one JSON result."""
    config = json.loads(sys.argv[1])
    job = json.loads(sys.stdin.read())
    result_fd = os.dup(1)
    os.dup2(2, 1)  # native output of Z3 must never reach the result channel
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    apply_limits(config["limits"])
    lockdown = load_lockdown()
    preimport()
    ctrl_r, ctrl_w = os.pipe()
    msg_r, msg_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(result_fd)
        os.close(ctrl_w)
        os.close(msg_r)
        worker(ctrl_r, msg_w, job, config)
    os.close(ctrl_r)
    os.close(msg_w)
    try:
        lockdown.lock(lockdown.read_roots(), [], required=config["require_isolation"])
    except lockdown.LockdownError as exc:
        result = {"kind": "unisolated", "error": str(exc)}
    else:
        result = supervise(pid, ctrl_w, msg_r, job, config["message_cap"])
    send(result_fd, result)


if __name__ == "__main__":
    main()
