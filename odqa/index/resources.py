"""What a build will need (memory, disk) and whether this machine has it, known before any encoding starts.

Memory is what the finished index holds resident to be built and searched: the whole index for Flat, HNSW, PQ and
SQ (FAISS holds them in RAM), but for IVF only its coarse quantizer and the training sample, since odqa keeps an
IVF index's inverted lists on disk, memory-mapped (:mod:`odqa.index.dense`). Disk is the passage text, the vector
shards (float32) and the index files. Figures come from FAISS's own code sizes for the factory (an empty index is
built to read them), so any factory string is estimated the same way.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from odqa.errors import ResourceError

__all__ = ["BuildPlan", "check_plan", "dense_footprint", "machine_memory", "plan_build"]

_IVF_ID = 8  # bytes of a passage's row id in an inverted list


def _size(count: float) -> str:
    """Bytes for a person: ``64.6 GB``, ``384.0 KB``."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if count >= scale:
            return f"{count / scale:,.1f} {unit}"
    return f"{count:,.0f} B"


def _per_vector(faiss: Any, index: Any, dimension: int) -> tuple[float, float]:
    """(bytes per vector, fixed bytes) of a non-IVF FAISS index."""
    index = faiss.downcast_index(index)
    hnsw = getattr(index, "hnsw", None)
    if hnsw is not None:  # the storage's codes plus level-0 links (upper levels add about 1/M of those)
        code, _ = _per_vector(faiss, index.storage, dimension)
        return code + 4 * hnsw.nb_neighbors(0) * 1.07 + 12, 0.0
    if isinstance(index, faiss.IndexPreTransform):
        return _per_vector(faiss, index.index, dimension)
    try:
        return float(index.sa_code_size()), 0.0
    except RuntimeError:
        return 4.0 * dimension, 0.0


def dense_footprint(factory: str, count: int, dimension: int, train_size: int) -> tuple[int, int]:
    """(resident memory, bytes on disk) of a FAISS index of ``factory`` over ``count`` vectors."""
    import faiss

    from odqa.index.dense import new_index

    index = new_index(factory, dimension)
    ivf = faiss.try_extract_index_ivf(index)
    if ivf is not None:
        quantizer, _ = _per_vector(faiss, ivf.quantizer, ivf.d)
        fixed = int(ivf.nlist * quantizer)
        sample = 4 * dimension * min(train_size, count)
        return fixed + sample, fixed + count * (ivf.code_size + _IVF_ID)
    per_vector, fixed_bytes = _per_vector(faiss, index, dimension)
    size = int(fixed_bytes + count * per_vector)
    return size, size


def machine_memory() -> int:
    """Bytes of memory this process can use: MemAvailable where Linux says it, else the physical memory."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


@dataclass(frozen=True)
class BuildPlan:
    """What building ``passages`` passages will take: bytes on disk (text, vectors, index) and resident memory."""

    passages: int
    kind: str
    factory: str | None
    dimension: int | None
    text_bytes: int
    vector_bytes: int
    index_bytes: int
    memory_bytes: int
    train_size: int = 100_000

    @property
    def disk_bytes(self) -> int:
        return self.text_bytes + self.vector_bytes + self.index_bytes

    def describe(self) -> str:
        """One line: what the build needs."""
        parts = [f"{self.passages:,} passages need about {_size(self.disk_bytes)} of disk (text "
                 f"{_size(self.text_bytes)}"]
        if self.kind == "dense":
            parts.append(f", vectors {_size(self.vector_bytes)}, {self.factory} index {_size(self.index_bytes)}) "
                         f"and {_size(self.memory_bytes)} of memory for the index")
        else:
            parts.append(f", BM25 index about {_size(self.index_bytes)})")
        return "".join(parts)


# Factories offered when the one asked for does not fit: resident memory from small to large.
_ALTERNATIVES = ("IVF{lists},PQ{m}", "IVF{lists},SQ8", "IVF{lists},Flat", "HNSW32,SQ8", "HNSW32", "Flat")


def _lists(count: int) -> int:
    """A usual IVF list count for ``count`` vectors: about 4 sqrt(N), a power of two, at least 64."""
    lists = 64
    while lists * lists < 16 * count and lists < 262_144:
        lists *= 2
    return lists


def plan_build(kind: str, count: int, text_bytes: int, factory: str | None = None, dimension: int | None = None,
               train_size: int = 100_000) -> BuildPlan:
    """The plan of a ``kind`` build of ``count`` passages whose stored text takes ``text_bytes``."""
    if kind != "dense" or factory is None or dimension is None:
        # bm25s keeps about one float and one int per distinct term of a passage: at most the text's size.
        return BuildPlan(count, kind, None, None, text_bytes, 0, text_bytes, 0, train_size)
    memory, disk = dense_footprint(factory, count, dimension, train_size)
    return BuildPlan(count, kind, factory, dimension, text_bytes, 4 * dimension * count, disk, memory, train_size)


def check_plan(plan: BuildPlan, out: Path, already: int = 0) -> None:
    """Refuse a plan this machine cannot carry out: an index larger than its memory (naming factories that fit), or
    less free disk under ``out`` than the plan needs beyond the ``already`` written bytes of a resumed build."""
    available = machine_memory()
    if plan.memory_bytes > available and plan.dimension is not None:
        fits = []
        for pattern in _ALTERNATIVES:
            m = max(d for d in (64, 48, 32, 16, 8, 4, 2, 1) if plan.dimension % d == 0)
            factory = pattern.format(lists=_lists(plan.passages), m=m)
            memory, disk = dense_footprint(factory, plan.passages, plan.dimension, plan.train_size)
            if memory <= available:
                fits.append(f"{factory} ({_size(memory)} memory, {_size(disk)} disk)")
        hint = "; factories that fit: " + ", ".join(fits) if fits else "; no usual factory fits: use a larger machine"
        raise ResourceError(f"a {plan.factory} index of {plan.passages:,} x {plan.dimension} vectors needs "
                            f"{_size(plan.memory_bytes)} of memory, this machine has {_size(available)} available"
                            + hint)
    folder = out
    while not folder.exists():
        folder = folder.parent
    free = shutil.disk_usage(folder).free
    needed = max(0, plan.disk_bytes - already)
    if needed > free:
        raise ResourceError(f"{plan.describe()}: {_size(needed)} more than written so far, but {folder} has "
                            f"{_size(free)} free; free disk space or choose another --out")
