"""A fork server ("zygote") for the fuzz oracle: ``python -m fllm_cli`` without the start-up cost.

Starting an interpreter and importing fllm costs about a second of CPU per case, most of a
campaign. The zygote is one interpreter, started like a case's (same Python, same environment
basics), that imports what ``python -m fllm_cli`` imports at start-up and then only forks. Each
case is a fresh ``os.fork()`` of that pristine process, set up the way ``subprocess.Popen`` and
the interpreter would set up a fresh ``python -m fllm_cli ARGS``:

* standard streams are pipes (stdin: a pipe fed with the case's input, or ``/dev/null``), and
  ``sys.stdin``/``stdout``/``stderr`` are rebuilt on them as the interpreter builds them
  (encoding, errors, buffering, line buffering, names); no other descriptor of the zygote
  survives;
* ``setsid()``, ``RLIMIT_AS`` and ``RLIMIT_CORE`` as :func:`fuzz.oracle._limits`; the case folder
  as working directory and ``sys.path[0]`` (what ``-m`` does); ``os.environ`` replaced by the
  case's environment; ``sys.argv`` decoded from the bytes a real command line would carry;
* the package's real ``__main__`` runs through ``runpy._run_module_as_main``, the function
  behind ``-m``, in a fresh ``__main__`` module. Nothing is caught: ``SystemExit`` and the normal
  end go through the interpreter's own shutdown (atexit handlers, non-daemon threads, flushing
  the streams, exit status 120 when that fails), and an uncaught exception prints its
  traceback (without the zygote's own frames) and exits 1, as a fresh interpreter does.

The zygote waits for the case as ``Popen.communicate`` does (until both output pipes reach end
of file and the process has ended, or the timeout), kills the case's process group on timeout,
and answers with the exit code. It never runs fllm code itself beyond the imports, and it stays
single-threaded, so every fork starts from the same state. State a case changes (module caches,
``os.environ``, the current folder) dies with its process.

The protocol (one JSON object per line): the zygote first writes ``{"ready": true, "pid": N,
"preload_seconds": S, "preload_output": text}`` (or ``{"ready": false, "error": ...}``, then
exits); each request ``{"module", "argv", "cwd", "env", "stdin": path | null, "stdout": path,
"stderr": path, "timeout", "memory_bytes"}`` gets ``{"pid": N}`` once the case runs, then
``{"code": int | null, "seconds": float, "timed_out": bool}`` (or a single ``{"error": ...}``).
The case's output is written to the two paths.

:class:`ForkServer` is the client: it starts a zygote, restarts it when it has died, and runs
cases through it. It is not thread-safe; use one per thread.

This file is also the zygote's script (``python fuzz/zygote.py MODULE...``). At module level it
imports only the standard library, so the zygote holds nothing of the fuzz harness.
"""

from __future__ import annotations

import builtins
import contextlib
import gc
import importlib.machinery
import io
import json
import os
import resource
import runpy
import selectors
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import types
from collections.abc import Callable
from dataclasses import dataclass

SCRIPT = os.path.abspath(__file__)
# The variables the interpreter itself reads at start-up: a case must not differ from the zygote
# in any of them (the fork inherits the zygote's hash seed, locale and I/O encoding).
STARTUP_PREFIXES = ("PYTHON", "LANG", "LC_")
# What ``python -m fllm_cli`` imports before it reads its arguments (fllm_cli/__main__.py) ...
STARTUP = ("fllm_cli", "fllm_cli.cli.app")
# ... and what every command then imports on first use (typer's parameter conversion pulls in
# pydantic: 0.2-0.3 s a case). "?" marks them optional. These import no fllm code, and read no
# variable a case sets differently (HOME, XDG_CACHE_HOME, FLLM_HOME) except through sysconfig's
# cache, which the child refreshes (_refresh_env_caches).
LAZY = (
    "?typer._adapters",
    "?typer._click.decorators",
    "?pydantic.plugin._loader",
    "?rich._emoji_codes",
    "?encodings.unicode_escape",
)
# `fllm_cli.cli.app` imports only the module of the command a run names (build_app); the zygote
# imports them all once, so a case does not pay for its command's imports. They read no
# environment variable at import time.
COMMANDS = (
    "fllm_cli.cli.plan",
    "fllm_cli.cli.core",
    "fllm_cli.cli.bench",
    "fllm_cli.cli.report",
    "fllm_cli.cli.agent",
    "fllm_cli.cli.solve",
    "fllm_cli.cli.tools",
    "fllm_cli.cli.serve",
)
PRELOAD = STARTUP + LAZY + COMMANDS
# After a timeout the group is killed; output still in flight is read for at most this long
# (Popen.communicate would wait forever for a process outside the group holding a pipe).
DRAIN_AFTER_KILL = 10.0


