"""BM25 over one question's own candidate passages.

Lucene's variant (the default of Anserini and bm25s): ``idf = ln(1 + (N - n + 0.5) / (n + 0.5))`` is positive
for every term, so a term found in half of a small candidate set still counts — with Robertson's original idf
(rank-bm25's ``BM25Okapi``) it would score zero. ``k1=0.9, b=0.4`` are Anserini's passage-retrieval defaults.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from odqa.records import Passage
from odqa.retrieve.tokenize import Tokenizer, tokenize

__all__ = ["bm25_scores"]


def bm25_scores(
    question: str, passages: Sequence[Passage], k1: float = 0.9, b: float = 0.4, tokens: Tokenizer = tokenize
) -> np.ndarray:
    """BM25 score of each passage (title + text) for ``question``; statistics from these passages alone."""
    scores = np.zeros(len(passages), dtype=np.float64)
    query = Counter(tokens(question))  # a repeated query term counts once per occurrence
    if not passages or not query:
        return scores
    docs = [Counter(tokens(f"{p.title} {p.text}")) for p in passages]
    lengths = np.array([sum(d.values()) for d in docs], dtype=np.float64)
    average = lengths.mean()
    if average == 0:
        return scores
    norm = k1 * (1 - b + b * lengths / average)
    for term, repeats in query.items():
        tf = np.array([d.get(term, 0) for d in docs], dtype=np.float64)
        n = np.count_nonzero(tf)
        if n:
            idf = np.log(1 + (len(docs) - n + 0.5) / (n + 0.5))
            scores += repeats * idf * tf * (k1 + 1) / (tf + norm)
    return scores
