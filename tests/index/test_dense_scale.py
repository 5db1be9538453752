"""Dense indexes at scale: vectors brought from elsewhere (--vectors), IVF inverted lists on disk and memory-mapped,
memory and disk known (and refused) before any work, a full disk mid-build resumable."""

from __future__ import annotations

import dataclasses
import errno
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from odqa.config import EmbedConfig
from odqa.errors import InputError, OutputError, ResourceError
from odqa.index.build import build_index
from odqa.index.config import IndexConfig
from odqa.index.dense import load_faiss
from odqa.index.manifest import read_manifest
from odqa.records import Passage

COUNT, DIM = 3000, 32


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def unit_vectors(count: int, seed: int = 0) -> np.ndarray:
    """Clustered random unit vectors (16 centres), as real embeddings cluster."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((16, DIM))
    vectors = centres[rng.integers(0, 16, count)] + 0.5 * rng.standard_normal((count, DIM))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def passages() -> list[Passage]:
    return [Passage(f"p{i}", f"d{i // 10}", f"Title {i // 10}", f"passage {i} text") for i in range(COUNT)]


@pytest.fixture(scope="module")
def vectors_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The vectors as three .npy shards of uneven sizes (they need not match the index's shards)."""
    folder = tmp_path_factory.mktemp("vectors")
    vectors = unit_vectors(COUNT)
    for name, (start, stop) in {"a.npy": (0, 1000), "b.npy": (1000, 2200), "c.npy": (2200, COUNT)}.items():
        np.save(folder / name, vectors[start:stop])
    return folder


def config_for(tiny_bert: Path, factory: str, **changes: object) -> IndexConfig:
    embed = EmbedConfig(model=str(tiny_bert), pooling="mean", normalize=True, device="cpu")
    return dataclasses.replace(IndexConfig(kind="dense", faiss=factory, shard_size=700, embed=embed), **changes)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, passages: list[Passage], vectors_dir: Path,
              tiny_bert: Path) -> Path:
    """An uninterrupted IVF-PQ build from the vectors (5 shards of 700, the last of 200); do not modify it."""
    out = tmp_path_factory.mktemp("reference") / "index"
    build_index(passages, out, config_for(tiny_bert, "IVF16,PQ8x4"), vectors=vectors_dir)
    return out


@pytest.mark.parametrize("factory", ["IVF16,Flat", "IVF16,SQ8", "IVF16,PQ8x4"])
def test_on_disk_ivf_searches_as_the_in_memory_index(factory: str, tmp_path: Path, passages: list[Passage],
                                                     vectors_dir: Path, tiny_bert: Path) -> None:
    import faiss

    out = tmp_path / "index"
    manifest = build_index(passages, out, config_for(tiny_bert, factory), vectors=vectors_dir)
    assert set(manifest.index_files) == {"faiss", "ivfdata"}
    assert manifest.settings["vectors"] == "imported" and manifest.settings["model"] == str(tiny_bert)
    vectors = unit_vectors(COUNT)
    assert np.array_equal(np.concatenate([np.load(out / s.files["vectors"].name) for s in manifest.shards]), vectors)
    on_disk = load_faiss(out, "nprobe=4")
    lists = faiss.downcast_InvertedLists(faiss.extract_index_ivf(on_disk).invlists)
    assert isinstance(lists, faiss.OnDiskInvertedLists)  # memory-mapped, not read into memory
    # Independent reference: the same factory trained on the same vectors (all of them) and filled in memory.
    memory = faiss.index_factory(DIM, factory, faiss.METRIC_INNER_PRODUCT)
    memory.train(vectors)
    memory.add(vectors)
    faiss.ParameterSpace().set_index_parameters(memory, "nprobe=4")
    queries = unit_vectors(50, seed=1)
    scores, rows = on_disk.search(queries, 10)
    expected_scores, expected_rows = memory.search(queries, 10)
    assert np.array_equal(rows, expected_rows)
    np.testing.assert_array_equal(scores, expected_scores)


def test_an_imported_index_is_queried_with_its_model(tmp_path: Path, passages: list[Passage], vectors_dir: Path,
                                                     tiny_bert: Path) -> None:
    from odqa.retrieve.compose import load_retriever
    from odqa.retrieve.dense import DenseRetriever

    out = tmp_path / "index"
    build_index(passages[:1000], out, config_for(tiny_bert, "Flat"), vectors=vectors_dir / "a.npy")
    retriever = load_retriever(out, device="cpu")
    assert isinstance(retriever, DenseRetriever) and retriever.encoder.preset.model == str(tiny_bert)
    hits = retriever.search(["a question"], 5)[0]
    query = retriever.encoder.encode_queries(["a question"])[0]
    expected = np.argsort(-(np.load(vectors_dir / "a.npy") @ query), kind="stable")[:5]
    assert [h.passage.id for h in hits] == [f"p{i}" for i in expected]


