"""Where fllm keeps state between runs, and the one on-disk key-value store it keeps it in.

``fllm_home()`` is ``$FLLM_HOME`` or ``~/.cache/fllm`` (``$XDG_CACHE_HOME/fllm``). A
``SqliteStore`` is one SQLite file there in WAL mode, so several fllm processes (parallel
benches, Ray workers) read and write it at once. It is a cache and never the reason a run
fails: a damaged file is renamed aside (one warning line) and a fresh one started; a file that
cannot be used at all (a read-only folder, a path through a file) turns the store off for the
process (one warning line); a lock held past the busy timeout skips that one read or write.
Subclasses give the tables (``SCHEMA``), the file's layout version (``VERSION``, so a file of
an older layout is set aside, not fought with) and the label the warnings name, and run their
statements through ``_run``/``_run_many``.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def fllm_home() -> Path:
    """Return the folder fllm keeps its state in: ``$FLLM_HOME`` or the user's cache dir."""
    explicit = os.environ.get("FLLM_HOME")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "fllm"


def warn(message: str) -> None:
    """Write one ``fllm: warning:`` line to stderr."""
    sys.stderr.write(f"fllm: warning: {message}\n")
    sys.stderr.flush()


class SqliteStore:
    """One SQLite file of rows that can always be recomputed (see the module's docstring)."""

    SCHEMA: tuple[str, ...] = ()  # CREATE TABLE IF NOT EXISTS statements
    LABEL = "cache"  # what the warnings call this store
    # The file's layout, kept in SQLite's user_version: a file of another layout is set aside
    # like a damaged one (0: files written before versions were kept, taken as they are).
    VERSION = 0

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.disabled = False
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def close(self) -> None:
        """Close the connection (the file stays)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _run(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """Execute one statement and return its rows ([] when the store cannot answer)."""
        return self._guarded(lambda conn: list(conn.execute(sql, args).fetchall()))

    def _run_many(self, sql: str, rows: Iterable[tuple[Any, ...]]) -> None:
        """Execute one statement for each of ``rows`` in one transaction."""
        batch = list(rows)
        if batch:
            self._guarded(lambda conn: conn.executemany(sql, batch).fetchall())

    def _guarded(self, work: Any) -> list[tuple[Any, ...]]:
        """Run ``work(connection)`` in a transaction; on corruption set the file aside once
        and retry; on any other failure answer nothing."""
        if self.disabled:
            return []
        with self._lock:
            for attempt in range(2):
                try:
                    conn = self._connect()
                    with conn:
                        return list(work(conn))
                except sqlite3.OperationalError as exc:
                    # Locked past the busy timeout, read-only folder...: skip this entry only.
                    if "locked" in str(exc) or "busy" in str(exc):
                        return []
                    if attempt == 0 and _looks_corrupt(exc):
                        self._set_aside(exc)
                        continue
                    self._disable(exc)
                    return []
                except sqlite3.DatabaseError as exc:
                    if attempt == 0:
                        self._set_aside(exc)
                        continue
                    self._disable(exc)
                    return []
                except OSError as exc:  # the folder cannot be created or written
                    self._disable(exc)
                    return []
        return []

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=10.0, check_same_thread=False)
            try:
                conn.execute("PRAGMA busy_timeout = 10000")
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                found = int(conn.execute("PRAGMA user_version").fetchone()[0])
                if found != self.VERSION:
                    tables = conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]
                    if found != 0 or tables:
                        raise sqlite3.DatabaseError(
                            f"layout {found} where {self.VERSION} is expected"
                        )
                    conn.execute(f"PRAGMA user_version = {int(self.VERSION)}")
                for statement in self.SCHEMA:
                    conn.execute(statement)
                conn.commit()
            except sqlite3.Error:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _set_aside(self, exc: BaseException) -> None:
        """Rename a damaged file (and its WAL side files) so a fresh one can start."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}-{os.getpid()}")
        try:
            if self.path.exists():
                os.replace(self.path, aside)
            for suffix in ("-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        except OSError as err:
            self._disable(err)
            return
        warn(f"{self.LABEL} {self.path} is damaged ({exc}); moved it to {aside.name}")

    def _disable(self, exc: BaseException) -> None:
        if not self.disabled:
            warn(f"{self.LABEL} {self.path} is unusable ({exc}); running without it")
        self.disabled = True
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _looks_corrupt(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text or "corrupt" in text