# -- the zygote ------------------------------------------------------------------------------


def _startup_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(STARTUP_PREFIXES)}


def _open_fds() -> set[int]:
    listed = {int(name) for name in os.listdir("/proc/self/fd")}
    return {fd for fd in listed if _is_open(fd)}  # not the listing's own descriptor


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


class _Zygote:
    def __init__(self, modules: list[str]) -> None:
        # The protocol runs on two private descriptors; 0 and 1 point at /dev/null meanwhile.
        self.proto_in, self.proto_out = os.dup(0), os.dup(1)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)
        self.env = _startup_env(dict(os.environ))
        # What ``-m`` puts first on sys.path: the current folder (the script's folder would
        # make the fuzz modules importable).
        sys.path[0] = os.getcwd()
        start = time.monotonic()
        # Anything the imports print (a warning, say) would be in every fresh case's stderr,
        # but a fork never prints it again: catch it, and tell the client.
        saved_err = os.dup(2)
        caught = os.open("preload-output", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(caught, 2)
        try:
            for name in modules:
                if name.startswith("?"):  # a lazy import: best effort (the case retries it)
                    with contextlib.suppress(Exception):
                        __import__(name[1:])
                else:
                    __import__(name)
        except BaseException as exc:  # a broken source tree: the client falls back to fresh runs
            self.reply({"ready": False, "error": f"{type(exc).__name__}: {exc}"})
            raise SystemExit(1) from None
        finally:
            sys.stderr.flush()
            os.dup2(saved_err, 2)
            os.close(saved_err)
            os.lseek(caught, 0, os.SEEK_SET)
            self.preload_output = os.read(caught, 4096).decode("utf-8", "replace")
            os.close(caught)
        # Garbage from the imports goes now, and what is left is frozen: a child's collections
        # and its shutdown then leave those objects' pages alone instead of copying them all.
        gc.collect()
        gc.freeze()
        self.preload_seconds = time.monotonic() - start
        # Descriptors the imports opened belong to the case too (a fresh process has them);
        # every other one is the zygote's and is closed in the child.
        self.import_fds = _open_fds() - {self.proto_in, self.proto_out}
        self.buffer = b""

    def reply(self, obj: dict) -> None:
        data = (json.dumps(obj) + "\n").encode()
        while data:
            data = data[os.write(self.proto_out, data) :]

    def requests(self):
        while True:
            while b"\n" not in self.buffer:
                chunk = os.read(self.proto_in, 65536)
                if not chunk:
                    return
                self.buffer += chunk
            line, self.buffer = self.buffer.split(b"\n", 1)
            if line.strip():
                yield json.loads(line)

    def serve(self) -> dict | None:
        """Answer requests until end of input (returns None); in a forked child, return its
        request instead (the caller then becomes the case)."""
        self.reply(
            {
                "ready": True,
                "pid": os.getpid(),
                "preload_seconds": self.preload_seconds,
                "preload_output": self.preload_output,
            }
        )
        for req in self.requests():
            if _startup_env(req["env"]) != self.env:
                self.reply(
                    {"error": "the case's PYTHON*/LANG/LC_* variables differ from the zygote's"}
                )
                continue
            try:
                child = self.run(req)
            except OSError as exc:
                self.reply({"error": f"{type(exc).__name__}: {exc}"})
                continue
            if child is not None:
                return child
        return None

    def run(self, req: dict) -> dict | None:
        stdin_data = None
        if req["stdin"] is not None:
            with open(req["stdin"], "rb") as f:
                stdin_data = f.read()
        # Popen's DEVNULL is opened read-write.
        in_r, in_w = os.pipe() if stdin_data is not None else (os.open(os.devnull, os.O_RDWR), -1)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        sys.stderr.flush()
        start = time.monotonic()
        try:
            pid = os.fork()
        except OSError:
            for fd in (in_r, in_w, out_r, out_w, err_r, err_w):
                if fd >= 0:
                    os.close(fd)
            raise
        if pid == 0:
            _setup_child(req, in_r, out_w, err_w, self.import_fds)
            return req
        for fd in (in_r, out_w, err_w):
            os.close(fd)
        self.reply({"pid": pid})  # lets the client kill the case if it gives up on the zygote
        try:
            code, timed_out = _communicate(
                pid, stdin_data, in_w, out_r, err_r, req, start + float(req["timeout"])
            )
        finally:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)  # no-op unless the case is still running
        self.reply({"code": code, "seconds": time.monotonic() - start, "timed_out": timed_out})
        return None


