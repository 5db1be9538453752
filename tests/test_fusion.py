"""The fusion module: top_k is the one top-k rule (best first, ties in input order, for arrays and plain lists of
scores); in a score array NaN marks a passage the scorer did not rank."""

from __future__ import annotations

import numpy as np

from odqa.records import Passage
from odqa.retrieve.fusion import minmax, reciprocal_rank_fusion, top_k, weighted_fusion

PASSAGES = [Passage(str(i), "d", "", str(i)) for i in range(5)]


def test_top_k_takes_a_list_or_an_array() -> None:
    scores = [1.0, 2.0, 2.0, 0.5, 2.0]
    for given in (scores, np.array(scores)):
        hits = top_k(PASSAGES, given, 4)
        assert [h.passage.id for h in hits] == ["1", "2", "4", "0"]
        assert [h.score for h in hits] == [2.0, 2.0, 2.0, 1.0] and all(type(h.score) is float for h in hits)


def test_top_k_beyond_the_passages_and_nothing_to_rank() -> None:
    assert [h.passage.id for h in top_k(PASSAGES[:2], [0.1, 0.3], 10)] == ["1", "0"]
    assert top_k([], [], 3) == []


def test_nan_marks_a_passage_the_scorer_did_not_rank() -> None:
    nan = float("nan")
    np.testing.assert_allclose(minmax(np.array([nan, 1.0, 3.0, 2.0])), [0.0, 0.0, 1.0, 0.5])
    np.testing.assert_array_equal(minmax(np.array([nan, nan])), [0.0, 0.0])
    np.testing.assert_array_equal(minmax(np.array([nan, 4.0])), [0.0, 0.0])
    rrf = reciprocal_rank_fusion([np.array([2.0, nan, 1.0]), np.array([nan, 5.0, 7.0])], k=60)
    np.testing.assert_allclose(rrf, [1 / 61, 1 / 62, 1 / 62 + 1 / 61])
    fused = weighted_fusion([np.array([2.0, nan, 1.0]), np.array([nan, 5.0, 7.0])], [1.0, 2.0])
    np.testing.assert_allclose(fused, [1.0, 0.0, 2.0])
