"""A persistent, bounded passage-embedding cache: one SQLite file per folder, keyed by model fingerprint and text.

Real workloads repeat pages heavily (many questions per subject, reruns of a pipeline), so a passage is encoded
once per model setting, ever. The file is bounded: past ``limit_bytes`` the least recently used vectors are
evicted (reads mark what they return as used). Writes are transactional; a crash loses at most the batch being
written. The cache is checked when it is opened (a folder in the way, no write permission, a damaged file), so a
bad location fails before any model loads; one cache may be used from several threads, and one file from several
processes at once (SQLite's locking; each write and its eviction is one transaction); where the filesystem has no
WAL support (NFS home folders) it falls back to SQLite's rollback journal.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from odqa.errors import InputError, OdqaError, OutputError

__all__ = ["CACHE_FILE", "DEFAULT_LIMIT_BYTES", "CacheInfo", "EmbeddingCache"]

CACHE_FILE = "embeddings.sqlite"
DEFAULT_LIMIT_BYTES = 2 << 30  # 2 GiB: about 1.3M MiniLM vectors, 650K of a 768-dimensional model
_LOOKUP_CHUNK = 500  # stays under SQLite's host-parameter limit
_EVICT_TO = 0.9  # eviction frees down to this share of the limit, so it does not run on every write
_FIX = "pass --cache-dir with a writable folder, or --no-cache to turn the cache off"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, fingerprint TEXT NOT NULL, vector BLOB NOT NULL, "
    "used INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS vectors_used ON vectors (used)",
    "CREATE TABLE IF NOT EXISTS models (fingerprint TEXT PRIMARY KEY, identity TEXT NOT NULL)",
)


def _key(fingerprint: str, text: str) -> bytes:
    return hashlib.blake2b(f"{fingerprint}\0{text}".encode(), digest_size=16).digest()


def _reason(exc: BaseException) -> str:
    return (getattr(exc, "strerror", None) or str(exc)).splitlines()[0]


def _journal_mode(db: sqlite3.Connection) -> str:
    """Switch to WAL (readers never wait for the writer); where the filesystem refuses it, to the rollback journal."""
    try:
        mode = str(db.execute("PRAGMA journal_mode=WAL").fetchone()[0]).lower()
    except sqlite3.OperationalError:  # some network filesystems raise rather than keep the old mode
        mode = ""
    if mode == "wal":
        return mode
    return str(db.execute("PRAGMA journal_mode=DELETE").fetchone()[0]).lower()


def _now() -> int:
    return time.time_ns()


class _Rollback(Exception):
    """Ends a transaction that only tested something, rolling it back."""


@dataclass(frozen=True)
class CacheInfo:
    """What a cache file holds: its size against the limit, and vectors per model setting."""

    path: Path
    bytes_used: int
    limit_bytes: int
    vectors: int
    models: dict[str, tuple[str, int]]  # fingerprint -> (identity as JSON, vectors)


class EmbeddingCache:
    """Text -> float32 vector for one model fingerprint, in a size-bounded file shared by every model setting."""

    def __init__(self, directory: Path, fingerprint: str, limit_bytes: int = DEFAULT_LIMIT_BYTES,
                 identity: str | None = None) -> None:
        """Open (or create) the cache in ``directory``; ``identity`` (the settings behind ``fingerprint``, as
        JSON) is recorded for ``odqa cache info``."""
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise OutputError(f"embedding cache folder {directory} is a file, not a folder; {_FIX}") from None
        except OSError as exc:
            raise OutputError(f"embedding cache folder {directory} cannot be created ({_reason(exc)}); {_FIX}"
                              ) from exc
        self.path = directory / CACHE_FILE
        self.fingerprint = fingerprint
        self.limit_bytes = limit_bytes
        self._lock = threading.Lock()
        with self._failures("open", OutputError):
            self._db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        try:
            self.journal_mode = self._check(identity)
        except BaseException:
            self._db.close()
            raise

    def _check(self, identity: str | None) -> str:
        """Set the journal mode; check that the file is a cache database this process may write to."""
        try:
            with self._failures("use", OutputError):
                mode = _journal_mode(self._db)
                self._db.execute(_SCHEMA[0])
            self._db.execute("SELECT key, fingerprint, vector, used FROM vectors LIMIT 0")  # another program's table
            with self._failures("use", OutputError):
                for statement in _SCHEMA[1:]:
                    self._db.execute(statement)
        except sqlite3.DatabaseError as exc:  # not a database, a damaged one, or another program's
            raise InputError(
                f"embedding cache {self.path} is not a valid cache database ({_reason(exc)}); delete that file "
                f"(it only holds cached vectors) or {_FIX}"
            ) from exc
        # A read-only file fails here, not after the model loads.
        with self._failures("write to", OutputError), self._transaction():
            if identity is None:  # still proves the file writable
                self._db.execute("CREATE TABLE write_check (x)")
                raise _Rollback
            self._db.execute("INSERT OR REPLACE INTO models (fingerprint, identity) VALUES (?, ?)",
                             (self.fingerprint, identity))
        return mode

    @contextlib.contextmanager
    def _failures(self, action: str, error: type[OdqaError]) -> Iterator[None]:
        """Turn SQLite's errors into one typed line (misuse, such as a closed cache, stays a ProgrammingError)."""
        try:
            yield
        except sqlite3.ProgrammingError:
            raise
        except sqlite3.OperationalError as exc:
            raise error(f"cannot {action} the embedding cache {self.path} ({_reason(exc)}); {_FIX}") from exc

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction, taken at once (``BEGIN IMMEDIATE``) so two processes queue rather than deadlock."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException as exc:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            if isinstance(exc, _Rollback):
                return
            raise
        self._db.execute("COMMIT")

    def get_many(self, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """The cached vectors among ``texts``, each marked as just used."""
        by_key = {_key(self.fingerprint, t): t for t in texts}
        keys = list(by_key)
        found: dict[str, np.ndarray] = {}
        hits: list[bytes] = []
        with self._lock, self._failures("read", InputError):
            for start in range(0, len(keys), _LOOKUP_CHUNK):
                chunk = keys[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                for key, blob in self._db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", chunk):
                    found[by_key[key]] = np.frombuffer(blob, dtype=np.float32)
                    hits.append(key)
            if hits:
                now = _now()
                with self._transaction():
                    self._db.executemany("UPDATE vectors SET used = ? WHERE key = ?", [(now, k) for k in hits])
        return found

    def put_many(self, vectors: Mapping[str, np.ndarray]) -> None:
        """Store vectors in one transaction (existing keys are marked used), evicting past the size limit."""
        now = _now()
        rows = [(_key(self.fingerprint, t), self.fingerprint, np.asarray(v, dtype=np.float32).tobytes(), now)
                for t, v in vectors.items()]
        with self._lock, self._failures("write to", OutputError), self._transaction():
            self._db.executemany("INSERT INTO vectors (key, fingerprint, vector, used) VALUES (?, ?, ?, ?) "
                                 "ON CONFLICT (key) DO UPDATE SET used = excluded.used", rows)
            self._evict()

    def _bytes_used(self) -> int:
        """Bytes of the file in use (freed pages, which SQLite reuses, are not counted)."""
        pages = self._db.execute("PRAGMA page_count").fetchone()[0] - self._db.execute(
            "PRAGMA freelist_count").fetchone()[0]
        return int(pages * self._db.execute("PRAGMA page_size").fetchone()[0])

    def _evict(self) -> None:
        """Past the limit, drop least recently used vectors until the file is under ``_EVICT_TO`` of it (in a
        transaction): freeing only to the limit would, with partly emptied pages, evict again on the next write."""
        used = self._bytes_used()
        if used <= self.limit_bytes:
            return
        target = _EVICT_TO * self.limit_bytes
        while used > target:
            count = self._db.execute("SELECT count(*) FROM vectors").fetchone()[0]
            if not count:
                return
            excess = used - target
            drop = max(1, min(count, int(count * excess / used) + 1))
            self._db.execute("DELETE FROM vectors WHERE key IN (SELECT key FROM vectors ORDER BY used LIMIT ?)",
                             (drop,))
            used = self._bytes_used()

    def info(self) -> CacheInfo:
        """Size, limit and vectors per model setting."""
        with self._lock, self._failures("read", InputError):
            counts = dict(self._db.execute("SELECT fingerprint, count(*) FROM vectors GROUP BY fingerprint"))
            models = {fp: (identity, int(counts.get(fp, 0)))
                      for fp, identity in self._db.execute("SELECT fingerprint, identity FROM models")}
            return CacheInfo(self.path, self._bytes_used(), self.limit_bytes, sum(counts.values()), models)

    def clear(self) -> None:
        """Delete every vector (of every model setting) and give the space back to the filesystem."""
        with self._lock, self._failures("write to", OutputError):
            with self._transaction():
                self._db.execute("DELETE FROM vectors")
                self._db.execute("DELETE FROM models")
            self._db.execute("VACUUM")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
