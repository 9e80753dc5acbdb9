# ruff: noqa: E501 - the escape programs are test data, one attempt per line
"""Escape attempts against the sandbox, judged by their side effects, not by messages.

Every program below runs as generated code through ``run_code`` with the audit hook switched
off, so only the kernel layers (Landlock, seccomp) and the process split stand in the way. Each
test then checks the world outside: a canary file that must not exist, a secret whose text must
not come back, listeners that must not have been contacted, a signal that must not arrive, a
result that must not be forged.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import string
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fllm_cli.solve import lockdown
from fllm_cli.solve.sandbox import ExecResult, Limits, isolation_report, run_code

pytestmark = pytest.mark.skipif(
    not isolation_report().complete, reason="this kernel offers no seccomp + Landlock"
)

LIMITS = Limits(timeout=6, memory_mb=400)
SECRET = "fllm-test-secret-7f3a9c"


@dataclass
class World:
    """The outside world one test watches."""

    root: Path
    runs: Path
    canary: Path
    secret: Path
    tcp: socket.socket
    udp: socket.socket
    unix: socket.socket
    unix_path: Path
    abstract: socket.socket
    abstract_name: str
    signals: list[int]

    def values(self) -> dict[str, str]:
        return {
            "canary": str(self.canary),
            "secret": str(self.secret),
            "secret_dir": str(self.secret.parent),
            "root": str(self.root),
            "tcp": str(self.tcp.getsockname()[1]),
            "udp": str(self.udp.getsockname()[1]),
            "unix": str(self.unix_path),
            "abstract": self.abstract_name,
            "testpid": str(os.getpid()),
            "python": sys.executable,
        }

    def run(self, template: str, **kwargs: Any) -> ExecResult:
        code = string.Template(template).substitute(self.values())
        kwargs.setdefault("limits", LIMITS)
        kwargs.setdefault("audit_hook", False)
        return run_code(code + "\nsolver = Solver()\n", **kwargs)

    def assert_untouched(self, result: ExecResult) -> None:
        """Nothing leaked and nothing changed outside the work folder."""
        assert not self.canary.exists(), "a file outside the work folder was created"
        assert self.secret.read_text() == SECRET, "the secret file was changed"
        assert self.secret.stat().st_mode & 0o777 == 0o600, "the secret file's mode changed"
        text = result.stdout + result.error + json.dumps(result.values, default=str)
        assert SECRET not in text, "the secret came back"
        assert self.signals == [], "a signal reached the test process"
        for listener in (self.tcp, self.unix, self.abstract):
            with pytest.raises(BlockingIOError):
                listener.accept()
        with pytest.raises(BlockingIOError):
            self.udp.recvfrom(100)
        assert sorted(p.name for p in self.runs.iterdir()) == [], "a work folder was left"
        leftovers = list(self.root.glob("**/owned*"))
        assert leftovers == [], f"files appeared outside: {leftovers}"


def _listener(family: int, kind: int, address: Any) -> socket.socket:
    sock = socket.socket(family, kind)
    sock.bind(address)
    if kind == socket.SOCK_STREAM:
        sock.listen(5)
    sock.setblocking(False)
    return sock


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    runs = tmp_path / "runs"
    runs.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(runs))
    monkeypatch.setenv("FLLM_TEST_SECRET", SECRET)
    secret = tmp_path / "home" / ".ssh" / "id_rsa"
    secret.parent.mkdir(parents=True)
    secret.write_text(SECRET)
    secret.chmod(0o600)
    unix_path = tmp_path / "listen.sock"
    abstract = f"fllm-test-{os.getpid()}-{time.monotonic_ns()}"
    w = World(
        root=tmp_path,
        runs=runs,
        canary=tmp_path / "owned.txt",
        secret=secret,
        tcp=_listener(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", 0)),
        udp=_listener(socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", 0)),
        unix=_listener(socket.AF_UNIX, socket.SOCK_STREAM, str(unix_path)),
        unix_path=unix_path,
        abstract=_listener(socket.AF_UNIX, socket.SOCK_STREAM, "\0" + abstract),
        abstract_name=abstract,
        signals=[],
    )
    # A generated program that could signal us would otherwise end the whole test run.
    previous = signal.signal(signal.SIGUSR1, lambda sig, frame: w.signals.append(sig))
    yield w
    signal.signal(signal.SIGUSR1, previous)
    for sock in (w.tcp, w.udp, w.unix, w.abstract):
        sock.close()


# Every program tries hard and swallows its own errors, so that the run itself ends normally
# and only the side effects decide. "SHELL" is the command each process-starting attempt runs.
SHELL = "touch $canary; cat $secret"
TRY = "def attempt(f):\n    try:\n        print('RESULT', f())\n    except BaseException as e:\n        print('FAILED', type(e).__name__, e)\n"

ESCAPES: dict[str, str] = {
    "posixsubprocess_fork_exec": TRY
    + """
