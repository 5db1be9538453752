"""Score fusion and top-k selection: pure functions over per-passage score arrays."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from odqa.records import Hit, Passage

__all__ = ["minmax", "reciprocal_rank_fusion", "top_k", "weighted_fusion"]


def minmax(scores: np.ndarray) -> np.ndarray:
    """Rescale to [0, 1]; a constant array becomes all zeros (it carries no ranking information)."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.size == 0:
        return scores
    low, high = float(scores.min()), float(scores.max())
    if high <= low:
        return np.zeros_like(scores)
    return (scores - low) / (high - low)


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
    ranks = np.empty(len(scores), dtype=np.float64)
    ranks[np.argsort(-scores, kind="stable")] = np.arange(1, len(scores) + 1)
    return ranks


def reciprocal_rank_fusion(scores: Sequence[np.ndarray], k: float = 60.0) -> np.ndarray:
    """RRF (Cormack et al., 2009): sum over scorers of ``1 / (k + rank)``, ranks from 1."""
    total = np.zeros(len(scores[0]) if scores else 0, dtype=np.float64)
    for array in scores:
        total += 1.0 / (k + _ranks(np.asarray(array, dtype=np.float64)))
    return total


def top_k(passages: Sequence[Passage], scores: np.ndarray | Sequence[float], k: int) -> list[Hit]:
    """The ``k`` best passages, best first; ties keep the input order (so results are deterministic).

    odqa's one top-k rule: rank with it rather than sorting by hand.
    """
    values = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-values, kind="stable")[:k]
    return [Hit(passages[i], float(values[i])) for i in order]
