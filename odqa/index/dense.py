"""The dense side of an index: passage vectors in ``.npy`` shards and a FAISS index built from them.

Every preset's score is an inner product (cosine is the inner product of unit vectors), so indexes use FAISS's
inner-product metric. faiss-gpu is used for training and adding when it sees a GPU, and never required.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator
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
    "FAISS_FILE", "IVFDATA_FILE", "build_faiss", "dense_settings", "imported_settings", "load_faiss", "new_index",
    "ran_config", "shard_vectors", "write_vectors",
]

FAISS_FILE = "faiss.index"
IVFDATA_FILE = "faiss.ivfdata"  # an IVF index's inverted lists (FAISS OnDiskInvertedLists), memory-mapped
_ADD_ROWS = 65_536  # vectors handed to FAISS at a time while adding


def dense_settings(config: IndexConfig, encoder: Encoder) -> dict[str, Any]:
    """The model settings and FAISS layout a dense index is built with (recorded in its manifest): the encoder's
    :class:`~odqa.embed.VectorSpec` (what ran, and the digest of a local model folder), its preset and score."""
    return {
        "preset": encoder.preset.name, **encoder.spec.to_json(), "score": encoder.preset.score,
        "dimension": encoder.dimension, "metric": "inner_product", "faiss": config.faiss,
        "train_size": config.train_size,
    }


def imported_settings(config: IndexConfig, dimension: int) -> dict[str, Any]:
    """The manifest settings of an index over vectors computed elsewhere (``--vectors``) by ``config.embed.model``:
    those an encoder of that model would record, without loading it (``precision``: as given, else fp32; queries
    are encoded by that model, and its dimension is checked against ``dimension`` when the index is opened)."""
    from odqa.embed import VectorSpec, resolve_model
    from odqa.embed.presets import PRESETS
    from odqa.embed.spec import folder_digest

    preset = resolve_model(config.embed)
    local = preset.name not in PRESETS and Path(preset.model).is_dir()
    precision = "fp32" if config.embed.precision == "auto" else config.embed.precision
    spec = VectorSpec.of(preset, precision, "torch", folder_digest(Path(preset.model)) if local else None)
    return {
        "preset": preset.name, **spec.to_json(), "backend": None, "vectors": "imported", "score": preset.score,
        "dimension": dimension, "metric": "inner_product", "faiss": config.faiss, "train_size": config.train_size,
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


def _train(faiss: Any, folder: Path, manifest: Manifest, config: IndexConfig) -> tuple[Any, bool]:
    """The empty index of ``config.faiss``, trained when it needs it (on the GPU when faiss-gpu sees one)."""
    index, on_gpu = _to_gpu(faiss, new_index(config.faiss, int(manifest.settings["dimension"])))
    if not index.is_trained:
        sample = _training_sample(folder, manifest, config.train_size)
        try:
            index.train(sample)
        except RuntimeError as exc:
            raise ConfigError(f"FAISS cannot train {config.faiss!r} on {len(sample):,} vectors ({_faiss_error(exc)}); "
                              "use fewer IVF lists (e.g. IVF256 for 10,000+ passages) or a larger corpus / "
                              "--train-size") from exc
    return index, on_gpu


def _add(index: Any, vectors: np.ndarray, first_row: int | None) -> None:
    """Add ``vectors`` a block at a time; with ``first_row``, as rows ``first_row, first_row + 1, ...``."""
    for start in range(0, len(vectors), _ADD_ROWS):
        block = np.ascontiguousarray(vectors[start : start + _ADD_ROWS], dtype=np.float32)
        if first_row is None:
            index.add(block)
        else:
            index.add_with_ids(block, np.arange(first_row + start, first_row + start + len(block), dtype=np.int64))


def _write(faiss: Any, index: Any, path: Path) -> None:
    with atomic_write(path, "wb") as fh:
        faiss.write_index(index, faiss.PyCallbackIOWriter(fh.write))


def _write_lists(faiss: Any, block: Any, path: Path) -> None:
    """Write a filled block with an empty stand-in for its coarse quantizer, which it no longer needs: the file holds
    its inverted lists only (the quantizer alone is 200 MB for IVF65536 at 768 dimensions)."""
    ivf = faiss.extract_index_ivf(block)
    quantizer = ivf.quantizer
    quantizer.this.acquire()  # freed with this Python reference, no longer by the block
    ivf.own_fields = False
    stand_in = faiss.IndexFlat(ivf.d, ivf.metric_type)
    ivf.quantizer = stand_in
    _write(faiss, block, path)


def _build_on_disk(faiss: Any, folder: Path, manifest: Manifest, trained: Any) -> dict[str, FileEntry]:
    """An IVF index whose inverted lists live in ``faiss.ivfdata`` (FAISS OnDiskInvertedLists), never all in memory.

    Each vector shard is added to a copy of the trained, empty index and saved as a block; the blocks, read back
    memory-mapped, are merged list by list into the ivfdata file; ``faiss.index`` then holds the quantizer and
    where each list lies in that file. Memory: one shard's codes plus the quantizer. Every step writes under a
    temporary name and the result depends only on the shards, so a kill at any point leaves a build that reruns
    to the same bytes.
    """
    staging = folder / ".ivf-blocks.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    merged = folder / f".{IVFDATA_FILE}.tmp"
    merged.unlink(missing_ok=True)
    blocks, row = [], 0
    for shard in manifest.shards:
        block, on_gpu = _to_gpu(faiss, faiss.clone_index(trained))
        _add(block, shard_vectors(folder, shard), row)
        row += shard.count
        path = staging / f"{shard.index:05d}.index"
        _write_lists(faiss, faiss.index_gpu_to_cpu(block) if on_gpu else block, path)
        blocks.append(faiss.read_index(str(path), faiss.IO_FLAG_MMAP))
    ivf = faiss.extract_index_ivf(trained)
    lists = faiss.OnDiskInvertedLists(ivf.nlist, ivf.code_size, str(merged))
    pointers = faiss.InvertedListsPtrVector()
    for block in blocks:
        pointers.push_back(faiss.extract_index_ivf(block).invlists)
    with _quiet_faiss():  # FAISS reports each file resize
        total = lists.merge_from_multiple(pointers.data(), pointers.size(), False, False)
    del pointers, blocks
    ivf.ntotal = trained.ntotal = total
    lists.filename = IVFDATA_FILE  # found beside faiss.index when read (IO_FLAG_ONDISK_SAME_DIR): no absolute path
    ivf.replace_invlists(lists, True)
    lists.this.disown()  # owned by the index now
    _write(faiss, trained, folder / FAISS_FILE)
    del trained, ivf, lists
    os.replace(merged, folder / IVFDATA_FILE)
    shutil.rmtree(staging)
    return {"faiss": file_entry(folder, FAISS_FILE), "ivfdata": file_entry(folder, IVFDATA_FILE)}


def build_faiss(folder: Path, manifest: Manifest, config: IndexConfig) -> dict[str, FileEntry]:
    """Train (when the factory string needs it) and fill the FAISS index from the vector shards; an IVF index gets
    its inverted lists on disk (:func:`_build_on_disk`), any other is built in memory."""
    faiss = require("faiss", "index")
    index, on_gpu = _train(faiss, folder, manifest, config)
    if faiss.try_extract_index_ivf(new_index(config.faiss, int(manifest.settings["dimension"]))) is not None:
        return _build_on_disk(faiss, folder, manifest, faiss.index_gpu_to_cpu(index) if on_gpu else index)
    for shard in manifest.shards:
        _add(index, shard_vectors(folder, shard), None)
    _write(faiss, faiss.index_gpu_to_cpu(index) if on_gpu else index, folder / FAISS_FILE)
    return {"faiss": file_entry(folder, FAISS_FILE)}


@contextlib.contextmanager
def _quiet_faiss() -> Iterator[None]:
    """Silence what FAISS's C++ code prints on file descriptors 1 and 2 (notes on file resizes and paths, not
    errors: those raise)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)


