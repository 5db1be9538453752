"""Score fusion and top-k selection: pure functions over per-passage score arrays, and over ranked hit lists.

The one place fusion is defined. Refine fuses score arrays (every scorer scores every candidate); a corpus
retriever fuses hit lists (each retriever returns its own top passages), which :func:`fuse_rrf` and
:func:`fuse_weighted` lay out as score arrays over the union of the lists' passages and hand to the array
functions. In a score array, NaN marks a passage the scorer did not rank (absent from its hit list): it gets
nothing from that scorer under RRF and 0 (the scorer's minimum) under weighted fusion.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from odqa.errors import ConfigError
from odqa.records import Hit, Passage

__all__ = ["Fusion", "check_fusion", "fuse_rrf", "fuse_weighted", "minmax", "reciprocal_rank_fusion", "top_k",
           "weighted_fusion"]

Fusion = Literal["rrf", "weighted"]


def check_fusion(fusion: str, weights: Sequence[float], count: int) -> None:
    """The rule for fusing ``count`` retrievers: a known fusion; weights (optional) only with weighted fusion, since
    RRF fuses ranks and would ignore them, and then one per retriever."""
    if fusion not in ("rrf", "weighted"):
        raise ConfigError(f"fusion {fusion!r} is not valid; choose one of: rrf, weighted")
    if weights and fusion != "weighted":
        raise ConfigError(f"weights apply to weighted fusion only; pass --fuse weighted with --weight, or drop "
                          f"--weight ({fusion} fusion uses ranks, not weights)")
    if weights and len(weights) != count:
        raise ConfigError(f"{count} retrievers but {len(weights)} weights; give one weight per retriever (per "
                          "--index, in order)")


def minmax(scores: np.ndarray) -> np.ndarray:
    """Rescale to [0, 1]; a constant array becomes all zeros (it carries no ranking information); NaN becomes 0."""
    scores = np.asarray(scores, dtype=np.float64)
    present = ~np.isnan(scores)
    if not present.any():
        return np.zeros_like(scores)
    low, high = float(scores[present].min()), float(scores[present].max())
    if high <= low:
        return np.zeros_like(scores)
    return np.where(present, (scores - low) / (high - low), 0.0)


def weighted_fusion(scores: Sequence[np.ndarray], weights: Sequence[float]) -> np.ndarray:
    """Weighted sum of min-max normalised score arrays (each array: one score per passage)."""
    if len(scores) != len(weights):
        raise ValueError(f"{len(scores)} score arrays but {len(weights)} weights")
    total = np.zeros(len(scores[0]) if scores else 0, dtype=np.float64)
    for array, weight in zip(scores, weights, strict=True):
        if weight:
            total += weight * minmax(array)
    return total


def _ranks(scores: np.ndarray) -> np.ndarray:
    """Rank of each score from 1, best first (ties in input order); NaN scores rank after all others."""
    ranks = np.empty(len(scores), dtype=np.float64)
    ranks[np.argsort(-scores, kind="stable")] = np.arange(1, len(scores) + 1)
    return ranks


def reciprocal_rank_fusion(scores: Sequence[np.ndarray], k: float = 60.0) -> np.ndarray:
    """RRF (Cormack et al., 2009): sum over scorers of ``1 / (k + rank)``, ranks from 1."""
    total = np.zeros(len(scores[0]) if scores else 0, dtype=np.float64)
    for array in scores:
        values = np.asarray(array, dtype=np.float64)
        total += np.where(np.isnan(values), 0.0, 1.0 / (k + _ranks(values)))
    return total


def top_k(passages: Sequence[Passage], scores: np.ndarray | Sequence[float], k: int) -> list[Hit]:
    """The ``k`` best passages, best first; ties keep the input order (so results are deterministic).

    odqa's one top-k rule: rank with it rather than sorting by hand.
    """
    values = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-values, kind="stable")[:k]
    return [Hit(passages[i], float(values[i])) for i in order]


def _as_arrays(lists: Sequence[Sequence[Hit]], by_rank: bool) -> tuple[list[Passage], list[np.ndarray]]:
    """The union of the lists' passages (by id, first-seen order) and one score array per list over it: each
    hit's score, or minus its position when ``by_rank`` (so the array ranks as the list does); NaN where absent."""
    position: dict[str, int] = {}
    passages: list[Passage] = []
    for hits in lists:
        for hit in hits:
            if hit.passage.id not in position:
                position[hit.passage.id] = len(passages)
                passages.append(hit.passage)
    arrays = []
    for hits in lists:
        array = np.full(len(passages), np.nan)
        for rank, hit in reversed(list(enumerate(hits))):  # a repeated id counts at its first (best) place
            array[position[hit.passage.id]] = -rank if by_rank else hit.score
        arrays.append(array)
    return passages, arrays


def fuse_rrf(lists: Sequence[Sequence[Hit]], k: int, rrf_k: float = 60.0) -> list[Hit]:
    """RRF over ranked hit lists (one per retriever, same question): the best ``k``, ties in first-seen order."""
    passages, arrays = _as_arrays(lists, by_rank=True)
    return top_k(passages, reciprocal_rank_fusion(arrays, rrf_k), k)


def fuse_weighted(lists: Sequence[Sequence[Hit]], weights: Sequence[float], k: int) -> list[Hit]:
    """Weighted sum of each hit list's min-max normalised scores: the best ``k``, ties in first-seen order."""
    if len(lists) != len(weights):
        raise ConfigError(f"{len(lists)} hit lists but {len(weights)} weights; give one weight per retriever")
    passages, arrays = _as_arrays(lists, by_rank=False)
    return top_k(passages, weighted_fusion(arrays, weights), k)