def _communicate(
    pid: int,
    stdin_data: bytes | None,
    in_w: int,
    out_r: int,
    err_r: int,
    req: dict,
    deadline: float,
) -> tuple[int | None, bool]:
    """``Popen.communicate(input, timeout)`` for a forked child: feed stdin, copy stdout and
    stderr to their files, wait for the end of both pipes and of the process."""
    sel = selectors.DefaultSelector()
    sinks: dict[int, io.BufferedWriter] = {}
    pidfd = -1
    status: int | None = None
    timed_out = False
    try:
        sinks[out_r] = open(req["stdout"], "wb")  # noqa: SIM115 - closed below
        sinks[err_r] = open(req["stderr"], "wb")  # noqa: SIM115
        for fd in sinks:
            sel.register(fd, selectors.EVENT_READ)
        pending = memoryview(stdin_data or b"")
        if in_w >= 0:
            if pending:
                os.set_blocking(in_w, False)
                sel.register(in_w, selectors.EVENT_WRITE)
            else:
                os.close(in_w)
                in_w = -1
        if hasattr(os, "pidfd_open"):
            pidfd = os.pidfd_open(pid)
            sel.register(pidfd, selectors.EVENT_READ)
        kill_deadline = None
        while True:
            if status is None and pidfd < 0:
                done, st = os.waitpid(pid, os.WNOHANG)
                if done:
                    status = st
            if status is not None and len(sel.get_map()) == 0:
                break
            now = time.monotonic()
            if not timed_out and now >= deadline:
                timed_out = True
                with contextlib.suppress(OSError):
                    os.killpg(pid, signal.SIGKILL)
                kill_deadline = now + DRAIN_AFTER_KILL
            if timed_out and kill_deadline is not None and now >= kill_deadline:
                break  # something outside the group holds a pipe: stop reading
            limit = (kill_deadline if timed_out else deadline) - now
            if pidfd < 0 and status is None:  # no pidfd: poll for the end of the process
                limit = min(limit, 0.005)
            for key, _ in sel.select(max(limit, 0)):
                fd = key.fd
                if fd == pidfd:
                    sel.unregister(pidfd)
                    os.close(pidfd)
                    pidfd = -1
                elif fd == in_w:
                    try:
                        pending = pending[os.write(in_w, pending[:65536]) :]
                    except BrokenPipeError:
                        pending = pending[:0]
                    if not pending:
                        sel.unregister(in_w)
                        os.close(in_w)
                        in_w = -1
                else:
                    data = os.read(fd, 65536)
                    if data:
                        sinks[fd].write(data)
                    else:
                        sel.unregister(fd)
        if status is None:
            if timed_out:
                _, status = os.waitpid(pid, 0)
            else:  # cannot happen: the loop ends with a status or after a timeout
                os.killpg(pid, signal.SIGKILL)
                _, status = os.waitpid(pid, 0)
    finally:
        sel.close()
        for fd in (in_w, pidfd, out_r, err_r):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        for f in sinks.values():
            f.close()
    return (None if timed_out else os.waitstatus_to_exitcode(status)), timed_out