import _posixsubprocess, os
r, w = os.pipe(); er, ew = os.pipe()
args = [[b'/bin/sh', b'-c', b'$SHELL'], [b'/bin/sh'], True, (w,), None, None,
        -1, -1, -1, w, -1, w, er, ew, True, False, -1, -1, None, -1, -1, None, False]
def go():
    for n in (23, 22, 21):
        try:
            pid = _posixsubprocess.fork_exec(*args[:n])
            break
        except TypeError:
            continue
    os.close(w); os.waitpid(pid, 0)
    return os.read(r, 500)
attempt(go)
""",
    "posix_spawn": TRY
    + "import os\nattempt(lambda: os.waitpid(os.posix_spawn('/bin/sh', ['sh', '-c', '$SHELL'], {}), 0))\n",
    "posix_spawnp": TRY
    + "import os\nattempt(lambda: os.posix_spawnp('sh', ['sh', '-c', '$SHELL'], {}))\n",
    "fork_and_exec": TRY
    + """
import os
def go():
    pid = os.fork()
    if pid == 0:
        os.execv('/bin/sh', ['sh', '-c', '$SHELL'])
    return os.waitpid(pid, 0)
attempt(go)
""",
    "os_system": TRY + "import os\nattempt(lambda: os.system('$SHELL'))\n",
    "os_popen": TRY + "import os\nattempt(lambda: os.popen('$SHELL').read())\n",
    "subprocess_run": TRY
    + "import subprocess\nattempt(lambda: subprocess.run(['sh', '-c', '$SHELL'], capture_output=True))\n",
    "pty_spawn": TRY + "import pty\nattempt(lambda: pty.spawn(['sh', '-c', '$SHELL']))\n",
    "ctypes_libc_system": TRY
    + "import ctypes\nattempt(lambda: ctypes.CDLL(None).system(b'$SHELL'))\n",
    "ctypes_reloaded_via_sys_modules": TRY
    + """
import sys, importlib
for name in [n for n in sys.modules if 'ctypes' in n]:
    del sys.modules[name]
ctypes = importlib.import_module('ctypes')
attempt(lambda: ctypes.CDLL('libc.so.6').execv(b'/bin/sh', (ctypes.c_char_p * 4)(b'sh', b'-c', b'$SHELL', None)))
""",
    "ctypes_raw_syscalls": TRY
    + """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def check(what, ret):
    if ret >= 0:
        print('GAINED', what, ret)
if os.uname().machine == 'x86_64':
    check('fork', libc.syscall(57))
    check('socket', libc.syscall(41, 2, 1, 0))
    check('clone3', libc.syscall(435, 0, 0))
    check('ptrace', libc.syscall(101, 16, os.getppid(), 0, 0))
    check('process_vm_readv', libc.syscall(310, os.getppid(), 0, 0, 0, 0, 0))
    check('io_uring_setup', libc.syscall(425, 8, ctypes.create_string_buffer(120)))
    check('unshare', libc.syscall(272, 0x10000000))
""".replace("import ctypes", "import ctypes, os"),
    "native_library_loaded_from_new_path": TRY
    + """
import ctypes, ctypes.util, shutil, os
src = '/lib/x86_64-linux-gnu/libc.so.6' if os.path.exists('/lib/x86_64-linux-gnu/libc.so.6') else ctypes.util.find_library('c')
def go():
    shutil.copy(src, 'mylibc.so')
    return ctypes.CDLL(os.path.abspath('mylibc.so')).system(b'$SHELL')
attempt(go)
attempt(lambda: print('GAINED', ctypes.CDLL('libutil.so.1')))
""",
    "extension_module_written_to_work_folder": TRY
    + """
import sys, os, importlib, glob, shutil, _bisect
def go():
    path = _bisect.__file__
    shutil.copy(path, os.path.basename(path))
    sys.path.insert(0, os.getcwd())
    del sys.modules['_bisect']
    mod = importlib.import_module('_bisect')
    print('GAINED', mod.__file__)
attempt(go)
def fake():
    open('evil.cpython-311-x86_64-linux-gnu.so', 'wb').write(b'\\x7fELF' + b'\\0' * 4000)
    import evil
    print('GAINED', evil)
