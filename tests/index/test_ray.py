"""The Ray engine (odqa.ray) against the local one: the same bytes, and an index build that moves between them.

A local 2-CPU Ray cluster is started once for the session (its start-up and each pipeline's actor
start-up dominate, so the tests are few). They live here for the tiny random BERT of tests/index/conftest.py, run
at batch size 2: a slice is 128 texts, so every shard and refine block is several slices over both actors.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from odqa.cli import app
from odqa.config import ChunkConfig, EmbedConfig
from odqa.errors import ConfigError, DependencyError, ModelError
from odqa.index.build import build_index, open_encoder
from odqa.index.config import IndexConfig
from odqa.index.manifest import read_manifest
from odqa.index.source import read_passages
from odqa.ray import RayConfig, RayEncoder
from odqa.records import Passage

runner = CliRunner()
SHARD = 250


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[None]:
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="session")
def tiny_flags(tiny_bert: Path) -> list[str]:
    return ["--model", str(tiny_bert), "--pooling", "mean", "--normalize", "--device", "cpu", "--batch-size", "2"]


@pytest.fixture(scope="session")
def engine_config(tiny_bert: Path) -> IndexConfig:
    return IndexConfig(kind="dense", shard_size=SHARD, embed=EmbedConfig(
        model=str(tiny_bert), pooling="mean", normalize=True, device="cpu", batch_size=2))


def files_of(folder: Path) -> dict[str, bytes]:
    """Every file of an index folder but the command's resolved config (the library writes none)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "build.config.json"}


def first_shard_then_stop(passages: Iterable[Passage]) -> Iterator[Passage]:
    """The passages of the first shard, then an interruption as the build asks for the next."""
    yield from list(passages)[:SHARD]
    raise KeyboardInterrupt


def test_index_build_is_byte_identical_and_resumes_across_engines(
        tmp_path: Path, timeqa_file: Path, ray_cluster: None, engine_config: IndexConfig,
        tiny_flags: list[str]) -> None:
    passages = list(read_passages(timeqa_file, ChunkConfig(words=30)))[:400]  # shards of 250 and 150
    source = tmp_path / "passages.jsonl"
    source.write_text("".join(json.dumps({"id": p.id, "doc_id": p.doc_id, "title": p.title, "text": p.text}) + "\n"
                              for p in passages))
    reference = tmp_path / "local"
    with open_encoder(engine_config) as encoder:
        build_index(passages, reference, engine_config, encoder=encoder)
        started_here = tmp_path / "local-then-ray"
        with pytest.raises(KeyboardInterrupt):
            build_index(first_shard_then_stop(passages), started_here, engine_config, encoder=encoder)

    # Started locally, finished on Ray from the command line.
    result = runner.invoke(app, ["index", "build", str(source), "--out", str(started_here), "--engine", "ray",
                                 "--shard-size", str(SHARD), *tiny_flags])
    assert result.exit_code == 0, result.output
    assert files_of(started_here) == files_of(reference)

    # Started on Ray, finished locally.
    started_there = tmp_path / "ray-then-local"
    with open_encoder(engine_config, RayConfig()) as encoder:
        assert isinstance(encoder, RayEncoder) and encoder.actors == 2
        with pytest.raises(KeyboardInterrupt):
            build_index(first_shard_then_stop(passages), started_there, engine_config, encoder=encoder)
    assert [shard.count for shard in read_manifest(started_there).shards] == [SHARD]
    with open_encoder(engine_config) as encoder:
        build_index(passages, started_there, engine_config, encoder=encoder)
    assert files_of(started_there) == files_of(reference)
    assert len(files_of(reference)) > 6  # manifest, FAISS index, and per shard its text, offsets and vectors


def test_refine_on_ray_writes_the_local_file(tmp_path: Path, timeqa_file: Path, ray_cluster: None,
                                             tiny_flags: list[str]) -> None:
    outputs = {}
    for engine in ("local", "ray"):
        outputs[engine] = tmp_path / f"{engine}.jsonl"
        result = runner.invoke(app, ["refine", str(timeqa_file), "--out", str(outputs[engine]), "--scorer", "dense",
                                     "--k", "5", "--no-cache", "--engine", engine, *tiny_flags])
        assert result.exit_code == 0, result.output
        assert "passages encoded (cache misses)" in result.output
    local = outputs["local"].read_bytes()
    assert local.count(b"\n") == 108 and b'"score"' in local
    assert outputs["ray"].read_bytes() == local


def test_cluster_checks_and_an_actors_error(tmp_path: Path, ray_cluster: None, tiny_bert: Path) -> None:
    tiny = EmbedConfig(model=str(tiny_bert), pooling="mean", normalize=True, cache_dir="")
    with pytest.raises(ConfigError, match="no GPUs; pass --device cpu"):
        RayEncoder(dataclasses.replace(tiny, device="cuda"))
    with pytest.raises(ConfigError, match="3 encoder actors need 3 CPUs; the Ray cluster has 2"):
        RayEncoder(tiny, RayConfig(actors=3))
    # A model folder the driver has and an actor's node lacks: the actor's own one-line error reaches the caller.
    with RayEncoder(tiny, RayConfig(actors=1)) as encoder:
        encoder.actor_config = dataclasses.replace(encoder.actor_config, model=str(tmp_path / "not-on-this-node"))
        with pytest.raises(ModelError) as caught:
            encoder.encode_passages([Passage("p1", "d1", "Title", "a passage")])
    assert str(caught.value) == (f"model folder {tmp_path / 'not-on-this-node'} does not exist; pass an existing "
                                 "model folder or a hub id (owner/name) with --model")


def test_engine_flags_and_missing_ray(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, timeqa_file: Path) -> None:
    result = runner.invoke(app, ["index", "build", str(timeqa_file), "--out", str(tmp_path / "i"), "--kind", "bm25",
                                 "--ray-address", "auto"])
    assert result.exit_code == 1
    assert "ConfigError: --ray-address only apply to the Ray engine; add --engine ray" in result.output
    with pytest.raises(ConfigError, match="Ray actors must be >= 1"):
        RayConfig(actors=0)
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    with pytest.raises(DependencyError, match=r"pip install 'odqa\[ray\]'"):
        RayEncoder(EmbedConfig(model="minilm"))