def _std_stream(fd: int, name: str, template: io.TextIOWrapper) -> io.TextIOWrapper:
    """What the interpreter's ``create_stdio`` makes of descriptor ``fd`` (buffered mode)."""
    write = fd != 0
    buf = io.open(fd, "wb" if write else "rb", -1, closefd=False)  # noqa: UP020, SIM115
    buf.raw.name = name
    line_buffering = buf.raw.isatty() or fd == 2
    stream = io.TextIOWrapper(
        buf,
        template.encoding,
        template.errors,
        "\n",
        line_buffering=line_buffering,
        write_through=False,
    )
    stream.mode = "w" if write else "r"  # type: ignore[misc]
    return stream


def _setup_child(req: dict, in_r: int, out_w: int, err_w: int, import_fds: set[int]) -> None:
    """In the forked child: become ``python -m MODULE ARGV`` as started by ``Popen``."""
    try:
        # Popen's child: the three pipes on 0/1/2, every other descriptor closed, the folder;
        # then oracle._limits (setsid and the limits).
        for fd, target in ((in_r, 0), (out_w, 1), (err_w, 2)):
            os.dup2(fd, target)
        for fd in _open_fds() - import_fds - {0, 1, 2}:
            with contextlib.suppress(OSError):
                os.close(fd)
        os.chdir(req["cwd"])
        os.setsid()
        memory = int(req["memory_bytes"])
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        # What the new interpreter would start with.
        os.environ.clear()
        os.environ.update(req["env"])
        _refresh_env_caches()
        sys.stdin = sys.__stdin__ = _std_stream(0, "<stdin>", sys.__stdin__)  # type: ignore[misc]
        sys.stdout = sys.__stdout__ = _std_stream(1, "<stdout>", sys.__stdout__)  # type: ignore[misc]
        sys.stderr = sys.__stderr__ = _std_stream(2, "<stderr>", sys.__stderr__)  # type: ignore[misc]
        # The command line as the OS delivers it: bytes, decoded by the interpreter.
        argv = [os.fsdecode(os.fsencode(a)) for a in req["argv"]]
        sys.argv = ["-m", *argv]
        sys.orig_argv = [sys.executable, "-m", req["module"], *argv]
        sys.path[0] = os.getcwd()
        main = types.ModuleType("__main__")  # as the interpreter makes it
        main.__annotations__ = {}
        main.__builtins__ = builtins  # type: ignore[attr-defined]
        main.__loader__ = importlib.machinery.BuiltinImporter
        sys.modules["__main__"] = main
    except BaseException as exc:  # never return into the zygote's loop
        with contextlib.suppress(OSError):
            os.write(2, f"fuzz zygote: setting up the case failed: {exc!r}\n".encode())
        os._exit(255)


def _refresh_env_caches() -> None:
    """Recompute what the zygote's imports derived from its own environment.

    The case's environment differs from the zygote's only in HOME, XDG_CACHE_HOME and FLLM_HOME
    (oracle.child_env). The one import-time read of those is sysconfig's user base (HOME), cached
    once anything asks for a config variable (zoneinfo does, under pydantic).
    """
    cached = getattr(sysconfig, "_CONFIG_VARS", None)
    if cached and "userbase" in cached:
        cached["userbase"] = sysconfig._getuserbase()  # type: ignore[attr-defined]


def _become(req: dict) -> None:
    """Run the module as ``-m`` does; an uncaught exception ends as in a fresh interpreter."""
    try:
        runpy._run_module_as_main(req["module"])  # type: ignore[attr-defined]
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as exc:
        # Print what the interpreter would (its traceback starts in runpy), then exit 1 through
        # the normal shutdown.
        tb = exc.__traceback__
        exc = exc.with_traceback(tb.tb_next if tb is not None else None)
        sys.excepthook(type(exc), exc, exc.__traceback__)
        raise SystemExit(1) from None


# -- the client ------------------------------------------------------------------------------


class ZygoteError(RuntimeError):
    """The zygote could not start, died, or refused a request."""


@dataclass
class RawRun:
    """What a runner reports about one process: exit code (None after a timeout), output."""

    code: int | None
    stdout: bytes
    stderr: bytes
    seconds: float
    timed_out: bool


