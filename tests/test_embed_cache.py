"""The embedding cache: bad cache locations fail fast with one typed line, threads share it, no-WAL filesystems."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from odqa.config import EmbedConfig
from odqa.embed import Encoder
from odqa.embed.cache import EmbeddingCache
from odqa.errors import InputError, OdqaError, OutputError
from odqa.records import Passage

_REAL_CONNECT = sqlite3.connect


def cache_file(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The cache file the ``minilm`` preset uses under ``cache_dir``, created by an encoder with a stand-in model."""
    with monkeypatch.context() as patch:
        patch.setattr(Encoder, "_load", lambda self: SimpleNamespace(device="cpu"))
        with Encoder(EmbedConfig(model="minilm", cache_dir=str(cache_dir), device="cpu")) as encoder:
            assert encoder.cache is not None
            return encoder.cache.path


def read_only_sqlite(monkeypatch: pytest.MonkeyPatch) -> None:
    """Open every SQLite file read-only, as SQLite does for a file or folder the user may not write to."""
    def connect(path: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        db: sqlite3.Connection = _REAL_CONNECT(f"file:{path}?mode=ro", *args, uri=True, **kwargs)
        return db

    monkeypatch.setattr(sqlite3, "connect", connect)


def folder_is_a_file(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root.write_text("not a folder")
    return root


def parent_is_a_file(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root.write_text("not a folder")
    return root / "embeddings"


def cache_file_is_a_folder(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = cache_file(root, monkeypatch)
    path.unlink()
    path.mkdir()
    return root


def folder_not_writable(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root.mkdir()
    read_only_sqlite(monkeypatch)  # no cache file yet: SQLite cannot create one
    return root


def cache_file_not_writable(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache_file(root, monkeypatch)
    read_only_sqlite(monkeypatch)
    return root


def corrupt_database(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache_file(root, monkeypatch).write_bytes(b"this is not SQLite " * 400)
    return root


def foreign_database(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = cache_file(root, monkeypatch)
    path.unlink()
    db = _REAL_CONNECT(path)
    db.execute("CREATE TABLE vectors (id INTEGER, name TEXT)")  # a SQLite file, but not an embedding cache
    db.commit()
    db.close()
    return root


@pytest.mark.parametrize(
    ("broken", "error", "match"),
    [
        (folder_is_a_file, OutputError, r"cache folder .* is a file"),
        (parent_is_a_file, OutputError, r"cache folder .* cannot be created"),
        (cache_file_is_a_folder, OutputError, r"cannot open the embedding cache"),
        (folder_not_writable, OutputError, r"cannot open the embedding cache"),
        (cache_file_not_writable, OutputError, r"cannot write to the embedding cache"),
        (corrupt_database, InputError, r"embedding cache .* is not a valid cache database"),
        (foreign_database, InputError, r"embedding cache .* is not a valid cache database"),
    ],
)
def test_a_bad_cache_fails_before_the_model_loads_with_one_typed_line(
    broken: Callable[[Path, pytest.MonkeyPatch], Path], error: type[OdqaError], match: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, no_model_load: type[Exception],
) -> None:
    cache_dir = broken(tmp_path / "cache", monkeypatch)
    with pytest.raises(error, match=match) as caught:
        Encoder(EmbedConfig(model="minilm", cache_dir=str(cache_dir), device="cpu"))
    message = str(caught.value)
    assert "\n" not in message
    assert "--cache-dir" in message  # says how to fix it


def test_a_write_that_fails_mid_run_is_a_typed_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class DiskFull(sqlite3.Connection):
        def executemany(self, sql: str, rows: Any) -> sqlite3.Cursor:
            raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(sqlite3, "connect", functools.partial(_REAL_CONNECT, factory=DiskFull))
    cache = EmbeddingCache(tmp_path, "fp")
    with pytest.raises(OutputError, match=r"cannot write to the embedding cache .*database or disk is full"):
        cache.put_many({"text": np.ones(3, dtype=np.float32)})
    cache.close()


class WalRefused(sqlite3.Connection):
    """A connection on a filesystem without WAL support: SQLite leaves the journal mode as it was."""

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql.replace(" ", "").lower() == "pragmajournal_mode=wal":
            return super().execute("PRAGMA journal_mode")
        return super().execute(sql, *args)


class WalFails(sqlite3.Connection):
    """A connection on a filesystem where asking for WAL raises (NFS without shared-memory locking)."""

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql.replace(" ", "").lower() == "pragmajournal_mode=wal":
            raise sqlite3.OperationalError("database is locked")
        return super().execute(sql, *args)


def test_the_cache_uses_wal_where_it_can(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path, "fp")
    assert cache.journal_mode == "wal"
    cache.close()


@pytest.mark.parametrize("connection", [WalRefused, WalFails])
def test_without_wal_the_cache_falls_back_to_a_rollback_journal(
    connection: type[sqlite3.Connection], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patch:
        patch.setattr(sqlite3, "connect", functools.partial(_REAL_CONNECT, factory=connection))
        cache = EmbeddingCache(tmp_path, "fp")
        assert cache.journal_mode == "delete"
        cache.put_many({"a": np.array([1.0, 2.0], dtype=np.float32)})
        np.testing.assert_array_equal(cache.get_many(["a", "b"])["a"], [1.0, 2.0])
        cache.close()
        again = EmbeddingCache(tmp_path, "fp")  # what was written persists
        assert list(again.get_many(["a", "b"])) == ["a"]
        again.close()
    assert not (tmp_path / "fp.sqlite-wal").exists()
    on_disk = _REAL_CONNECT(tmp_path / "fp.sqlite")
    assert on_disk.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    on_disk.close()


@pytest.fixture
def shared_encoder(minilm_path: Path, tmp_path: Path) -> Iterator[Encoder]:
    with Encoder(EmbedConfig(model="minilm", cache_dir=str(tmp_path), device="cpu")) as encoder:
        yield encoder


def test_two_threads_encode_against_one_cache(shared_encoder: Encoder, minilm_encoder: Any) -> None:
    batches = [[Passage(f"{t}-{i}", "d", "T", f"thread {t} text {i % 4}") for i in range(12)] for t in range(2)]
    expected = [minilm_encoder.encode_passages(batch) for batch in batches]
    for _ in range(2):  # the first round fills the cache from both threads, the second reads it from both
        with ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(shared_encoder.encode_passages, batches))
        for got, want in zip(results, expected, strict=True):
            np.testing.assert_allclose(got, want, atol=1e-5)
        assert shared_encoder.encoded == 8  # 2 threads x 4 distinct texts, each encoded once, ever
