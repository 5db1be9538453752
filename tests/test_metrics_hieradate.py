"""HieraDate metrics: hand-computed scores on the hand-built records of paper 000's Figure 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from odqa.datasets.hieradate import load_hieradate, probe_examples
from odqa.errors import InputError
from odqa.evaluate.hieradate import age_scores, answer_scores, evaluate_hieradate
from odqa.evaluate.predictions import read_predictions


def test_answer_scores_follow_the_official_special_cases() -> None:
    assert answer_scores("Maceo Anderson", "maceo anderson.") == (1.0, 1.0, 1.0, 1.0)
    assert answer_scores("yes", "no") == (0.0, 0.0, 0.0, 0.0)
    assert answer_scores("yes it is", "yes") == (0.0, 0.0, 0.0, 0.0)  # a yes/no gold needs that exact answer
    assert answer_scores("", "") == (1.0, 0.0, 0.0, 0.0)  # no shared token: F1 0 even when both are empty
    em, f1, prec, recall = answer_scores("February 2010", "21 February 2010")
    assert (em, prec, recall) == (0.0, 1.0, pytest.approx(2 / 3)) and f1 == pytest.approx(0.8)


def test_age_scores_compare_year_month_day_as_numbers() -> None:
    gold = {"year": 82, "month": 10, "day": 12}
    assert age_scores({"year": "82", "month": "10.0", "day": 12}, gold) == (1.0, 1.0, 1.0, 1.0)
    em, f1, _, _ = age_scores({"year": 82, "month": 11, "day": 12}, gold)
    assert em == 0.0 and f1 == pytest.approx(2 / 3)
    assert age_scores("82 years, 10 months, 12 days", gold) == (0.0, 0.0, 0.0, 0.0)
    with pytest.raises(InputError, match="missing day"):
        age_scores({"year": 82, "month": 10}, gold)
    with pytest.raises(InputError, match=r'gold age must be an age \{"year", "month", "day"\}, got int'):
        age_scores(gold, 82)  # type: ignore[arg-type]


@pytest.fixture()
def gold(data_dir: Path) -> list:
    return list(load_hieradate(data_dir / "hieradate" / "normal.json"))


def test_dataset_scores_by_hand(gold: list, data_dir: Path) -> None:
    out = evaluate_hieradate(gold, read_predictions(data_dir / "hieradate" / "predictions.json"))
    assert (out["em"], out["f1"], out["prec"], out["recall"]) == (50.0, 50.0, 50.0, 50.0)
    assert (out["ro_em"], out["ro_f1"]) == (50.0, 50.0)
    assert out["ex_em"] == pytest.approx(400 / 6)
    assert out["ex_f1"] == pytest.approx(580 / 6)
    assert out["ex_prec"] == 100.0
    assert out["ex_recall"] == pytest.approx((5 + 2 / 3) / 6 * 100)
    assert out["em_math"] == 50.0
    assert out["f1_math"] == pytest.approx((1 + 2 / 3) / 2 * 100)
    assert out["em_compare"] == pytest.approx(200 / 3)
    assert out["counts"] == {
        "questions": 2, "extraction": 6, "reasoning_numerical": 2, "reasoning_comparison": 3,
    }


def test_oracle_and_per_probe_predictions(gold: list) -> None:
    oracle = {e.id: {"answer": e.answers[0], **e.meta["probes"]} for e in gold}
    out = evaluate_hieradate(gold, oracle)
    assert all(v == 100.0 for k, v in out.items() if k != "counts")
    per_probe = {p.id: p.meta["gold"] for e in gold for p in probe_examples(e)}
    per_probe |= {e.id: e.answers[0] for e in gold}
    assert evaluate_hieradate(gold, per_probe) == out


def test_a_prediction_without_every_probe_is_rejected(gold: list) -> None:
    with pytest.raises(InputError, match="lacks ans_robust"):
        evaluate_hieradate(gold[1:], {gold[1].id: {"answer": "x", "ans_extract_1": "", "ans_extract_2": "",
                                                   "ans_reason_1": "yes", "ans_reason_2": "no"}})