attempt(fake)
""",
    "tcp_socket": TRY
    + """
import socket
attempt(lambda: socket.create_connection(('127.0.0.1', $tcp), timeout=1).sendall(b'hi'))
""",
    "_socket_module": TRY
    + """
import _socket
def go():
    s = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    s.connect(('127.0.0.1', $tcp))
attempt(go)
""",
    "udp_socket": TRY
    + """
import socket
attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'hi', ('127.0.0.1', $udp)))
""",
    "raw_and_other_families": TRY
    + """
import socket
for fam, kind in [(socket.AF_INET, socket.SOCK_RAW), (socket.AF_PACKET, socket.SOCK_RAW),
                  (socket.AF_NETLINK, socket.SOCK_RAW), (socket.AF_INET6, socket.SOCK_STREAM),
                  (socket.AF_UNIX, socket.SOCK_DGRAM)]:
    attempt(lambda: socket.socket(fam, kind, 0 if kind != socket.SOCK_RAW or fam != socket.AF_INET else 17).sendto(b'x', ('127.0.0.1', $udp)))
attempt(lambda: socket.socketpair())
""",
    "unix_socket": TRY
    + """
import socket
def go():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect('$unix')
attempt(go)
""",
    "abstract_unix_socket": TRY
    + """
import socket
def go():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect('\\0$abstract')
attempt(go)
""",
    "symlink_out_of_work_folder": TRY
    + """
import os
attempt(lambda: os.symlink('$secret', 'link'))
attempt(lambda: open('link').read())
attempt(lambda: os.symlink('$root', 'dirlink'))
attempt(lambda: open('dirlink/owned.txt', 'w').write('x'))
""",
    "hard_link_out_of_work_folder": TRY
    + """
import os
attempt(lambda: os.link('$secret', 'hard'))
attempt(lambda: open('hard').read())
attempt(lambda: os.link('x', '$canary') if open('x', 'w') else None)
""",
    "proc_self_mem": TRY
    + """
def go():
    with open('/proc/self/mem', 'r+b') as f:
        print('GAINED /proc/self/mem')
attempt(go)
attempt(lambda: open('/proc/self/environ', 'rb').read())
""",
    "proc_of_parents": TRY
    + """
import os
for pid in (os.getppid(), $testpid, 1):
    for leaf in ('environ', 'cmdline', 'maps'):
        attempt(lambda: open(f'/proc/{pid}/{leaf}', 'rb').read())
    attempt(lambda: os.listdir(f'/proc/{pid}/fd'))
""",
    "environment_of_the_parent": "import os\nprint(dict(os.environ))\n",
    "signals_to_others": TRY
    + """
import os, signal
attempt(lambda: os.kill($testpid, signal.SIGUSR1))
attempt(lambda: os.kill(os.getppid(), signal.SIGKILL))
attempt(lambda: os.killpg(0, signal.SIGKILL))
attempt(lambda: os.kill(-1, signal.SIGUSR1))
""",
    "write_outside_with_os_open": TRY
    + "import os\nattempt(lambda: os.write(os.open('$canary', os.O_CREAT | os.O_WRONLY), b'x'))\n",
    "write_outside_with_open_and_io": TRY
    + """
import io, pathlib
attempt(lambda: open('$canary', 'w').write('x'))
attempt(lambda: io.open('$canary', 'a').write('x'))
attempt(lambda: pathlib.Path('$canary').write_text('x'))
attempt(lambda: open('$secret', 'w').write('overwritten'))
""",
    "rename_and_move_out": TRY
    + """
import os, shutil
open('mine', 'w').write('x')
attempt(lambda: os.rename('mine', '$canary'))
attempt(lambda: shutil.move('mine', '$canary'))
attempt(lambda: os.rename('$secret', 'stolen'))
""",
    "read_secret_many_ways": TRY
    + """
import io, os, pathlib, shutil
attempt(lambda: open('$secret').read())
attempt(lambda: io.open('$secret').read())
attempt(lambda: pathlib.Path('$secret').read_text())
attempt(lambda: os.read(os.open('$secret', os.O_RDONLY), 100))
attempt(lambda: shutil.copy('$secret', 'copy') and open('copy').read())
attempt(lambda: os.listdir('$secret_dir'))
""",
    "mmap_tricks": TRY
    + """
