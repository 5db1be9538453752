"""TimeQA (and generic FiD) answer metrics: SQuAD EM/F1 with the answerable / unanswerable breakdown."""

from __future__ import annotations

import pytest

from odqa.evaluate.timeqa import evaluate_answers
from odqa.records import Example

EXAMPLES = [
    Example(id="q1", question="Which team did Olivier Bernard play for from 2000 to 2005?",
            answers=("Newcastle United",)),
    Example(id="q2", question="Which position did X hold in 1990?", answers=("mayor of Paris", "senator")),
    Example(id="q3", question="Which party did X belong to in 1850?", answers=()),
    Example(id="q4", question="Who owned X in 1700?", answers=()),
]


def test_hand_computed_scores_with_breakdown() -> None:
    predictions = {
        "q1": "Newcastle United F.C.",  # EM 0; F1: 2 shared of 3 predicted, 2 gold -> 0.8
        "q2": "The Senator",  # EM 1 against the second gold answer (article dropped)
        "q3": "",  # unanswerable and empty: EM 1, F1 1
        "q4": "nobody",  # unanswerable, answered: 0
    }
    out = evaluate_answers(EXAMPLES, predictions)
    assert out["exact"] == pytest.approx(50.0)
    assert out["f1"] == pytest.approx((0.8 + 1 + 1 + 0) / 4 * 100)
    assert out["total"] == 4
    assert out["answerable"] == {"exact": 50.0, "f1": pytest.approx(90.0), "total": 2}
    assert out["unanswerable"] == {"exact": 50.0, "f1": 50.0, "total": 2}


def test_numbers_and_null_predictions_are_read_as_text() -> None:
    examples = [Example(id="a", question="?", answers=("1984",)), Example(id="b", question="?", answers=())]
    out = evaluate_answers(examples, {"a": 1984, "b": None})
    assert out["exact"] == 100.0


def test_an_empty_group_scores_none() -> None:
    out = evaluate_answers(EXAMPLES[:1], {"q1": "Newcastle United"})
    assert out["unanswerable"] == {"exact": None, "f1": None, "total": 0}