def _bad(folder: Path, name: str, array: np.ndarray) -> Path:
    folder.mkdir(exist_ok=True)
    np.save(folder / name, array)
    return folder


@pytest.mark.parametrize(("make", "message"), [
    (lambda d: d / "missing", "no such file or folder"),
    (lambda d: (d / "empty").mkdir() or d / "empty", "the folder holds no .npy file"),
    (lambda d: _bad(d / "v", "x.npy", unit_vectors(COUNT - 1)), "holds 2,999 vectors but the input has 3,000"),
    (lambda d: _bad(d / "v", "x.npy", unit_vectors(COUNT).astype(np.int32)), "dtype int32 is not a float"),
    (lambda d: _bad(d / "v", "x.npy", unit_vectors(COUNT).ravel()), r"shape \(96000,\) is not \(passages, dimension\)"),
    (lambda d: _bad(_bad(d / "v", "a.npy", unit_vectors(1000)), "b.npy", np.zeros((2000, 16), np.float32)),
     "different dimensions \\(a.npy 32, b.npy 16\\)"),
    (lambda d: _bad(d / "v", "x.npy", np.where(np.arange(COUNT)[:, None] == 2500, np.nan, unit_vectors(COUNT))),
     "vector 2,500 \\(counting from 0\\) holds NaN or infinite values"),
    (lambda d: _bad(d / "v", "x.npy", np.where(np.arange(COUNT)[:, None] == 7, np.inf, unit_vectors(COUNT))),
     "vector 7 \\(counting from 0\\) holds NaN or infinite"),
    (lambda d: _bad(d / "v", "x.npy", 2 * unit_vectors(COUNT)), "vector 0 has length 2.0000, but the model normalises"),
])
def test_bad_vectors_are_one_line_and_nothing_is_written(make: object, message: str, tmp_path: Path,
                                                         passages: list[Passage], tiny_bert: Path) -> None:
    vectors = make(tmp_path)  # type: ignore[operator]
    out = tmp_path / "index"
    with pytest.raises(InputError, match=message):
        build_index(passages, out, config_for(tiny_bert, "IVF16,PQ8x4"), vectors=vectors)
    assert not out.exists()


def test_memory_is_estimated_before_any_work_naming_factories_that_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    """DPR's Wikipedia (21,015,324 x 768): Flat needs 64.6 GB, refused on a 24 GB machine with what fits."""
    from odqa.index import resources
    from odqa.index.resources import check_plan, plan_build

    monkeypatch.setattr(resources, "machine_memory", lambda: 24 * 10**9)
    wiki = 21_015_324
    flat = plan_build("dense", wiki, 13 * 10**9, "Flat", 768)
    assert flat.memory_bytes == wiki * 768 * 4 == flat.index_bytes
    with pytest.raises(ResourceError, match=r"a Flat index of 21,015,324 x 768 vectors needs 64.6 GB of memory, this "
                                            r"machine has 24.0 GB available; factories that fit: IVF32768,PQ64 "
                                            r"\(407.9 MB memory, 1.6 GB disk\), IVF32768,SQ8"):
        check_plan(flat, Path("."))
    pq = plan_build("dense", wiki, 13 * 10**9, "IVF65536,PQ64", 768)
    assert pq.index_bytes == 65536 * 768 * 4 + wiki * (64 + 8)  # 1.71 GB on disk: quantizer, codes and ids
    assert pq.memory_bytes == 65536 * 768 * 4 + 100_000 * 768 * 4  # lists on disk: quantizer and training sample
    hnsw = plan_build("dense", wiki, 0, "HNSW32", 768)
    assert 64.6e9 < hnsw.memory_bytes < 64.6e9 + wiki * 300  # vectors plus 64 level-0 links of 4 bytes


def test_a_build_that_does_not_fit_writes_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                  passages: list[Passage], vectors_dir: Path,
                                                  tiny_bert: Path) -> None:
    from odqa.index import resources

    monkeypatch.setattr(resources, "machine_memory", lambda: 300_000)
    with pytest.raises(ResourceError, match=r"a Flat index of 3,000 x 32 vectors needs 384.0 KB of memory, this "
                                            r"machine has 300.0 KB available; factories that fit: IVF256,PQ32 "
                                            r"\(160.8 KB memory, 152.8 KB disk\)"):
        build_index(passages, tmp_path / "a", config_for(tiny_bert, "Flat", train_size=1000), vectors=vectors_dir)
    assert not (tmp_path / "a").exists()
    monkeypatch.undo()
    free = type("Usage", (), {"free": 10_000})
    monkeypatch.setattr(resources.shutil, "disk_usage", lambda path: free)
    with pytest.raises(ResourceError, match=r"3,000 passages need about [\d.]+ [KM]B of disk .* has 10.0 KB free; "
                                            r"free disk space or choose another --out"):
        build_index(passages, tmp_path / "b", config_for(tiny_bert, "Flat"), vectors=vectors_dir)
    assert not (tmp_path / "b").exists()


