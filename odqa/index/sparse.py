"""The sparse side of an index: bm25s over the passage store, with refine's BM25 variant and tokenizer.

Lucene's BM25 (``method="lucene"``) with ``k1=0.9, b=0.4`` over :func:`odqa.retrieve.tokenize.tokenize` of
``title + " " + text``: the variant, parameters and text of :func:`odqa.retrieve.bm25.bm25_scores`. bm25s leaves
out the constant ``k1 + 1`` of the term-frequency part; searches multiply it back, so a passage scores exactly
what refine's BM25 gives it over the same corpus. bm25s builds its sparse matrix in memory: indexing needs memory
for the corpus' tokens (the passage store is streamed).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from odqa._optional import require
from odqa.index.manifest import FileEntry, file_entry
from odqa.index.store import PassageStore
from odqa.records import Passage
from odqa.retrieve.tokenize import tokenize

__all__ = ["BM25_DIR", "K1", "B", "bm25_settings", "bm25_text", "build_bm25"]

BM25_DIR = "bm25"
K1 = 0.9
B = 0.4


def bm25_settings() -> dict[str, Any]:
    """The BM25 variant an index is built with (recorded in its manifest)."""
    return {"method": "lucene", "k1": K1, "b": B, "tokenizer": "odqa.retrieve.tokenize.tokenize",
            "text": "title + ' ' + text"}


def bm25_text(passage: Passage) -> str:
    """The text BM25 sees: the title and the text, as refine's BM25 does."""
    return f"{passage.title} {passage.text}"


def build_bm25(folder: Path, store: PassageStore) -> dict[str, FileEntry]:
    """Index every stored passage with bm25s and save it under ``folder/bm25`` (replaced atomically)."""
    bm25s = require("bm25s", "index")
    retriever = bm25s.BM25(k1=K1, b=B, method="lucene")
    retriever.index([list(tokenize(bm25_text(p))) for p in store], show_progress=False)
    staging = folder / f".{BM25_DIR}.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    retriever.save(str(staging))
    shutil.rmtree(folder / BM25_DIR, ignore_errors=True)
    os.replace(staging, folder / BM25_DIR)
    names = sorted(p.name for p in (folder / BM25_DIR).iterdir())
    return {name: file_entry(folder, f"{BM25_DIR}/{name}") for name in names}
