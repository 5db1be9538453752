"""The embedding cache: bad cache locations fail fast with one typed line, threads share it, no-WAL filesystems."""

from __future__ import annotations

import functools
import itertools
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
    assert not (tmp_path / "embeddings.sqlite-wal").exists()
    on_disk = _REAL_CONNECT(tmp_path / "embeddings.sqlite")
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


def _vector(text: str) -> np.ndarray:
    """A vector that depends on the text only, so any process can check what it reads back."""
    seed = int.from_bytes(text.encode()[-4:].rjust(4, b"\0"), "little")
    return np.random.default_rng(seed).random(96, dtype=np.float32)


def test_past_its_limit_the_cache_evicts_the_least_recently_used(tmp_path: Path) -> None:
    limit = 256 << 10
    with EmbeddingCache(tmp_path, "fp", limit_bytes=limit) as cache:
        cache.put_many({"kept": _vector("kept")})
        for round_ in range(40):
            cache.get_many(["kept"])  # read again and again: recently used, never evicted
            cache.put_many({f"t{round_}-{i}": _vector(f"t{round_}-{i}") for i in range(20)})
        info = cache.info()
        assert info.bytes_used <= limit
        assert "kept" in cache.get_many(["kept"])
        assert not cache.get_many(["t0-0", "t0-1"])  # the oldest, never read again, were evicted
        assert cache.get_many(["t39-0"])  # the newest stayed
        assert 0 < info.vectors < 1 + 40 * 20


def test_eviction_frees_down_to_its_target_so_it_does_not_run_on_every_write(tmp_path: Path) -> None:
    from odqa.embed.cache import _EVICT_TO

    limit = 256 << 10
    with EmbeddingCache(tmp_path, "fp", limit_bytes=limit) as cache:
        used, vectors = [], []
        for round_ in range(150):  # fill past the limit a few times over, a few vectors at a time
            cache.put_many({f"t{round_}-{i}": _vector(f"t{round_}-{i}") for i in range(8)})
            info = cache.info()
            used.append(info.bytes_used)
            vectors.append(info.vectors)
        evictions = [i for i in range(1, len(vectors)) if vectors[i] < vectors[i - 1] + 8]
        assert evictions, "the limit was never reached: the test proves nothing"
        for i in evictions:
            assert used[i] <= _EVICT_TO * limit, (i, used[i], limit)  # down to the target, not just under the limit
        # between two evictions the file grows by whole writes again: eviction does not run on nearly every write
        assert all(later - earlier >= 3 for earlier, later in itertools.pairwise(evictions))


def _fill(folder: str, worker: int) -> int:
    with EmbeddingCache(Path(folder), "fp", limit_bytes=192 << 10) as cache:
        wrong = 0
        for round_ in range(30):
            texts = [f"w{worker}-{round_}-{i}" for i in range(15)] + [f"shared-{i}" for i in range(10)]
            cache.put_many({t: _vector(t) for t in texts})
            found = cache.get_many(texts + [f"w{1 - worker}-{round_}-{i}" for i in range(15)])
            wrong += sum(not np.array_equal(v, _vector(t)) for t, v in found.items())
        return wrong


def test_two_processes_share_one_bounded_cache(tmp_path: Path) -> None:
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(2) as pool:
        wrong = pool.starmap(_fill, [(str(tmp_path), 0), (str(tmp_path), 1)])
    assert wrong == [0, 0]  # every vector read back is the one written for its text
    with EmbeddingCache(tmp_path, "fp", limit_bytes=192 << 10) as cache:
        info = cache.info()
        assert info.vectors > 0 and info.bytes_used <= 192 << 10


def test_precision_is_part_of_the_cache_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Encoder, "_load", lambda self: SimpleNamespace(device="cpu"))
    fingerprints = set()
    for precision in ("fp32", "fp16"):
        with Encoder(EmbedConfig(model="minilm", cache_dir=str(tmp_path), device="cpu", backend="torch",
                                 precision=precision)) as encoder:  # type: ignore[arg-type]
            fingerprints.add(encoder.fingerprint)
            assert encoder.precision == precision
    assert len(fingerprints) == 2
    with EmbeddingCache(tmp_path, "") as cache:
        assert len(cache.info().models) == 2  # both settings are listed by `odqa cache info`


def test_cache_info_and_clear_commands(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from odqa.cli import app

    runner = CliRunner()
    empty = runner.invoke(app, ["cache", "info", "--cache-dir", str(tmp_path / "none")])
    assert empty.exit_code == 0 and "no embedding cache" in empty.output
    with EmbeddingCache(tmp_path, "fp", identity='{"model": "m", "precision": "bf16"}') as cache:
        cache.put_many({f"t{i}": _vector(f"t{i}") for i in range(7)})
    info = runner.invoke(app, ["cache", "info", "--cache-dir", str(tmp_path)])
    assert info.exit_code == 0 and "m (bf16, fp)" in info.output and "7" in info.output
    cleared = runner.invoke(app, ["cache", "clear", "--cache-dir", str(tmp_path)])
    assert cleared.exit_code == 0 and "cleared 7 vectors" in cleared.output
    with EmbeddingCache(tmp_path, "fp") as cache:
        assert cache.info().vectors == 0


def converted_model(folder: Path, mib: int) -> Path:
    """A stand-in converted model of ``mib`` MiB in the converted-models folder ``folder``."""
    (folder / "abc").mkdir(parents=True)
    (folder / "abc" / "model.bin").write_bytes(b"\0" * mib * 2**20)
    return folder


def test_cache_info_counts_and_clear_removes_the_converted_models(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from odqa.cli import app

    runner = CliRunner()
    with EmbeddingCache(tmp_path / "vectors", "fp", identity='{"model": "m", "precision": "bf16"}') as cache:
        cache.put_many({"t": _vector("t")})
    folders = ["--cache-dir", str(tmp_path / "vectors"), "--converted-dir", str(converted_model(tmp_path / "cv", 3))]
    info = runner.invoke(app, ["cache", "info", *folders])
    assert info.exit_code == 0 and "converted models 3.0 MiB" in " ".join(info.output.split())
    cleared = runner.invoke(app, ["cache", "clear", *folders])
    assert cleared.exit_code == 0 and "converted models (3.0 MiB" in " ".join(cleared.output.split())
    assert not (tmp_path / "cv").exists() and (tmp_path / "vectors").is_dir()


def test_converted_models_without_vectors_are_shown_and_cleared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    from typer.testing import CliRunner

    from odqa.cli import app

    runner = CliRunner()
    monkeypatch.setenv("ODQA_CONVERTED_DIR", str(converted_model(tmp_path / "cv", 1)))  # the default folder
    info = runner.invoke(app, ["cache", "info", "--cache-dir", str(tmp_path / "none")])
    assert info.exit_code == 0 and "no vectors" in info.output and "converted models 1.0 MiB" in \
        " ".join(info.output.split())
    cleared = runner.invoke(app, ["cache", "clear", "--cache-dir", str(tmp_path / "none")])
    assert cleared.exit_code == 0 and "converted models (1.0 MiB" in " ".join(cleared.output.split())
    assert not (tmp_path / "cv").exists()
