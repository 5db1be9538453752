"""Dense index builds: layout, search, resuming after a kill (byte-identical), and FAISS factory strings."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from odqa.embed import passage_text
from odqa.errors import ConfigError, IndexMismatchError, OutputError
from odqa.index.build import build_index, open_encoder
from odqa.index.config import IndexConfig
from odqa.index.manifest import read_manifest, write_manifest
from odqa.records import Passage
from odqa.retrieve.compose import load_retriever
from odqa.retrieve.dense import DenseRetriever


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_manifest_describes_the_index(reference: Path, short_corpus: list[Passage], tiny_bert: Path) -> None:
    manifest = read_manifest(reference)
    assert manifest.kind == "dense" and manifest.complete
    assert manifest.count == len(short_corpus) == 60
    assert [s.count for s in manifest.shards] == [16, 16, 16, 12]
    settings = manifest.settings
    assert settings["model"] == str(tiny_bert) and settings["pooling"] == "mean" and settings["normalize"] is True
    assert settings["dimension"] == 32 and settings["faiss"] == "Flat" and settings["metric"] == "inner_product"
    assert settings["query_prefix"] == "" and settings["passage_prefix"] == ""
    assert len(manifest.corpus_digest or "") == 64 and manifest.odqa_version
    assert set(manifest.shards[0].files) == {"passages", "offsets", "vectors"}


def test_search_matches_brute_force_and_reads_passages_from_the_store(reference: Path, encoder: Any,
                                                                      short_corpus: list[Passage]) -> None:
    retriever = DenseRetriever(reference, encoder=encoder, batch_size=3)
    queries = [passage_text(short_corpus[i]) for i in (0, 17, 59)] + ["Who coached the team in 1990?"]
    results = retriever.search(queries, k=5)
    assert [hits[0].passage for hits in results[:3]] == [short_corpus[0], short_corpus[17], short_corpus[59]]
    vectors = encoder.encode_passages(short_corpus)
    expected = vectors @ encoder.encode_queries(queries).T
    for column, hits in enumerate(results):
        order = np.argsort(-expected[:, column], kind="stable")[:5]
        assert [h.passage.id for h in hits] == [short_corpus[i].id for i in order]
        np.testing.assert_allclose([h.score for h in hits], expected[order, column], rtol=1e-5, atol=1e-6)
    assert len(retriever.search(queries[:1], k=1000)[0]) == 60  # k beyond the corpus: all of it


_KILLED_BUILD = """
import sys, time, json
from odqa.config import ChunkConfig, EmbedConfig
from odqa.index.build import build_index, open_encoder
from odqa.index.config import IndexConfig
from odqa.index.source import read_passages

source, out, model, stop = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
config = IndexConfig(kind="dense", shard_size=16,
                     embed=EmbedConfig(model=model, pooling="mean", normalize=True, device="cpu"))

def passages():
    for i, p in enumerate(list(read_passages(source, ChunkConfig(words=30)))[:60]):
        if i == stop:
            print("blocked", flush=True)
            time.sleep(600)
        yield p

