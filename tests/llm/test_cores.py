"""Model processes share the cores: one alone uses them all, two at once use one thread each."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fllm_cli.llm.local.cores import Cores

GUEST = textwrap.dedent(
    """
    import fcntl, sys, time
    from pathlib import Path
    handle = open(Path(sys.argv[1]) / "guests.lock", "a")
    fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
    print("ready", flush=True)
    sys.stdin.readline()
    """
)


@pytest.fixture
def two_cores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FLLM_HOME", str(tmp_path))
    monkeypatch.delenv("FLLM_LOCAL_THREADS", raising=False)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1}, raising=False)
    return tmp_path


def test_a_process_alone_uses_every_core_and_drops_to_one_while_a_guest_runs(
    two_cores: Path,
) -> None:
    cores = Cores()
    assert cores.threads() == 2
    guest = subprocess.Popen(
        [sys.executable, "-c", GUEST, str(two_cores)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert guest.stdout is not None and guest.stdout.readline().strip() == "ready"
        assert cores.threads() == 1
    finally:
        guest.communicate("\n", timeout=30)
    assert cores.threads() == 2


def test_the_second_process_is_a_guest_until_the_first_ends(two_cores: Path) -> None:
    first, second = Cores(), Cores()  # two open lock files conflict like two processes
    assert first.threads() == 2
    assert second.threads() == 1
    assert first.threads() == 1  # it sees the guest
    assert first.holder is not None
    first.holder.close()  # the first process ends
    first.holder = None
    assert second.threads() == 2  # the guest takes the cores and stops being a guest
    assert second.guest is None


def test_the_setting_and_a_single_core_need_no_lock(
    two_cores: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLLM_LOCAL_THREADS", "3")
    assert Cores().threads() == 3
    monkeypatch.delenv("FLLM_LOCAL_THREADS")
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0}, raising=False)
    assert Cores().threads() == 1
    assert not (two_cores / "cores.lock").exists()


def test_an_unwritable_home_means_one_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("FLLM_HOME", str(blocker / "home"))  # under a file: cannot be made
    monkeypatch.delenv("FLLM_LOCAL_THREADS", raising=False)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert Cores().threads() == 1
