"""A persistent passage-embedding cache: one SQLite file per model fingerprint, keyed by a hash of the text.

Real workloads repeat pages heavily (many questions per subject, reruns of a pipeline), so a passage is encoded
once per model setting, ever. Writes are transactional; a crash loses at most the batch being written.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

__all__ = ["EmbeddingCache", "default_cache_dir"]

_LOOKUP_CHUNK = 500  # stays under SQLite's host-parameter limit


def default_cache_dir() -> Path:
    """``$ODQA_CACHE_DIR``, else ``$XDG_CACHE_HOME/odqa/embeddings``, else ``~/.cache/odqa/embeddings``."""
    explicit = os.environ.get("ODQA_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "odqa" / "embeddings"


def _key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


class EmbeddingCache:
    """Text -> float32 vector for one model fingerprint."""

    def __init__(self, directory: Path, fingerprint: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"{fingerprint}.sqlite"
        self._db = sqlite3.connect(self.path, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL)")

    def get_many(self, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """The cached vectors among ``texts``."""
        by_key = {_key(t): t for t in texts}
        keys = list(by_key)
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), _LOOKUP_CHUNK):
            chunk = keys[start : start + _LOOKUP_CHUNK]
            marks = ",".join("?" * len(chunk))
            for key, blob in self._db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", chunk):
                found[by_key[key]] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, vectors: Mapping[str, np.ndarray]) -> None:
        """Store vectors in one transaction (existing keys are left as they are)."""
        rows = [(_key(t), np.asarray(v, dtype=np.float32).tobytes()) for t, v in vectors.items()]
        with self._db:
            self._db.executemany("INSERT OR IGNORE INTO vectors (key, vector) VALUES (?, ?)", rows)

    def close(self) -> None:
        self._db.close()
