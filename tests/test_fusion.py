"""top_k is the one top-k rule: best first, ties in input order, for arrays and plain lists of scores."""

from __future__ import annotations

import numpy as np

from odqa.records import Passage
from odqa.retrieve.fusion import top_k

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