import mmap, os
attempt(lambda: mmap.mmap(os.open('$secret', os.O_RDONLY), 0, prot=mmap.PROT_READ)[:])
attempt(lambda: print('GAINED', mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)))
""",
    "chdir_up_and_relative_paths": TRY
    + """
import os
attempt(lambda: os.chdir('../..'))
attempt(lambda: open('owned.txt', 'w').write('x'))
attempt(lambda: open('home/.ssh/id_rsa').read())
""",
    "change_metadata_outside": TRY
    + """
import os
attempt(lambda: os.chmod('$secret', 0o777))
attempt(lambda: os.truncate('$secret', 0))
attempt(lambda: os.utime('$secret', (0, 0)))
attempt(lambda: os.remove('$secret'))
attempt(lambda: os.open('$secret', os.O_RDONLY | os.O_TRUNC))
""",
    # Harmless even if it got through: opening for append writes nothing, the probe file is
    # removed at once; either success prints GAINED.
    "python_runtime_is_read_only": TRY
    + """
import os, json
def append():
    with open(json.__file__, 'a'):
        print('GAINED append to', json.__file__)
def create():
    probe = os.path.join(os.path.dirname(json.__file__), 'fllm-probe-%d.py' % os.getpid())
    os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    os.remove(probe)
    print('GAINED create in', probe)
attempt(append)
attempt(create)
""",
}


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_escape_has_no_effect(world: World, name: str) -> None:
    result = world.run(ESCAPES[name].replace("$SHELL", SHELL))
    world.assert_untouched(result)
    assert result.isolation.startswith("seccomp + landlock")
    assert "GAINED" not in result.stdout, result.stdout


def test_inherited_descriptors_are_closed(world: World) -> None:
    fd = os.open(world.secret, os.O_RDONLY)
    os.set_inheritable(fd, True)
    try:
        code = TRY + "import os\nfor fd in range(256):\n    attempt(lambda: os.pread(fd, 100, 0))\n"
        result = world.run(code)
    finally:
        os.close(fd)
    world.assert_untouched(result)


def test_signal_to_the_test_process_does_not_arrive(world: World) -> None:
    result = world.run(ESCAPES["signals_to_others"])
    world.assert_untouched(result)
    assert result.ok and result.status == "sat"  # the supervisor survived its SIGKILL too


def test_async_io_cannot_aim_signals_at_other_processes(world: World) -> None:
    """F_SETOWN / F_SETSIG / F_SETOWN_EX and the owner ioctls are refused by seccomp, so a
    kernel whose Landlock does not scope signals (ABI < 6) is safe too; here the attempts must
    fail with EPERM and the test process must get nothing."""
    code = (
        TRY
        + "import fcntl, os, struct\nr, w = os.pipe()\nparent = os.getppid()\n"
        + "attempt(lambda: fcntl.fcntl(r, fcntl.F_SETOWN, parent))\n"
        + "attempt(lambda: fcntl.fcntl(r, 10, 9))\n"  # F_SETSIG, SIGKILL
        + "attempt(lambda: fcntl.fcntl(r, 15, struct.pack('ii', 1, parent)))\n"  # F_SETOWN_EX
        + "attempt(lambda: fcntl.ioctl(r, 0x8901, struct.pack('i', parent)))\n"  # FIOSETOWN
        + "attempt(lambda: fcntl.ioctl(r, 0x5410, struct.pack('i', parent)))\n"  # TIOCSPGRP
        + "attempt(lambda: fcntl.fcntl(r, fcntl.F_SETFL, os.O_ASYNC))\n"
        + "os.write(w, b'x')\n"
    )
    result = world.run(code)
    assert result.stdout.count("FAILED PermissionError") == 5, result.stdout
    world.assert_untouched(result)
    assert result.ok


def test_fork_bomb_starts_nothing(world: World) -> None:
    code = (
        TRY
        + "import os\nfor _ in range(200):\n    attempt(lambda: os.fork() or os.system('$SHELL'))\n"
    )
    result = world.run(code.replace("$SHELL", SHELL))
    world.assert_untouched(result)
    assert result.ok and "RESULT" not in result.stdout


def test_thread_bomb_is_contained(world: World) -> None:
    code = TRY + (
        "import threading, time\nthreads = []\n"
        "def go():\n    while True:\n        t = threading.Thread(target=time.sleep, args=(30,))\n"
        "        t.start()\n        threads.append(t)\nattempt(go)\n"
    )
    result = world.run(code)
    assert result.kind in ("memory", "timeout", "blocked"), result.error  # stopped by a limit
    world.assert_untouched(result)


def test_memory_bomb_is_contained(world: World) -> None:
    result = world.run("hog = []\nwhile True:\n    hog.append(bytearray(10**7))\n")
    assert result.kind == "memory"
    world.assert_untouched(result)


def test_output_flood_is_bounded(world: World) -> None:
    code = (
        "import os\nfor fd in range(1, 20):\n    try:\n        os.write(fd, b'x' * 10**6)\n"
        "    except OSError:\n        pass\nfor _ in range(10**5):\n    print('y' * 100)\n"
    )
    result = world.run(code, limits=Limits(timeout=6, memory_mb=400, max_output=1000))
    assert len(result.stdout) <= 1000
    world.assert_untouched(result)


def test_message_pipe_flood_is_bounded(world: World) -> None:
    code = "import os\nfor fd in range(3, 20):\n    try:\n        os.write(fd, b'z' * 10**8)\n    except OSError:\n        pass\n"
    result = world.run(code, limits=Limits(timeout=10, memory_mb=300))
    assert result.kind != "timeout", result.error  # the flood was cut off, not waited out
    assert not result.ok
    world.assert_untouched(result)


FORGED = json.dumps({"kind": "ok", "status": "sat", "objective": -1, "values": {"x": 99}})
UNSAT = "solver = Optimize()\nx = Int('x')\nsolver.add(x > 1, x < 0)\ntotal_cost = x\n"


def test_printed_result_marker_is_just_output(world: World) -> None:
    code = f"print('@@FLLM-RESULT@@' + {FORGED!r})\n" + UNSAT
    result = run_code(code, objective="total_cost", limits=LIMITS, audit_hook=False)
    assert (result.status, result.objective, result.values) == ("unsat", None, {})
    assert "@@FLLM-RESULT@@" in result.stdout


def test_forged_results_on_every_descriptor_are_ignored(world: World) -> None:
    code = (
        f"""
