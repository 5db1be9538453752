"""Search a BM25 index (bm25s); scores equal refine's BM25 over the same corpus (see :mod:`odqa.index.sparse`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from odqa._optional import require
from odqa.errors import ConfigError
from odqa.index.manifest import open_manifest
from odqa.index.sparse import BM25_DIR
from odqa.index.store import PassageStore
from odqa.records import Hit
from odqa.retrieve.tokenize import tokenize

__all__ = ["BM25Retriever"]


class BM25Retriever:
    """Top-k passages by BM25; passages sharing no term with the question are not returned."""

    def __init__(self, folder: str | Path) -> None:
        bm25s = require("bm25s", "index")
        self.folder = Path(folder)
        self.manifest = open_manifest(self.folder, "bm25")
        self.bm25 = bm25s.BM25.load(str(self.folder / BM25_DIR), mmap=True)
        self.scale = 1.0 + float(self.manifest.settings["k1"])  # bm25s leaves out the constant (k1 + 1)
        self.store = PassageStore(self.folder, self.manifest.shards)

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """``len(queries)`` lists of at most ``k`` hits, best first."""
        if k < 1:
            raise ConfigError(f"k must be >= 1, got {k}")
        if not queries:
            return []
        tokens = [list(tokenize(q)) for q in queries]
        rows, scores = self.bm25.retrieve(tokens, k=min(k, len(self.store)), show_progress=False)
        return [[Hit(self.store[int(r)], float(s) * self.scale) for r, s in zip(row, score, strict=True) if s > 0]
                for row, score in zip(rows, scores, strict=True)]

    def close(self) -> None:
        self.store.close()
