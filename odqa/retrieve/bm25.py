"""BM25 over one question's own candidate passages (rank-bm25's Okapi variant, the usual per-question choice)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from odqa.records import Passage
from odqa.retrieve.tokenize import tokenize

__all__ = ["bm25_scores"]


def bm25_scores(question: str, passages: Sequence[Passage], k1: float = 0.9, b: float = 0.4) -> np.ndarray:
    """Okapi BM25 score of each passage (title + text) for ``question``; IDF from these passages alone.

    ``k1=0.9, b=0.4`` are Anserini's defaults for passage retrieval.
    """
    if not passages:
        return np.zeros(0, dtype=np.float64)
    from rank_bm25 import BM25Okapi

    corpus = [tokenize(f"{p.title} {p.text}") for p in passages]
    if not any(corpus):
        return np.zeros(len(passages), dtype=np.float64)
    query = tokenize(question)
    return np.asarray(BM25Okapi(corpus, k1=k1, b=b).get_scores(query), dtype=np.float64)
