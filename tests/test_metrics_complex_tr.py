"""Complex-TR metrics: hand-computed cases in odqa's default mode and in the official script's mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from odqa.datasets.complex_tr import load_complex_tr
from odqa.errors import InputError
from odqa.evaluate.complex_tr import (
    QuestionScores,
    answer_count,
    evaluate_complex_tr,
    gold_answers,
    score_question,
    split_prediction,
)
from odqa.evaluate.predictions import read_predictions


@pytest.mark.parametrize(
    ("prediction", "default", "official"),
    [
        ("Scotland", ["scotland"], ["scotl", ""]),
        ("England and Scotland", ["england", "scotland"], ["engl", "", "scotl", ""]),
        ("Tom and Jerry $and Scotland", ["tom and jerry", "scotland"], ["tom and jerry", "scotland"]),
        ("Utrecht University$andLeiden University", ["utrecht university", "leiden university"],
         ["utrecht university", "leiden university"]),
        ("Josep Núñez, Joan Gaspart", ["josep núñez joan gaspart"], ["Josep Núñez", " Joan Gaspart"]),
        ("Brandon", ["brandon"], ["br", "on"]),
        ("", [""], [""]),
    ],
)
def test_split_prediction(prediction: str, default: list[str], official: list[str]) -> None:
    assert split_prediction(prediction) == default
    assert split_prediction(prediction, official=True) == official


def test_gold_answers_keep_non_empty_forms_and_fall_back_to_empty() -> None:
    assert gold_answers(["The Beatles ", "  "]) == ["beatles"]
    assert gold_answers(["The Beatles ", "  "], official=True) == ["the beatles"]
    assert gold_answers([]) == gold_answers([], official=True) == [""]
    assert gold_answers(["the"]) == [""]  # nothing left after normalisation: unanswerable


def test_scotland_is_only_wrong_under_the_official_split() -> None:
    assert score_question("Scotland", ["Scotland"]) == QuestionScores(1.0, 1.0, 1.0, 1.0)
    assert score_question("Scotland", ["Scotland"], official=True) == QuestionScores(0.0, 0.0, 0.0, 0.0)


def test_answer_f1_counts_extra_and_missing_answers() -> None:
    gold = ["Delft University of Technology", "Utrecht University"]
    scores = score_question("Delft University of Technology and Leiden University", gold)
    assert scores == QuestionScores(em=1.0, token_f1=1.0, set_acc=0.0, answer_f1=0.5)
    both = score_question("Utrecht University and Delft University of Technology", gold)
    assert both.set_acc == 1.0 and both.answer_f1 == 1.0
    extra = score_question("Utrecht University and Delft University of Technology and MIT", gold)
    assert extra.set_acc == 0.0 and extra.answer_f1 == pytest.approx(2 * (2 / 3) * 1 / (2 / 3 + 1))


def test_unanswerable_question_is_right_only_with_an_empty_prediction() -> None:
    assert score_question("", []) == QuestionScores(1.0, 1.0, 1.0, 1.0)
    assert score_question("Liverpool", []) == QuestionScores(0.0, 0.0, 0.0, 0.0)


def test_comma_separated_answers_differ_between_modes() -> None:
    gold = ["Josep Lluís Núñez", "Joan Gaspart"]
    default = score_question("Josep Lluís Núñez, Joan Gaspart", gold)
    assert default == QuestionScores(em=0.0, token_f1=pytest.approx(0.75), set_acc=0.0, answer_f1=0.0)
    official = score_question("Josep Lluís Núñez, Joan Gaspart", gold, official=True)
    # comma parts are neither lowercased nor stripped, so they never equal the lowercased gold answers
    assert official == QuestionScores(em=1.0, token_f1=1.0, set_acc=0.0, answer_f1=0.0)


@pytest.fixture()
def gold_and_predictions(data_dir: Path) -> tuple[list, dict[str, object]]:
    examples = list(load_complex_tr(data_dir / "complex_tr" / "reasonqa.jsonl"))
    return examples, read_predictions(data_dir / "complex_tr" / "predictions.jsonl")


def test_dataset_scores_default_mode(gold_and_predictions: tuple[list, dict[str, object]]) -> None:
    examples, predictions = gold_and_predictions
    out = evaluate_complex_tr(examples, predictions)
    assert out["EM"] == pytest.approx(600 / 7)
    assert out["Token_F1"] == pytest.approx(675 / 7)
    assert out["Set_Acc"] == pytest.approx(500 / 7)
    assert out["Answer_F1"] == pytest.approx(550 / 7)
    assert out["total"] == 7
    assert out["HasAns_total"] == 6 and out["HasAns_EM"] == pytest.approx(500 / 6)
    assert out["NoAns_Answer_f1"] == 100.0  # the official script's spelling of the subset key
    by_hops = out["by_hops"]
    assert by_hops["1-hop"]["Set_Acc"] == 75.0 and by_hops["1-hop"]["Answer_F1"] == 87.5
    assert by_hops["multi-hop"]["Token_F1"] == pytest.approx((1 + 1 + 0.75) / 3 * 100)
    assert set(out["by_level"]) == {"L2", "L3"} and out["by_level"]["L3"]["total"] == 2
    assert out["by_level_hops"]["L3 multi-hop"]["total"] == 1
    # paper 004 Table 7: on multi-answer questions EM (max over gold) overstates what set accuracy measures
    multi = out["by_answers"]["multi-answer"]
    assert multi["total"] == 3 and multi["EM"] == pytest.approx(200 / 3) and multi["Set_Acc"] == pytest.approx(100 / 3)
    assert multi["Answer_F1"] == 50.0 and multi["Token_F1"] == pytest.approx((1 + 1 + 0.75) / 3 * 100)
    assert out["by_answers"]["single-answer"]["total"] == 3 and out["by_answers"]["no-answer"]["total"] == 1


def test_dataset_scores_official_mode(gold_and_predictions: tuple[list, dict[str, object]]) -> None:
    examples, predictions = gold_and_predictions
    out = evaluate_complex_tr(examples, predictions, official=True)
    assert out["EM"] == pytest.approx(600 / 7)
    assert out["Token_F1"] == pytest.approx(600 / 7)
    assert out["Set_Acc"] == pytest.approx(400 / 7)
    assert out["Answer_F1"] == pytest.approx(450 / 7)
    assert out["mode"] == "official"


def test_missing_predictions_are_an_error_unless_ignored(
    gold_and_predictions: tuple[list, dict[str, object]],
) -> None:
    examples, predictions = gold_and_predictions
    partial = {k: v for k, v in predictions.items() if k != "L2_Q2000_P54_6"}
    with pytest.raises(InputError, match=r"1 of 7 gold questions have no prediction \('L2_Q2000_P54_6'\)"):
        evaluate_complex_tr(examples, partial)
    out = evaluate_complex_tr(examples, partial, ignore_missing=True)
    assert out["total"] == 6 and out["missing"] == 1


def test_a_non_string_prediction_is_rejected(gold_and_predictions: tuple[list, dict[str, object]]) -> None:
    examples, predictions = gold_and_predictions
    with pytest.raises(InputError, match="must be an answer string, got list"):
        evaluate_complex_tr(examples, {**predictions, "L3_Q1000_P69_2": ["a", "b"]})


def test_answer_count_uses_the_answers_as_compared() -> None:
    assert answer_count(["Paris", "paris.", "The Paris"]) == "single-answer"  # one SQuAD form
    assert answer_count(["Paris", "paris."], official=True) == "multi-answer"  # the official lowercase+strip
    assert answer_count([]) == answer_count(["", "the"]) == "no-answer"
    assert answer_count(["Tesla", "SpaceX"]) == "multi-answer"


def test_a_repeated_predicted_answer_counts_once_in_answer_f1() -> None:
    # "X and X" names one answer: P = 1/1, R = 1/2, F1 = 2/3 (counting it twice gave 0.8)
    gold = ["Real Madrid", "Bayern Munich"]
    assert score_question("Real Madrid and Real Madrid", gold).answer_f1 == pytest.approx(2 / 3)
    assert score_question("Real Madrid $and real madrid.", gold).answer_f1 == pytest.approx(2 / 3)
    assert score_question("Real Madrid and Bayern Munich and Real Madrid", gold).answer_f1 == 1.0
    # a gold answer listed twice (in two spellings) is one answer too: R = 1/2, not 1/3
    assert score_question("Jerry", ["Tom", "tom.", "Jerry"]).answer_f1 == pytest.approx(2 / 3)
    # the official script counts every part: tp 2, fp 0, fn 1
    assert score_question("Real Madrid $and Real Madrid", gold, official=True).answer_f1 == pytest.approx(0.8)
