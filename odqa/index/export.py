"""Any passage set (an index's, or any input ``odqa index build`` reads) written as DPR TSV."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from odqa.config import ChunkConfig
from odqa.index.manifest import MANIFEST, open_manifest
from odqa.index.source import open_passages
from odqa.index.store import PassageStore
from odqa.io import write_dpr_tsv
from odqa.records import Passage

__all__ = ["export_tsv", "iter_passages"]


def iter_passages(source: str | Path, chunk: ChunkConfig | None = None) -> Iterator[Passage]:
    """The passages of an index folder (in index order), or of any input :func:`open_passages` reads."""
    source = Path(source)
    if not (source / MANIFEST).is_file():
        yield from open_passages(source, chunk)
        return
    store = PassageStore(source, open_manifest(source).shards)
    try:
        yield from store
    finally:
        store.close()


def export_tsv(source: str | Path, out: str | Path, chunk: ChunkConfig | None = None) -> int:
    """Write the passages of ``source`` to ``out`` as DPR TSV (atomically); returns how many."""
    return write_dpr_tsv(out, iter_passages(source, chunk))