build_index(passages(), out, config, encoder=open_encoder(config))
"""


def test_build_killed_mid_shard_resumes_to_identical_bytes(tmp_path: Path, reference: Path, timeqa_file: Path,
                                                           tiny_bert: Path, short_corpus: list[Passage],
                                                           tiny_config: IndexConfig, encoder: Any,
                                                           kill_when_blocked: Callable[..., None]) -> None:
    out = tmp_path / "index"
    # Stops reading in the middle of shard 1 (passage 21 of 16..31), after shard 0 is written: then SIGKILL.
    kill_when_blocked(_KILLED_BUILD, str(timeqa_file), str(out), str(tiny_bert), "21")
    killed = read_manifest(out)
    assert not killed.complete and [s.index for s in killed.shards] == [0]
    build_index(short_corpus, out, tiny_config, encoder=encoder)
    assert files_of(out) == files_of(reference)


def test_build_interrupted_between_shards_or_mid_write_resumes(tmp_path: Path, reference: Path,
                                                               short_corpus: list[Passage],
                                                               tiny_config: IndexConfig, encoder: Any) -> None:
    def interrupted() -> Iterator[Passage]:
        yield from short_corpus[:32]
        raise KeyboardInterrupt  # between shards 1 and 2

    out = tmp_path / "index"
    with pytest.raises(KeyboardInterrupt):
        build_index(interrupted(), out, tiny_config, encoder=encoder)
    assert [s.index for s in read_manifest(out).shards] == [0, 1]
    # What a kill in the middle of writing shard 2 leaves: a temp file, and a vectors file the manifest never listed.
    (out / "shards" / ".00002.vectors.npy.x1.tmp").write_bytes(b"partial")
    (out / "shards" / "00002.vectors.npy").write_bytes(b"\x93NUMPY half a shard")
    # ... and a listed shard damaged since: it and everything after it are rebuilt.
    (out / "shards" / "00001.vectors.npy").write_bytes(b"truncated")
    build_index(short_corpus, out, tiny_config, encoder=encoder)
    assert files_of(out) == files_of(reference)


def test_resume_refuses_other_input_or_settings(tmp_path: Path, short_corpus: list[Passage],
                                                tiny_config: IndexConfig, encoder: Any) -> None:
    out = tmp_path / "index"

    def interrupted() -> Iterator[Passage]:
        yield from short_corpus[:20]
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build_index(interrupted(), out, tiny_config, encoder=encoder)
    with pytest.raises(IndexMismatchError, match="shard 0 differ"):
        build_index(short_corpus[1:], out, tiny_config, encoder=encoder)
    with pytest.raises(IndexMismatchError, match="shard_size 16 -> 8"):
        build_index(short_corpus, out, dataclasses.replace(tiny_config, shard_size=8),
                    encoder=encoder)
    with pytest.raises(IndexMismatchError, match="fewer passages"):
        build_index([], out, tiny_config, encoder=encoder)
    build_index(short_corpus[:20], out, tiny_config, encoder=encoder)
    with pytest.raises(OutputError, match="already holds a complete index; pass --overwrite"):
        build_index(short_corpus[:20], out, tiny_config, encoder=encoder)
    manifest = build_index(short_corpus[:5], out, tiny_config, encoder=encoder,
                           overwrite=True)
    assert manifest.count == 5
    other = tmp_path / "not-an-index"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match="not an odqa index"):
        build_index(short_corpus, other, tiny_config, encoder=encoder)


def _with_faiss(reference: Path, tmp_path: Path, config: IndexConfig, encoder: Any) -> Path:
    """A copy of the reference whose FAISS stage is redone with ``config.faiss`` (shards reused, none re-encoded)."""
    out = tmp_path / config.faiss.replace(",", "_")
    shutil.copytree(reference, out)
    manifest = read_manifest(out)
    manifest.complete, manifest.settings = False, {**manifest.settings, "faiss": config.faiss}
    write_manifest(out, manifest)
    return out


@pytest.mark.parametrize("factory", ["HNSW32", "IVF4,Flat"])
def test_other_faiss_indexes_build_and_search(factory: str, tmp_path: Path, reference: Path,
                                              short_corpus: list[Passage], tiny_config: IndexConfig,
                                              encoder: Any) -> None:
    config = dataclasses.replace(tiny_config, faiss=factory)
    out = _with_faiss(reference, tmp_path, config, encoder)
    encoded = encoder.encoded
    build_index(short_corpus, out, config, encoder=encoder)
    assert encoder.encoded == encoded  # every shard was reused
    params = "efSearch=64" if factory == "HNSW32" else "nprobe=4"
    retriever = DenseRetriever(out, encoder=encoder, search_params=params)
    exact = DenseRetriever(reference, encoder=encoder)
    queries = [passage_text(p) for p in short_corpus[::7]]
    for approx, flat in zip(retriever.search(queries, 5), exact.search(queries, 5), strict=True):
        assert approx[0].passage == flat[0].passage  # searching all lists / a wide beam: exact on 60 vectors


def test_bad_factory_strings_are_config_errors(tmp_path: Path, reference: Path, short_corpus: list[Passage],
                                               tiny_config: IndexConfig, encoder: Any) -> None:
    bad = dataclasses.replace(tiny_config, faiss="Bogus12")
    with pytest.raises(ConfigError, match="FAISS cannot build 'Bogus12'"):
        build_index(short_corpus, _with_faiss(reference, tmp_path, bad, encoder), bad,
                    encoder=encoder)
    too_many_lists = dataclasses.replace(tiny_config, faiss="IVF1024,Flat")
    with pytest.raises(ConfigError, match="cannot train 'IVF1024,Flat' on 60 vectors"):
        build_index(short_corpus, _with_faiss(reference, tmp_path, too_many_lists, encoder), too_many_lists,
                    encoder=encoder)
    with pytest.raises(ConfigError, match="do not apply"):
        DenseRetriever(reference, encoder=encoder, search_params="nprobe=4")


def test_load_retriever_opens_a_dense_index_with_its_own_model(reference: Path, short_corpus: list[Passage]) -> None:
    retriever = load_retriever(reference, device="cpu")
    assert isinstance(retriever, DenseRetriever) and retriever.manifest.settings["faiss"] == "Flat"
    assert retriever.search([passage_text(short_corpus[3])], 1)[0][0].passage == short_corpus[3]
    assert json.loads((reference / "manifest.json").read_text())["complete"] is True


def test_build_memory_does_not_grow_with_the_corpus(tmp_path: Path, tiny_config: IndexConfig, encoder: Any) -> None:
    """Python-side peak memory (numpy included) of a streamed build: 8x the passages, about the same peak (held in
    memory, the extra 448 passages alone would add about 0.6 MB to a peak of about 1.2 MB)."""
    import tracemalloc

    def generated(count: int) -> Iterator[Passage]:
        for i in range(count):
            yield Passage(f"p{i}", f"d{i // 10}", f"Title {i // 10}", f"passage {i} " + "lorem ipsum dolor " * 60)

    peaks = []
    for count in (64, 512):
        build_index(generated(8), tmp_path / f"warm{count}", tiny_config, encoder=encoder)  # first-call allocations
        tracemalloc.start()
        build_index(generated(count), tmp_path / f"n{count}", tiny_config, encoder=encoder)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] < 1.3 * peaks[0], peaks


def test_queries_use_the_prompts_the_index_was_built_with(tmp_path: Path, tiny_config: IndexConfig,
                                                          short_corpus: list[Passage]) -> None:
    config = dataclasses.replace(tiny_config, embed=dataclasses.replace(tiny_config.embed, query_prompt="query: ",
                                                                         passage_prompt="passage: "))
    with open_encoder(config) as encoder:
        build_index(short_corpus[:8], tmp_path / "index", config, encoder=encoder)
    retriever = load_retriever(tmp_path / "index", device="cpu")
    assert isinstance(retriever, DenseRetriever)
    assert (retriever.encoder.preset.query_prefix, retriever.encoder.preset.passage_prefix) == ("query: ", "passage: ")
    with pytest.raises(ConfigError, match=r"needs an encoder: build_index\(passages, out, config, encoder="):
        build_index(short_corpus[:8], tmp_path / "other", config)


class FakeGpuIndex:
    """What faiss-gpu's index_cpu_to_all_gpus returns, stood in for (no GPU here): it wraps the CPU index, records
    every call the build or the search makes on it, and runs them on the CPU index."""

    def __init__(self, cpu: Any, calls: list[str]) -> None:
        self.cpu, self.calls = cpu, calls

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.cpu, name)
        if callable(attribute):
            self.calls.append(f"gpu.{name}")
        return attribute


def test_faiss_gpu_is_used_when_it_sees_a_gpu_and_falls_back_when_it_cannot(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, reference: Path, short_corpus: list[Passage],
        tiny_config: IndexConfig, encoder: Any) -> None:
    """With faiss-gpu seeing a GPU: training and adding run on the GPU copy, the copy moved back to the CPU is what is
    written, searches run on the GPU, and nprobe reaches the GPU index through GpuParameterSpace (ParameterSpace
    cannot set it there). HNSW, which FAISS has no GPU version of, stays on the CPU."""
    import faiss

    calls: list[str] = []
    cpu_space = faiss.ParameterSpace

    def to_gpu(index: Any) -> Any:
        if isinstance(index, faiss.IndexHNSW):
            raise RuntimeError("not implemented for GPU")
        calls.append("to_gpu")
        return FakeGpuIndex(index, calls)

    def to_cpu(index: Any) -> Any:
        assert isinstance(index, FakeGpuIndex)  # only a GPU index is moved back
        calls.append("to_cpu")
        return index.cpu

    class GpuParameterSpace:
        def set_index_parameters(self, index: Any, params: str) -> None:
            assert isinstance(index, FakeGpuIndex)
            calls.append(f"GpuParameterSpace {params}")
            cpu_space().set_index_parameters(index.cpu, params)

    class CpuOnlyParameterSpace:
        def set_index_parameters(self, index: Any, params: str) -> None:
            raise AssertionError("ParameterSpace used on a GPU index")

    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 1)
    monkeypatch.setattr(faiss, "index_cpu_to_all_gpus", to_gpu)
    monkeypatch.setattr(faiss, "index_gpu_to_cpu", to_cpu, raising=False)
    monkeypatch.setattr(faiss, "GpuParameterSpace", GpuParameterSpace, raising=False)
    flat = dataclasses.replace(tiny_config, faiss="Flat")
    build_index(short_corpus, _with_faiss(reference, tmp_path, flat, encoder), flat, encoder=encoder)
    assert calls == ["to_gpu", *["gpu.add"] * 4, "to_cpu"]  # each shard added on the GPU, the copy moved back
    calls.clear()
    config = dataclasses.replace(tiny_config, faiss="IVF4,Flat")
    out = _with_faiss(reference, tmp_path, config, encoder)
    build_index(short_corpus, out, config, encoder=encoder)
    # Trained on the GPU; each shard's block of the on-disk inverted lists filled on the GPU and moved back.
    assert calls == ["to_gpu", "gpu.train", "to_cpu", *["to_gpu", "gpu.add_with_ids", "to_cpu"] * 4]
    written = faiss.read_index(str(out / "faiss.index"), faiss.IO_FLAG_ONDISK_SAME_DIR)
    assert written.ntotal == 60 and written.is_trained  # the CPU copies of the filled GPU blocks, merged
    calls.clear()
    monkeypatch.setattr(faiss, "ParameterSpace", CpuOnlyParameterSpace)
    retriever = DenseRetriever(out, encoder=encoder, search_params="nprobe=4")
    assert calls == ["to_gpu", "GpuParameterSpace nprobe=4"]
    assert faiss.extract_index_ivf(retriever.index.cpu).nprobe == 4
    hits = retriever.search([passage_text(short_corpus[9])], 3)[0]
    assert "gpu.search" in calls and hits[0].passage == short_corpus[9]

    monkeypatch.undo()
    calls.clear()
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 1)
    monkeypatch.setattr(faiss, "index_cpu_to_all_gpus", to_gpu)
    hnsw = dataclasses.replace(tiny_config, faiss="HNSW32")
    build_index(short_corpus, _with_faiss(reference, tmp_path, hnsw, encoder), hnsw, encoder=encoder)
    assert calls == []  # HNSW stayed on the CPU: no GPU call, nothing moved back


def test_store_reads_any_row_with_few_shards_mapped(monkeypatch: pytest.MonkeyPatch, reference: Path,
                                                    short_corpus: list[Passage]) -> None:
    from odqa.index import store as store_module
    from odqa.index.store import PassageStore

    monkeypatch.setattr(store_module, "_OPEN_SHARDS", 2)
    store = PassageStore(reference, read_manifest(reference).shards)
    rows = [59, 0, 17, 40, 1, 33, 59, 16]
    assert [store[r] for r in rows] == [short_corpus[r] for r in rows]
    assert len(store._open) == 2
    assert list(store) == short_corpus
    with pytest.raises(IndexError):
        store[60]
    store.close()
