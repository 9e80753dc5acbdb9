"""On-disk cache of model replies, keyed by (model, full prompt, parameters).

One SQLite file under ``$FLLM_HOME`` (default ``~/.cache/fllm``), kept by ``keystore``'s
``SqliteStore``: several fllm processes read and write it at once, and a damaged or unusable
file costs one warning line, never the run.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from fllm_cli.keystore import SqliteStore, fllm_home

__all__ = ["FILE_NAME", "ResponseCache", "cache_for", "cache_key", "fllm_home", "open_cache"]

SCHEMA_VERSION = 1
FILE_NAME = "replies.sqlite3"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS replies ("
    " key TEXT PRIMARY KEY, model TEXT NOT NULL, text TEXT NOT NULL, created REAL NOT NULL)"
)


def cache_key(model: str, prompt: str, params: dict[str, Any]) -> str:
    """Return a stable digest of everything that determines a reply."""
    blob = json.dumps(
        [SCHEMA_VERSION, model, prompt, params], sort_keys=True, ensure_ascii=False, default=str
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache(SqliteStore):
    """Replies already paid for, shared by every process that uses the same file."""

    SCHEMA = (_SCHEMA,)
    LABEL = "response cache"

    def __init__(self, path: str | Path | None = None) -> None:
        super().__init__(Path(path) if path is not None else fllm_home() / FILE_NAME)
        self.hits = 0
        self.misses = 0

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
