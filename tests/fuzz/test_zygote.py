"""The fork-server runner (fuzz/zygote.py) must behave like a fresh ``python -m fllm_cli``.

A probe module, run both ways from the same folder, reports the process it finds itself in
(argv, sys.path, standard streams, environment, session, limits, descriptors, signals, the
``__main__`` module); then real fllm cases go through ``run_case`` both ways and must get the same
exit code, output and outcome. Fresh runs go on two other threads, so the pairs take about
the time of the fresh runs alone.
"""

from __future__ import annotations

import json
import os
import re
import signal
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fuzz.oracle import Case, ForkServers, Result, child_env, classify, fresh_run, run_case
from fuzz.zygote import ForkServer, RawRun

PROBE = r"""
import json, os, resource, signal, sys, sysconfig
import __main__

def stream(s):
    return [s.name, s.mode, s.encoding, s.errors, s.line_buffering, s.write_through,
            s.seekable(), s.isatty(), s.buffer.raw.name, type(s.buffer).__name__]

state = {
    "argv": sys.argv, "orig_argv": sys.orig_argv[1:], "path0": sys.path[0], "cwd": os.getcwd(),
    "env": dict(os.environ), "leader": [os.getpgid(0) == os.getpid(), os.getsid(0) == os.getpid()],
    "limits": [resource.getrlimit(resource.RLIMIT_AS), resource.getrlimit(resource.RLIMIT_CORE)],
    "fds": sorted(os.listdir("/proc/self/fd")), "name": __name__, "file": __file__,
    "spec": __spec__.name, "main": sorted(vars(__main__)),
    "main_is_me": __main__.__dict__ is globals(),
    "signals": [repr(signal.getsignal(getattr(signal, n)))
                for n in ("SIGINT", "SIGPIPE", "SIGXFSZ", "SIGTERM", "SIGCHLD", "SIGHUP")],
    "flags": repr(sys.flags), "hash": hash("fllm"), "stdin": sys.stdin.read(),
    "streams": [stream(s) for s in (sys.stdin, sys.stdout, sys.stderr)],
    "dunder_streams": [sys.stdin is sys.__stdin__, sys.stdout is sys.__stdout__],
    "leaked": [os.environ.get("LEAK"), getattr(sys, "leak", None)],
    "userbase": sysconfig.get_config_var("userbase"), "home": os.path.expanduser("~"),
}
print(json.dumps(state))
print("to stderr", file=sys.stderr)
os.environ["LEAK"] = "1"
sys.leak = 1
if "--raise" in sys.argv:
    raise ValueError("boom")
if "--exit" in sys.argv:
    sys.exit("a message")
if "--hang" in sys.argv:  # a grandchild in the same process group, then wait forever
    import subprocess, time
    child = subprocess.Popen(["sleep", "60"])
    open("child.pid", "w").write(str(child.pid))
    time.sleep(60)
"""

MB = 1 << 20
PLAN_OK = (
    "Visual Question Answering\nColorization\ninput:image\nImage Classification\ninput:image\n"
)
PLAN_BAD = "Visual Question Answering\nColorization\ninput:image\nColorization\ninput:image\n"
VERIFY = ["verify", "domains/openagi.yaml", "-", "--input", "image", "--output", "text"]
ROOT = Path(__file__).resolve().parents[2]

# Real fllm cases with the expected (outcome, exit code); memory_mb per case.
CASES = {
    "valid-plan": (Case("t", VERIFY, stdin=PLAN_OK), ("ok", 0), 2048),
    "invalid-plan": (Case("t", VERIFY, stdin=PLAN_BAD), ("ok", 1), 2048),
    "usage-error": (Case("t", ["no-such-command"]), ("ok", 2), 2048),
    # 48 MB of plan on stdin under a 160 MB address space: reading it fails (exit 70).
    "memory": (Case("t", VERIFY, stdin="x" * (48 * MB)), ("memory", 70), 160),
}
PROBE_ARGS = {"plain": ["a", "b c", "é\udcff"], "raise": ["--raise"], "exit": ["--exit"]}


def _probe_pair(server: ForkServer, pool: ThreadPoolExecutor, argv: list[str]):
    with tempfile.TemporaryDirectory(prefix="fllm-zygote-test-") as tmp:
        Path(tmp, "fuzz_probe.py").write_text(PROBE)
        env = child_env(tmp)
        args = (argv, tmp, env, b"some input\n", 20.0, 1024 * MB)
        fresh = pool.submit(fresh_run, *args, module="fuzz_probe")
        fork = server.run(*args, module="fuzz_probe")
        return fresh.result(), fork


@pytest.fixture(scope="module")
def server():
    srv = ForkServer(child_env)
    srv.start()
    yield srv
    srv.close()


