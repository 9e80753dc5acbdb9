"""On-disk cache of model replies, keyed by (model, full prompt, parameters).

One SQLite file under ``$FLLM_HOME`` (default ``~/.cache/fllm``) in WAL mode, so several fllm
processes can read and write it at once. A damaged file is reported on one stderr line, renamed
aside and replaced by an empty one: a cache must never be the reason a run fails.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
FILE_NAME = "replies.sqlite3"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS replies ("
    " key TEXT PRIMARY KEY, model TEXT NOT NULL, text TEXT NOT NULL, created REAL NOT NULL)"
)


def fllm_home() -> Path:
    """Return the folder fllm keeps its state in: ``$FLLM_HOME`` or the user's cache dir."""
    explicit = os.environ.get("FLLM_HOME")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "fllm"


def cache_key(model: str, prompt: str, params: dict[str, Any]) -> str:
    """Return a stable digest of everything that determines a reply."""
    blob = json.dumps(
        [SCHEMA_VERSION, model, prompt, params], sort_keys=True, ensure_ascii=False, default=str
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _warn(message: str) -> None:
    sys.stderr.write(f"fllm: warning: {message}\n")
    sys.stderr.flush()


class ResponseCache:
    """Replies already paid for, shared by every process that uses the same file."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else fllm_home() / FILE_NAME
        self.hits = 0
        self.misses = 0
        self.disabled = False
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def get(self, model: str, prompt: str, params: dict[str, Any]) -> str | None:
        """Return the stored reply, or None on a miss (or when the cache is unusable)."""
        key = cache_key(model, prompt, params)
        rows = self._run("SELECT text FROM replies WHERE key = ?", (key,))
        if rows:
            self.hits += 1
            return str(rows[0][0])
        self.misses += 1
        return None

    def put(self, model: str, prompt: str, params: dict[str, Any], text: str) -> None:
        """Store ``text`` as the reply (the last writer wins; replies for a key are equal)."""
        key = cache_key(model, prompt, params)
        self._run(
            "INSERT OR REPLACE INTO replies (key, model, text, created) VALUES (?, ?, ?, ?)",
            (key, model, text, time.time()),
        )

    def __len__(self) -> int:
        rows = self._run("SELECT COUNT(*) FROM replies", ())
        return int(rows[0][0]) if rows else 0

    def close(self) -> None:
        """Close the connection (the file stays)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _run(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """Execute one statement; on corruption set the file aside once and retry."""
        if self.disabled:
            return []
        with self._lock:
            for attempt in range(2):
                try:
                    conn = self._connect()
                    with conn:
                        return list(conn.execute(sql, args).fetchall())
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
                conn.execute(_SCHEMA)
                conn.commit()
            except sqlite3.Error:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _set_aside(self, exc: BaseException) -> None:
        """Rename a damaged cache file (and its WAL side files) so a fresh one can start."""
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
        _warn(f"response cache {self.path} is damaged ({exc}); moved it to {aside.name}")

    def _disable(self, exc: BaseException) -> None:
        if not self.disabled:
            _warn(f"response cache {self.path} is unusable ({exc}); running without it")
        self.disabled = True
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _looks_corrupt(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text or "corrupt" in text


_SHARED: dict[Path, ResponseCache] = {}


def cache_for(options: Any) -> ResponseCache | None:
    """Return the shared reply cache for a back end, or None when ``options.cache`` is off."""
    if not getattr(options, "cache", True) or os.environ.get("FLLM_NO_CACHE"):
        return None
    return open_cache()


def open_cache(path: str | Path | None = None) -> ResponseCache:
    """Return the process-wide cache for ``path`` (default: under ``fllm_home()``)."""
    target = Path(path) if path is not None else fllm_home() / FILE_NAME
    if target not in _SHARED:
        _SHARED[target] = ResponseCache(target)
    return _SHARED[target]
