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


def test_year_only_ages_are_scored_on_the_year_so_em_equals_f1() -> None:
    gold = {"year": 90, "month": 0, "day": 0}  # paper 000 Figure 1, year-only: Maceo Anderson is 90
    assert age_scores({"year": 91, "month": 0, "day": 0}, gold, year_only=True) == (0.0, 0.0, 0.0, 0.0)
    assert age_scores({"year": 90, "month": 5, "day": 3}, gold, year_only=True) == (1.0, 1.0, 1.0, 1.0)
    em, f1, _, _ = age_scores({"year": 91, "month": 0, "day": 0}, gold)  # full-date scoring: the zeros count
    assert em == 0.0 and f1 == pytest.approx(2 / 3)


def test_year_only_records_switch_age_scoring(gold: list) -> None:
    from dataclasses import replace

    lived_longer = [e for e in gold if "ans_reason_3" in e.meta["probes"]]
    assert lived_longer, "the hand-built records hold a 'who lived longer' question"
    example = lived_longer[0]
    probes = example.meta["probes"]
    wrong_year = {k: ({**v, "year": v["year"] + 1} if k in ("ans_reason_1", "ans_reason_2") else v)
                  for k, v in probes.items()}
    prediction = {example.id: {"answer": example.answers[0], **wrong_year}}
    full = evaluate_hieradate([example], prediction)
    year_only = evaluate_hieradate([replace(example, meta={**example.meta, "version": "year-only"})], prediction)
    assert full["em_math"] == 0.0 and full["f1_math"] == pytest.approx(200 / 3)
    assert year_only["em_math"] == year_only["f1_math"] == 0.0


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