def load_faiss(folder: Path, search_params: str | None = None, factory: str = "this index") -> Any:
    """The FAISS index of a dense index folder (moved to the GPU when faiss-gpu sees one), with ``search_params``
    (``"nprobe=32"``, ``"efSearch=128"``) set; on the GPU through GpuParameterSpace, which alone reaches a GPU IVF
    index's nprobe."""
    faiss = require("faiss", "index")
    # Memory-mapped, read as pages are used: an IVF index's lists in faiss.ivfdata, any other's flat codes.
    on_disk = (folder / IVFDATA_FILE).is_file()
    with _quiet_faiss():  # FAISS notes where it found faiss.ivfdata
        cpu = faiss.read_index(str(folder / FAISS_FILE),
                               faiss.IO_FLAG_ONDISK_SAME_DIR if on_disk else faiss.IO_FLAG_MMAP_IFC)
    index, on_gpu = _to_gpu(faiss, cpu)
    if search_params:
        space = faiss.GpuParameterSpace() if on_gpu else faiss.ParameterSpace()
        try:
            space.set_index_parameters(index, search_params)
        except RuntimeError as exc:
            raise ConfigError(f"FAISS search parameters {search_params!r} do not apply to {factory} "
                              f"({_faiss_error(exc)}): use nprobe=N for IVF, efSearch=N for HNSW") from exc
    return index
