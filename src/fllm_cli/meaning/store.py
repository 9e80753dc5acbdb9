"""Sentence vectors kept between runs, so a domain's texts are embedded once, not every run.

Each run of the default planner embeds every tool's and type's text of its domain, through the
encoder and through each learned reader's adapted copy: most of a warm run's time. Those texts
are the same run after run, so their vectors are kept in ``vectors.sqlite3`` under
``fllm_home()`` (``keystore.SqliteStore``: shared by processes, never the reason a run fails).

A row's key is a digest of the encoder's fingerprint (its weights' recorded sha256, any
low-rank change, the tokenizer and NumPy versions, and the encoder's own source) and the text,
so a changed model, reader or forward pass never reads an old vector. Only texts a caller marks
as lasting are kept (a domain's texts, not requests); past ``CAP`` rows the earliest written
are dropped; a row that is not a unit vector is a miss. ``$FLLM_NO_CACHE`` switches the store
off, as it does the reply cache.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from fllm_cli.keystore import SqliteStore, fllm_home

FILE_NAME = "vectors.sqlite3"
CAP = 50_000  # rows (about 1.6 KB each)
_CHUNK = 500  # keys per SELECT (below SQLite's bound on bound parameters)


def key(fingerprint: str, text: str) -> str:
    """The row key of ``text`` embedded by the encoder with ``fingerprint``."""
    return hashlib.sha256(f"{fingerprint}\x00{text}".encode()).hexdigest()


class VectorStore(SqliteStore):
    """Unit vectors by key (see the module's docstring)."""

    SCHEMA = (
        "CREATE TABLE IF NOT EXISTS vectors"
        " (key TEXT PRIMARY KEY, vec BLOB NOT NULL, created REAL NOT NULL)",
    )
    VERSION = 1
    LABEL = "vector cache"

    def __init__(self, path: str | Path | None = None, dim: int = 384) -> None:
        super().__init__(Path(path) if path is not None else fllm_home() / FILE_NAME)
        self.dim = dim

    def get(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of those of ``keys`` that have one of the right size."""
        found: dict[str, np.ndarray] = {}
        for at in range(0, len(keys), _CHUNK):
            chunk = keys[at : at + _CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = self._run(f"SELECT key, vec FROM vectors WHERE key IN ({marks})", tuple(chunk))
            for name, blob in rows:
                if isinstance(blob, bytes) and len(blob) == 4 * self.dim:
                    vec = np.frombuffer(blob, dtype=np.float32).copy()
                    # a damaged row is a miss (and is written again): a unit vector or nothing
                    if np.isfinite(vec).all() and abs(float(np.linalg.norm(vec)) - 1.0) < 1e-3:
                        found[str(name)] = vec
        return found

    def put(self, vectors: Mapping[str, np.ndarray]) -> None:
        """Store ``vectors`` by key, then drop the earliest written rows past ``CAP``."""
        if not vectors:
            return
        now = time.time()
        self._run_many(
            "INSERT OR REPLACE INTO vectors (key, vec, created) VALUES (?, ?, ?)",
            ((k, np.asarray(v, dtype=np.float32).tobytes(), now) for k, v in vectors.items()),
        )
        self._run(
            "DELETE FROM vectors WHERE rowid IN (SELECT rowid FROM vectors ORDER BY rowid"
            " LIMIT max(0, (SELECT COUNT(*) FROM vectors) - ?))",
            (CAP,),
        )

    def __len__(self) -> int:
        rows = self._run("SELECT COUNT(*) FROM vectors", ())
        return int(rows[0][0]) if rows else 0


def default_store() -> VectorStore | None:
    """The store under ``fllm_home()``, or None when ``$FLLM_NO_CACHE`` is set."""
    if os.environ.get("FLLM_NO_CACHE"):
        return None
    return VectorStore()