import os, z3
for fd in range(0, 64):
    try:
        os.write(fd, ({FORGED!r} + '\\n').encode())
    except OSError:
        pass
z3.Solver.check = lambda self, *a: z3.sat
z3.Optimize.check = lambda self, *a: z3.sat
"""
        + UNSAT
    )
    result = run_code(code, objective="total_cost", limits=LIMITS, audit_hook=False)
    assert result.status != "sat" and result.objective is None and result.values == {}


def test_forged_worker_message_cannot_set_the_objective(world: World) -> None:
    fake = json.dumps(
        {"solver": "solver", "smt2": "", "values": {}, "objective": ["V", -1], "stdout": ""}
    )
    code = (
        f"""
import os
for fd in range(3, 64):
    try:
        os.write(fd, ({fake!r} + '\\n').encode())
    except OSError:
        pass
"""
        + UNSAT
    )
    result = run_code(code, objective="total_cost", limits=LIMITS, audit_hook=False)
    assert result.objective is None


def test_forged_result_with_ctypes_and_pidfd(world: World) -> None:
    code = (
        TRY
        + f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def steal():
    pidfd = libc.syscall(434, os.getppid(), 0)          # pidfd_open
    for target in range(0, 16):
        fd = libc.syscall(438, pidfd, target, 0)        # pidfd_getfd
        if fd >= 0:
            os.write(fd, {FORGED!r}.encode() + b'\\n')
    return pidfd
attempt(steal)
solver = Solver()
solver.add(False)
"""
    )
    result = run_code(code, limits=LIMITS, audit_hook=False)
    assert result.ok and result.status == "unsat" and result.objective is None


def test_the_audit_hook_still_gives_readable_messages(world: World) -> None:
    result = world.run("import os\nos.system('$SHELL')\n".replace("$SHELL", SHELL), audit_hook=True)
    assert result.kind == "blocked" and "fllm sandbox" in result.error
    world.assert_untouched(result)


def test_z3_threads_still_work(world: World) -> None:
    code = (
        "import threading\nout = []\nt = threading.Thread(target=lambda: out.append(1))\n"
        "t.start(); t.join()\nset_param('parallel.enable', True)\nsolver = Solver()\n"
        "x = Int('x')\nsolver.add(x * x == 49, x > 0)\nthreads_ok = len(out)\n"
    )
    result = run_code(code, limits=LIMITS, audit_hook=False)
    assert (result.status, result.values.get("x"), result.values.get("threads_ok")) == (
        "sat",
        7,
        1,
    )


def test_lockdown_layers_reported(world: World) -> None:
    report = lockdown.probe()
    assert report.complete and report.seccomp and report.landlock_abi >= 1