def test_out_of_disk_mid_shard_is_one_line_and_resumes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                       passages: list[Passage], vectors_dir: Path,
                                                       tiny_bert: Path, reference: Path) -> None:
    config = config_for(tiny_bert, "IVF16,PQ8x4")
    out = tmp_path / "index"
    real_save, saves = np.save, []

    def full_disk(fh: object, array: np.ndarray, *args: object, **kwargs: object) -> None:
        saves.append(1)
        if len(saves) == 5:  # shard 2's offsets: its text is written, the disk fills up
            raise OSError(errno.ENOSPC, "No space left on device")
        real_save(fh, array, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(np, "save", full_disk)
    with pytest.raises(OutputError, match=r"No space left on device; free disk space and rerun the same command: the "
                                          r"build resumes from shard 2$"):
        build_index(passages, out, config, vectors=vectors_dir)
    monkeypatch.undo()
    assert [s.index for s in read_manifest(out).shards] == [0, 1]
    assert not list(out.rglob("*.tmp"))  # the failed write left nothing behind
    build_index(passages, out, config, vectors=vectors_dir)
    assert files_of(out) == files_of(reference)


_KILLED_ASSEMBLY = """
import sys, time
import numpy as np
from odqa.config import EmbedConfig
from odqa.index import dense
from odqa.index.build import build_index
from odqa.index.config import IndexConfig
from odqa.records import Passage

out, vectors, model, step = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
config = IndexConfig(kind="dense", faiss="IVF16,PQ8x4", shard_size=700,
                     embed=EmbedConfig(model=model, pooling="mean", normalize=True, device="cpu"))
passages = [Passage(f"p{i}", f"d{i // 10}", f"Title {i // 10}", f"passage {i} text") for i in range({count})]
writes = []
real_write, real_replace = dense._write, dense.os.replace

def block():
    print("blocked", flush=True)
    time.sleep(600)

def write(faiss, index, path):
    real_write(faiss, index, path)
    writes.append(path)
    if step == "block" and len(writes) == 3 or step == "header" and path.name == "faiss.index":
        block()

def replace(src, dst):
    if step == "ivfdata" and str(dst).endswith("faiss.ivfdata"):
        real_replace(src, dst)
        block()
    real_replace(src, dst)

dense._write, dense.os.replace = write, replace
build_index(passages, out, config, vectors=vectors)
""".replace("{count}", str(COUNT))


@pytest.mark.parametrize("step", ["block", "header", "ivfdata"])
def test_assembly_killed_at_any_point_resumes_to_identical_bytes(step: str, tmp_path: Path, passages: list[Passage],
                                                                 vectors_dir: Path, tiny_bert: Path,
                                                                 reference: Path,
                                                                 kill_when_blocked: Callable[..., None]) -> None:
    """SIGKILL after the third block of inverted lists is written, after faiss.index is written (its ivfdata still
    under a temporary name), and after faiss.ivfdata is in place (the manifest not yet complete)."""
    config = config_for(tiny_bert, "IVF16,PQ8x4")
    out = tmp_path / "index"
    kill_when_blocked(_KILLED_ASSEMBLY, str(out), str(vectors_dir), str(tiny_bert), step)
    killed = read_manifest(out)
    assert not killed.complete and len(killed.shards) == 5  # every shard listed, the assembly unfinished
    build_index(passages, out, config, vectors=vectors_dir)
    assert files_of(out) == files_of(reference)


def test_cli_builds_from_vectors_saying_what_it_needs(tmp_path: Path, passages: list[Passage], vectors_dir: Path,
                                                      tiny_bert: Path) -> None:
    import json

    from typer.testing import CliRunner

    from odqa.cli import app

    source = tmp_path / "passages.jsonl"
    source.write_text("".join(json.dumps({"id": p.id, "title": p.title, "text": p.text}) + "\n" for p in passages))
    model = ["--model", str(tiny_bert), "--pooling", "mean", "--normalize"]
    out = tmp_path / "index"
    result = CliRunner().invoke(app, ["index", "build", str(source), "--vectors", str(vectors_dir), *model,
                                      "--faiss", "IVF16,SQ8", "--shard-size", "1000", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert re.search(r"3,000 passages need about [\d.]+ KB of disk \(text [\d.]+ KB, vectors 384.0 KB, IVF16,SQ8 "
                     r"index [\d.]+ KB\) and [\d.]+ KB of memory for the index", result.output), result.output
    assert read_manifest(out).settings["vectors"] == "imported"
    result = CliRunner().invoke(app, ["index", "build", str(source), "--vectors", str(vectors_dir / "a.npy"), *model,
                                      "--out", str(tmp_path / "other")])
    assert result.exit_code == 1
    assert result.output.startswith("InputError: --vectors ") and "holds 1,000 vectors but the input has 3,000" in (
        result.output) and result.output.count("\n") == 1
