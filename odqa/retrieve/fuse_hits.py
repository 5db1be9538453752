"""Fusion of ranked hit lists (one list per retriever, same question): pure functions.

The hit-list counterparts of :mod:`odqa.retrieve.fusion`'s score-array fusion, with the same definitions:
reciprocal rank fusion over ranks from 1, and a weighted sum of min-max normalised scores. A passage is
identified by its id; one missing from a list gets nothing from it under RRF and 0 (that list's minimum) under
weighted fusion. Ties keep first-seen order, so results are deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from odqa.errors import ConfigError
from odqa.records import Hit, Passage
from odqa.retrieve.fusion import minmax

__all__ = ["fuse_rrf", "fuse_weighted"]


def _union(lists: Sequence[Sequence[Hit]]) -> dict[str, Passage]:
    passages: dict[str, Passage] = {}
    for hits in lists:
        for hit in hits:
            passages.setdefault(hit.passage.id, hit.passage)
    return passages


def _best(passages: dict[str, Passage], totals: dict[str, float], k: int) -> list[Hit]:
    ids = list(passages)
    ranked = sorted(range(len(ids)), key=lambda i: -totals[ids[i]])  # stable: ties keep first-seen order
    return [Hit(passages[ids[i]], totals[ids[i]]) for i in ranked[:k]]


def fuse_rrf(lists: Sequence[Sequence[Hit]], k: int, rrf_k: float = 60.0) -> list[Hit]:
    """RRF (Cormack et al., 2009): each passage scores the sum over lists of ``1 / (rrf_k + rank)``."""
    passages = _union(lists)
    totals = dict.fromkeys(passages, 0.0)
    for hits in lists:
        for rank, hit in enumerate(hits, start=1):
            totals[hit.passage.id] += 1.0 / (rrf_k + rank)
    return _best(passages, totals, k)


def fuse_weighted(lists: Sequence[Sequence[Hit]], weights: Sequence[float], k: int) -> list[Hit]:
    """Weighted sum of each list's min-max normalised scores."""
    if len(lists) != len(weights):
        raise ConfigError(f"{len(lists)} hit lists but {len(weights)} weights; give one weight per retriever")
    passages = _union(lists)
    totals = dict.fromkeys(passages, 0.0)
    for hits, weight in zip(lists, weights, strict=True):
        scaled = minmax(np.array([hit.score for hit in hits], dtype=np.float64))
        for hit, value in zip(hits, scaled, strict=True):
            totals[hit.passage.id] += weight * float(value)
    return _best(passages, totals, k)