class ForkServer:
    """One zygote process and the client side of its protocol (use one per thread)."""

    def __init__(
        self,
        env_for_home: Callable[[str], dict[str, str]],
        python: str | None = None,
        preload: tuple[str, ...] = PRELOAD,
        start_timeout: float = 120.0,
    ) -> None:
        self.env_for_home = env_for_home
        self.python = python or sys.executable
        self.preload = preload
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.pending = b""
        self.scratch: str | None = None
        self.starts = 0

    def start(self) -> None:
        self.close()
        self.scratch = tempfile.mkdtemp(prefix="fllm-zygote-")
        self.pending = b""
        self.proc = subprocess.Popen(
            [self.python, SCRIPT, *self.preload],
            cwd=self.scratch,
            env=self.env_for_home(self.scratch),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.starts += 1
        ready = self._read_reply(self.start_timeout)
        if not ready.get("ready"):
            err = ready.get("error", "no answer")
            self.close()
            raise ZygoteError(f"the zygote did not start: {err}")
        if ready.get("preload_output") and self.starts == 1:
            print(
                "fuzz: importing fllm printed this, which a fresh case shows on its stderr and "
                f"a fork does not:\n{ready['preload_output']}",
                file=sys.stderr,
            )

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _read_reply(self, timeout: float) -> dict:
        """The next line from the zygote (read unbuffered: two replies may come at once)."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            with selectors.DefaultSelector() as sel:
                sel.register(fd, selectors.EVENT_READ)
                ready = sel.select(max(0.0, deadline - time.monotonic()))
            if not ready:
                self.close()
                raise ZygoteError(f"no answer from the zygote in {timeout:g} s")
            chunk = os.read(fd, 65536)
            if not chunk:
                self.close()
                raise ZygoteError("the zygote died")
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def run(
        self,
        argv: list[str],
        cwd: str,
        env: dict[str, str],
        stdin: bytes | None,
        timeout: float,
        memory_bytes: int,
        module: str = "fllm_cli",
    ) -> RawRun:
        """Run ``python -m MODULE ARGV`` as a fork of the zygote; restart the zygote if needed."""
        # Popen would refuse the same command line (a NUL, an unencodable character) here.
        for arg in argv:
            if "\x00" in arg:
                raise ValueError("embedded null byte")
            os.fsencode(arg)
        try:
            return self._run(argv, cwd, env, stdin, timeout, memory_bytes, module)
        except ZygoteError:  # died under us (it only forks, so this is rare): once more
            return self._run(argv, cwd, env, stdin, timeout, memory_bytes, module)

    def _run(self, argv, cwd, env, stdin, timeout, memory_bytes, module) -> RawRun:
        if not self.alive():
            self.start()
        assert self.proc is not None and self.proc.stdin is not None and self.scratch
        paths = {k: os.path.join(self.scratch, k) for k in ("stdin", "stdout", "stderr")}
        if stdin is not None:
            with open(paths["stdin"], "wb") as f:
                f.write(stdin)
        req = {
            "module": module,
            "argv": argv,
            "cwd": cwd,
            "env": env,
            "stdin": paths["stdin"] if stdin is not None else None,
            "stdout": paths["stdout"],
            "stderr": paths["stderr"],
            "timeout": timeout,
            "memory_bytes": memory_bytes,
        }
        try:
            self.proc.stdin.write((json.dumps(req) + "\n").encode())
            self.proc.stdin.flush()
        except OSError as exc:
            self.close()
            raise ZygoteError(f"the zygote died: {exc}") from exc
        reply = self._read_reply(60.0)
        if "error" in reply:
            raise ValueError(f"the zygote refused the case: {reply['error']}")
        case_pid = reply["pid"]
        try:
            # The zygote enforces the timeout; this bound is only for a zygote gone wrong.
            reply = self._read_reply(timeout + DRAIN_AFTER_KILL + 60.0)
        except ZygoteError:
            with contextlib.suppress(OSError):
                os.killpg(case_pid, signal.SIGKILL)
            raise
        with open(paths["stdout"], "rb") as f:
            out = f.read()
        with open(paths["stderr"], "rb") as f:
            err = f.read()
        return RawRun(reply["code"], out, err, reply["seconds"], reply["timed_out"])

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        if self.scratch is not None:
            import shutil

            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None


def _main(modules: list[str]) -> None:
    zygote = _Zygote(modules)
    req = zygote.serve()
    if req is None:
        return
    del zygote
    _become(req)


if __name__ == "__main__":
    _main(sys.argv[1:])
