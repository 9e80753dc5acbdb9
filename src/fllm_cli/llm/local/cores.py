"""Sharing the machine's cores among the model processes that run at the same time."""

from __future__ import annotations

import os
from typing import Any

from fllm_cli.keystore import fllm_home


def threads() -> int:
    """Return how many threads the model computes with now (see :class:`Cores`)."""
    return _CORES.threads()


class Cores:
    """Share the machine's cores among the model processes running at the same time.

    One process alone uses every core it may run on (at most 4): on the 2-core development
    machine two threads make a token 1.5 times faster than one. But two processes that each
    use all cores make their OpenMP workers wait for each other, and both run several times
    slower. So the cores go to the process holding ``$FLLM_HOME/cores.lock``; any other holds
    ``guests.lock`` shared and uses one thread, and the holder drops to one thread while a
    guest exists (it checks before each model call). ``FLLM_LOCAL_THREADS`` sets the number.
    """

    def __init__(self) -> None:
        self.holder: Any = None  # the open cores.lock while this process holds it
        self.guest: Any = None  # the open guests.lock this process holds shared
        self.pid = os.getpid()

    def threads(self) -> int:
        raw = os.environ.get("FLLM_LOCAL_THREADS", "")
        if raw.isdigit() and int(raw) > 0:
            return int(raw)
        try:
            cores = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cores = os.cpu_count() or 1
        cores = max(1, min(4, cores))
        if cores == 1:
            return 1
        if self.pid != os.getpid():  # a forked child shares its parent's locks: start afresh
            self.holder = self.guest = None
            self.pid = os.getpid()
        try:
            import fcntl

            if self.holder is None:
                self.holder = self._lock(fcntl, "cores.lock", fcntl.LOCK_EX)
            if self.holder is None:
                self.guest = self.guest or self._lock(fcntl, "guests.lock", fcntl.LOCK_SH)
                return 1
            if self.guest is not None:  # promoted: it is no longer a guest
                self.guest.close()
                self.guest = None
            alone = self._lock(fcntl, "guests.lock", fcntl.LOCK_EX)
        except (ImportError, OSError):
            return 1
        if alone is None:
            return 1
        alone.close()
        return cores

    @staticmethod
    def _lock(fcntl: Any, name: str, how: int) -> Any:
        """Return the open file locked ``how`` (without waiting), or None when it is taken."""
        folder = fllm_home()
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / name, "a")  # noqa: SIM115 - a held lock lives with its file
        try:
            fcntl.flock(handle.fileno(), how | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return None
        return handle


_CORES = Cores()
