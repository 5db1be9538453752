"""The dense side of an index: passage vectors in ``.npy`` shards and a FAISS index built from them.

Every preset's score is an inner product (cosine is the inner product of unit vectors), so indexes use FAISS's
inner-product metric. faiss-gpu is used for training and adding when it sees a GPU, and never required.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from odqa._optional import require
from odqa.errors import ConfigError
from odqa.index.config import IndexConfig
from odqa.index.manifest import FileEntry, Manifest, Shard, file_entry
from odqa.index.store import shard_name
from odqa.io import atomic_write

if TYPE_CHECKING:
    from odqa.embed import Encoder

__all__ = [
    "FAISS_FILE", "build_faiss", "dense_settings", "load_faiss", "new_index", "ran_config", "shard_vectors",
    "write_vectors",
]

FAISS_FILE = "faiss.index"
_ADD_ROWS = 65_536  # vectors handed to FAISS at a time while adding


def dense_settings(config: IndexConfig, encoder: Encoder) -> dict[str, Any]:
    """The model settings and FAISS layout a dense index is built with (recorded in its manifest): the encoder's
    :class:`~odqa.embed.VectorSpec` (what ran, and the digest of a local model folder), its preset and score."""
    return {
        "preset": encoder.preset.name, **encoder.spec.to_json(), "score": encoder.preset.score,
        "dimension": encoder.dimension, "metric": "inner_product", "faiss": config.faiss,
        "train_size": config.train_size,
    }


def ran_config(config: IndexConfig, manifest: Manifest) -> IndexConfig:
    """``config`` as the build ran it: a dense index's precision and backend as its manifest records them (what the
    encoder resolved ``auto`` to), for ``build.config.json``; any other config as it is."""
    settings = manifest.settings
    if manifest.kind != "dense" or settings.get("precision") is None or settings.get("backend") is None:
        return config  # a BM25 index, or vectors imported (no encoder ran here)
    return replace(config, embed=replace(config.embed, precision=settings["precision"], backend=settings["backend"]))


def write_vectors(folder: Path, index: int, vectors: np.ndarray) -> FileEntry:
    """One shard's vectors as a float32 ``.npy`` file, written atomically."""
    name = shard_name(index, "vectors", "npy")
    with atomic_write(folder / name, "wb") as fh:
        np.save(fh, np.ascontiguousarray(vectors, dtype=np.float32))
    return file_entry(folder, name)


def shard_vectors(folder: Path, shard: Shard) -> np.ndarray:
    """A shard's vectors, memory-mapped."""
    vectors: np.ndarray = np.load(folder / shard.files["vectors"].name, mmap_mode="r")
    return vectors


def _faiss_error(exc: Exception) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return lines[-1].split(": ", 1)[-1] if lines else type(exc).__name__


def _to_gpu(faiss: Any, index: Any) -> tuple[Any, bool]:
    """``index`` on every visible GPU when faiss-gpu is installed and sees one (and supports the type)."""
    if not hasattr(faiss, "index_cpu_to_all_gpus") or faiss.get_num_gpus() < 1:
        return index, False
    try:
        return faiss.index_cpu_to_all_gpus(index), True
    except RuntimeError:  # e.g. HNSW, which FAISS has no GPU version of
        return index, False


def _training_sample(folder: Path, manifest: Manifest, size: int) -> np.ndarray:
    """``size`` vectors evenly spaced over the corpus (deterministic; memory bounded by ``size``)."""
    total = manifest.count or 0
    rows = np.unique(np.linspace(0, total - 1, min(size, total)).round().astype(np.int64))
    parts, start = [], 0
    for shard in manifest.shards:
        inside = rows[(rows >= start) & (rows < start + shard.count)] - start
        if inside.size:
            parts.append(np.asarray(shard_vectors(folder, shard)[inside], dtype=np.float32))
        start += shard.count
    return np.concatenate(parts)


def new_index(factory: str, dimension: int) -> Any:
    """The empty FAISS index of ``factory`` (inner product); a factory that cannot work here is a ConfigError.

    Called before any encoding, so a bad ``--faiss`` fails in a second, not after the corpus is embedded. IDMap is
    refused: an index's rows are its passages' positions in the store, which an id map would replace.
    """
    faiss = require("faiss", "index")
    if "idmap" in factory.lower():
        raise ConfigError(f"FAISS factory {factory!r}: IDMap is not supported (a hit's row is its passage's place in "
                          f"the index); drop the IDMap prefix, e.g. {factory.split(',', 1)[-1]!r}")
    try:
        return faiss.index_factory(dimension, factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as exc:
        raise ConfigError(f"FAISS cannot build {factory!r} for {dimension}-dimensional vectors ({_faiss_error(exc)}); "
                          "pass a factory string such as 'Flat', 'HNSW32' or 'IVF4096,PQ64'") from exc


def build_faiss(folder: Path, manifest: Manifest, config: IndexConfig) -> dict[str, FileEntry]:
    """Train (when the factory string needs it) and fill the FAISS index from the vector shards."""
    faiss = require("faiss", "index")
    index, on_gpu = _to_gpu(faiss, new_index(config.faiss, int(manifest.settings["dimension"])))
    if not index.is_trained:
        sample = _training_sample(folder, manifest, config.train_size)
        try:
            index.train(sample)
        except RuntimeError as exc:
            raise ConfigError(f"FAISS cannot train {config.faiss!r} on {len(sample):,} vectors ({_faiss_error(exc)}); "
                              "use fewer IVF lists (e.g. IVF256 for 10,000+ passages) or a larger corpus / "
                              "--train-size") from exc
    for shard in manifest.shards:
        vectors = shard_vectors(folder, shard)
        for start in range(0, shard.count, _ADD_ROWS):
            index.add(np.ascontiguousarray(vectors[start : start + _ADD_ROWS], dtype=np.float32))
    if on_gpu:
        index = faiss.index_gpu_to_cpu(index)
    with atomic_write(folder / FAISS_FILE, "wb") as fh:
        faiss.write_index(index, faiss.PyCallbackIOWriter(fh.write))
    return {"faiss": file_entry(folder, FAISS_FILE)}


def load_faiss(folder: Path, search_params: str | None = None, factory: str = "this index") -> Any:
    """The FAISS index of a dense index folder (moved to the GPU when faiss-gpu sees one), with ``search_params``
    (``"nprobe=32"``, ``"efSearch=128"``) set; on the GPU through GpuParameterSpace, which alone reaches a GPU IVF
    index's nprobe."""
    faiss = require("faiss", "index")
    index, on_gpu = _to_gpu(faiss, faiss.read_index(str(folder / FAISS_FILE)))
    if search_params:
        space = faiss.GpuParameterSpace() if on_gpu else faiss.ParameterSpace()
        try:
            space.set_index_parameters(index, search_params)
        except RuntimeError as exc:
            raise ConfigError(f"FAISS search parameters {search_params!r} do not apply to {factory} "
                              f"({_faiss_error(exc)}): use nprobe=N for IVF, efSearch=N for HNSW") from exc
    return index
