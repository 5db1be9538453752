"""Every way an index folder can be unusable is a typed error whose message says the fix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from odqa.config import EmbedConfig
from odqa.embed import Encoder
from odqa.errors import IndexFormatError, IndexMismatchError, OdqaError
from odqa.index.manifest import read_manifest, write_manifest
from odqa.retrieve.compose import load_retriever
from odqa.retrieve.dense import DenseRetriever


@pytest.fixture
def index(tmp_path: Path, reference: Path) -> Path:
    out = tmp_path / "index"
    shutil.copytree(reference, out)
    return out


def edit_manifest(folder: Path, **changes: Any) -> None:
    path = folder / "manifest.json"
    raw = json.loads(path.read_text())
    for key, value in changes.items():
        if isinstance(value, dict):
            raw[key] = {**raw[key], **value}
        else:
            raw[key] = value
    path.write_text(json.dumps(raw))


def test_not_an_index(tmp_path: Path) -> None:
    with pytest.raises(IndexFormatError, match=r"has no manifest.json, so it is not an odqa index; build one with "
                                               r"`odqa index build PASSAGES --out"):
        load_retriever(tmp_path)
    with pytest.raises(IndexFormatError, match="is not a folder"):
        load_retriever(tmp_path / "missing")


def test_missing_shard_file(index: Path, encoder: Any) -> None:
    (index / "shards" / "00002.vectors.npy").unlink()
    with pytest.raises(IndexFormatError, match=r"shard 2: shards/00002.vectors.npy is missing; rebuild it with "
                                               r"`odqa index build \.\.\. --out .* --overwrite`"):
        DenseRetriever(index, encoder=encoder)


@pytest.mark.parametrize("name", ["shards/00001.passages.jsonl", "shards/00000.offsets.npy", "faiss.index"])
def test_truncated_files(index: Path, encoder: Any, name: str) -> None:
    path = index / name
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(IndexFormatError, match=rf"{name} is truncated or damaged \(\d[\d,]* bytes, [\d,]+ recorded\)"):
        DenseRetriever(index, encoder=encoder)


def test_written_by_a_newer_odqa(index: Path) -> None:
    edit_manifest(index, format=99, odqa_version="9.0.0")
    with pytest.raises(IndexFormatError, match=r"written by odqa 9\.0\.0 \(index format 99\); this odqa reads index "
                                               r"format 1 at most: upgrade odqa"):
        load_retriever(index)


def test_unfinished_build(index: Path, encoder: Any) -> None:
    edit_manifest(index, complete=False)
    with pytest.raises(IndexFormatError, match=r"unfinished build \(4 shard\(s\) written\); finish it by running the "
                                               r"same `odqa index build"):
        DenseRetriever(index, encoder=encoder)


def test_damaged_manifest(index: Path) -> None:
    raw = json.loads((index / "manifest.json").read_text())
    del raw["shards"]
    (index / "manifest.json").write_text(json.dumps(raw))
    with pytest.raises(IndexFormatError, match="not an odqa index manifest"):
        read_manifest(index)


def test_dimension_mismatch(index: Path, encoder: Any) -> None:
    """Vectors of another width in a shard (e.g. a shard swapped in from an index of another model)."""
    manifest = read_manifest(index)
    shard = manifest.shards[1]
    np.save(index / shard.files["vectors"].name, np.zeros((shard.count, 48), dtype=np.float32))
    from odqa.index.manifest import file_entry

    manifest.shards[1] = type(shard)(shard.index, shard.count, shard.digest,
                                     {**shard.files, "vectors": file_entry(index, shard.files["vectors"].name)})
    write_manifest(index, manifest)
    with pytest.raises(IndexMismatchError, match=r"shard 1 holds vectors of shape \(16, 48\), the manifest says "
                                                 r"\(16, 32\); rebuild the index"):
        DenseRetriever(index, encoder=encoder)


def test_query_model_must_be_the_build_model(reference: Path, minilm_encoder: Encoder) -> None:
    with pytest.raises(IndexMismatchError, match=r"built with '.*tiny-bert.*', not 'e5-base': query it with the "
                                                 r"model it was built with \(leave --model out\)"):
        load_retriever(reference, model="e5-base")
    with pytest.raises(IndexMismatchError, match=r"built with model='.*tiny-bert.*' but the query encoder has "
                                                 r"'sentence-transformers/all-MiniLM-L6-v2'"):
        DenseRetriever(reference, encoder=minilm_encoder)


def test_query_encoder_of_another_dimension(reference: Path, tiny_bert: Path, tmp_path: Path) -> None:
    """The same model folder re-saved with another width: same settings, vectors of the wrong dimension."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    wider = tmp_path / "wider"
    shutil.copytree(tiny_bert, wider)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=AutoTokenizer.from_pretrained(str(tiny_bert)).vocab_size, hidden_size=48,
                        num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)
    BertModel(config).save_pretrained(wider)
    encoder = Encoder(EmbedConfig(model=str(wider), pooling="mean", normalize=True, device="cpu", cache_dir=""))
    edit_manifest(shutil.copytree(reference, tmp_path / "index"), settings={"model": str(wider)})
    with pytest.raises(IndexMismatchError, match="holds 32-dimensional vectors but the query model makes "
                                                 "48-dimensional ones; rebuild the index with this model"):
        DenseRetriever(tmp_path / "index", encoder=encoder)


def test_all_index_errors_are_odqa_errors() -> None:
    assert issubclass(IndexFormatError, OdqaError) and issubclass(IndexMismatchError, OdqaError)
