"""A persistent passage-embedding cache: one SQLite file per model fingerprint, keyed by a hash of the text.

Real workloads repeat pages heavily (many questions per subject, reruns of a pipeline), so a passage is encoded
once per model setting, ever. Writes are transactional; a crash loses at most the batch being written. The cache
is checked when it is opened (a folder in the way, no write permission, a damaged file), so a bad location fails
before any model loads; one cache may be used from several threads; where the filesystem has no WAL support (NFS
home folders) it falls back to SQLite's rollback journal.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import numpy as np

from odqa.errors import InputError, OdqaError, OutputError

__all__ = ["EmbeddingCache", "default_cache_dir"]

_LOOKUP_CHUNK = 500  # stays under SQLite's host-parameter limit
_FIX = "pass --cache-dir with a writable folder, or --cache-dir '' to turn the cache off"


def default_cache_dir() -> Path:
    """``$ODQA_CACHE_DIR``, else ``$XDG_CACHE_HOME/odqa/embeddings``, else ``~/.cache/odqa/embeddings``."""
    explicit = os.environ.get("ODQA_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "odqa" / "embeddings"


def _key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


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


class EmbeddingCache:
    """Text -> float32 vector for one model fingerprint; one cache may be shared by several threads."""

    def __init__(self, directory: Path, fingerprint: str) -> None:
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise OutputError(f"embedding cache folder {directory} is a file, not a folder; {_FIX}") from None
        except OSError as exc:
            raise OutputError(f"embedding cache folder {directory} cannot be created ({_reason(exc)}); {_FIX}"
                              ) from exc
        self.path = directory / f"{fingerprint}.sqlite"
        self._lock = threading.Lock()
        with self._failures("open", OutputError):
            self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        try:
            self.journal_mode = self._check()
        except BaseException:
            self._db.close()
            raise

    def _check(self) -> str:
        """Set the journal mode; check that the file is a cache database this process may write to."""
        try:
            with self._failures("use", OutputError):
                mode = _journal_mode(self._db)
                self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL)")
            self._db.execute("SELECT key, vector FROM vectors LIMIT 0")  # a table of that name that is not ours
        except sqlite3.DatabaseError as exc:  # not a database, a damaged one, or another program's
            raise InputError(
                f"embedding cache {self.path} is not a valid cache database ({_reason(exc)}); delete that file "
                f"(it only holds cached vectors) or {_FIX}"
            ) from exc
        with self._failures("write to", OutputError):  # a read-only file fails here, not after the model loads
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute("CREATE TABLE write_check (x)")
            finally:
                self._db.execute("ROLLBACK")
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

    def get_many(self, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """The cached vectors among ``texts``."""
        by_key = {_key(t): t for t in texts}
        keys = list(by_key)
        found: dict[str, np.ndarray] = {}
        with self._lock, self._failures("read", InputError):
            for start in range(0, len(keys), _LOOKUP_CHUNK):
                chunk = keys[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                for key, blob in self._db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", chunk):
                    found[by_key[key]] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, vectors: Mapping[str, np.ndarray]) -> None:
        """Store vectors in one transaction (existing keys are left as they are)."""
        rows = [(_key(t), np.asarray(v, dtype=np.float32).tobytes()) for t, v in vectors.items()]
        with self._lock, self._failures("write to", OutputError):
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("INSERT OR IGNORE INTO vectors (key, vector) VALUES (?, ?)", rows)
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._db.close()
