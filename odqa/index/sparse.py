"""The sparse side of an index: bm25s over the passage store, with refine's BM25 variant and tokenizer.

Lucene's BM25 (``method="lucene"``) with ``k1=0.9, b=0.4`` over :func:`odqa.retrieve.tokenize.tokenize` of
``title + " " + text``: the variant, parameters and text of :func:`odqa.retrieve.bm25.bm25_scores`. bm25s leaves
out the constant ``k1 + 1`` of the term-frequency part; searches multiply it back, so a passage scores exactly
what refine's BM25 gives it over the same corpus. The index is built shard by shard, in memory bounded by the
finished index rather than the corpus' tokens: :mod:`odqa.index.bm25_shards`.
"""

from __future__ import annotations

from typing import Any

from odqa.records import Passage

__all__ = ["BM25_DIR", "K1", "B", "bm25_settings", "bm25_text"]

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