@pytest.fixture(scope="module")
def pairs(server) -> dict[str, tuple[RawRun | Result, RawRun | Result]]:
    """Every case both ways: fresh runs on two other threads, forks on this one."""
    out: dict[str, tuple] = {}
    with ThreadPoolExecutor(2) as pool:
        for name, argv in PROBE_ARGS.items():
            out["probe-" + name] = _probe_pair(server, pool, argv)
        for name, (case, _, memory_mb) in CASES.items():
            fresh = pool.submit(run_case, case, 20.0, memory_mb)
            fork = run_case(case, 20.0, memory_mb, runner=server)
            out[name] = (fresh.result(), fork)
    return out


def test_probe_sees_the_same_process(pairs) -> None:
    fresh, fork = pairs["probe-plain"]
    assert (fresh.code, fork.code) == (0, 0), (fresh.stderr, fork.stderr)
    a, b = json.loads(fresh.stdout), json.loads(fork.stdout)
    assert a == b
    assert a["argv"][1:] == ["a", "b c", "é\udcff"]
    assert a["stdin"] == "some input\n"
    assert a["leader"] == [True, True]
    assert a["leaked"] == [None, None]
    assert fresh.stderr == fork.stderr == b"to stderr\n"


@pytest.mark.parametrize("name", ["probe-raise", "probe-exit"])
def test_uncaught_exception_and_exit_message(pairs, name: str) -> None:
    fresh, fork = pairs[name]
    assert fresh.code == fork.code == 1
    assert fresh.stdout.splitlines()[1:] == fork.stdout.splitlines()[1:] == []
    assert fresh.stderr == fork.stderr  # the same traceback, frame for frame
    outcome = classify(fork.code, "", fork.stderr.decode())[0]
    assert outcome == ("traceback" if name == "probe-raise" else "ok")


@pytest.mark.parametrize("name", list(CASES))
def test_fllm_case_same_outcome(pairs, name: str) -> None:
    fresh, fork = pairs[name]
    expected = CASES[name][1]
    assert (fresh.outcome, fresh.code) == expected, fresh.stderr[-500:]
    assert (fork.outcome, fork.code) == expected, fork.stderr[-500:]
    # Where memory runs out depends on the order modules were imported (the zygote imports every
    # command's module up front), so a MemoryError's "at FILE:LINE" may differ; nothing else.
    assert fresh.stdout == fork.stdout
    assert _unplaced(fresh.stderr) == _unplaced(fork.stderr)
    assert _unplaced(fresh.detail) == _unplaced(fork.detail)


def _unplaced(stderr: str) -> str:
    return re.sub(r"(MemoryError: .*?) at [^:]+:\d+ \(", r"\1 (", stderr)


def test_timeout_kills_the_process_group(server) -> None:
    # check-trace on 4,000 copies of the ReAct examples takes far longer than 1 s.
    text = (ROOT / "prompts/react_examples.txt").read_text(encoding="utf-8") * 4000
    case = Case("t", ["check-trace", "domains/agents/react.sexp", "t.txt"], {"t.txt": text})
    res = run_case(case, timeout=1.0, runner=server)
    assert (res.outcome, res.code) == ("timeout", None)
    assert res.seconds < 3.0


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] in ("Z", "X")  # a zombie is dead too
    except FileNotFoundError:
        return True


def test_timeout_kills_grandchildren_too(server) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "fuzz_probe.py").write_text(PROBE)
        res = server.run(["--hang"], tmp, child_env(tmp), None, 1.0, 1024 * MB, module="fuzz_probe")
        assert res.timed_out and res.code is None
        pid = int(Path(tmp, "child.pid").read_text())
    deadline = time.monotonic() + 5
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid)


def test_a_case_may_not_change_what_the_interpreter_read_at_start(server) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**child_env(tmp), "PYTHONHASHSEED": "1"}
        with pytest.raises(ValueError, match="differ from the zygote"):
            server.run(["--version"], tmp, env, None, 20.0, 1024 * MB)


def test_no_state_leaks_and_a_dead_zygote_is_restarted(server) -> None:
    first = server.starts
    assert server.proc is not None
    os.kill(server.proc.pid, signal.SIGKILL)
    server.proc.wait()
    for _ in range(2):  # the probe sets LEAK and sys.leak; the next fork must not see them
        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, "fuzz_probe.py").write_text(PROBE)
            res = server.run([], tmp, child_env(tmp), None, 20.0, 1024 * MB, module="fuzz_probe")
        assert res.code == 0, res.stderr
        assert json.loads(res.stdout)["leaked"] == [None, None]
    assert server.starts == first + 1


def test_campaign_pool_falls_back_when_disabled() -> None:
    with ForkServers(enabled=False) as servers, servers.lease() as runner:
        assert runner is None
