"""HybridQA metrics on the shipped dev sample (30 questions and the official reference)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odqa.errors import FormatError
from odqa.evaluate.hybridqa import evaluate_hybridqa, read_reference


@pytest.fixture(scope="module")
def reference_path(data_dir: Path) -> Path:
    return data_dir / "hybridqa" / "dev_reference.sample.json"


def test_oracle_predictions_score_100(reference_path: Path) -> None:
    reference = read_reference(reference_path)
    out = evaluate_hybridqa(reference, dict(reference.answers))
    assert out == {"table exact": 100.0, "table f1": 100.0, "passage exact": 100.0, "passage f1": 100.0,
                   "total exact": 100.0, "total f1": 100.0, "total": 30}


def test_blank_table_answers(reference_path: Path) -> None:
    reference = read_reference(reference_path)
    assert (len(reference.table), len(reference.passage)) == (13, 15)  # 2 questions are in neither list
    predictions = {q: "" if q in reference.table else a for q, a in reference.answers.items()}
    out = evaluate_hybridqa(reference, predictions)
    assert out["table exact"] == 0.0 and out["table f1"] == 0.0
    assert out["passage exact"] == 100.0
    assert out["total exact"] == pytest.approx(17 / 30 * 100)


def test_token_f1_on_one_answer(reference_path: Path) -> None:
    reference = read_reference(reference_path)
    qid = "fd80aad33938f722"  # gold "21 Avondale St"
    predictions = {**reference.answers, qid: "Avondale Street"}  # 1 shared token: P 1/2, R 1/3 -> F1 0.4
    out = evaluate_hybridqa(reference, predictions)
    assert qid in reference.table
    assert out["table exact"] == pytest.approx(12 / 13 * 100)
    assert out["table f1"] == pytest.approx((12 + 0.4) / 13 * 100)
    assert out["passage f1"] == 100.0


def test_question_file_as_gold_has_no_split(data_dir: Path) -> None:
    reference = read_reference(data_dir / "hybridqa" / "dev.sample.json")
    out = evaluate_hybridqa(reference, dict(reference.answers))
    assert out["total exact"] == 100.0 and out["table exact"] is None and out["total"] == 30


def test_a_reference_of_another_shape_is_rejected(tmp_path: Path) -> None:
    bad = tmp_path / "ref.json"
    bad.write_text(json.dumps({"answers": {}}), encoding="utf-8")
    with pytest.raises(FormatError, match=r'expected \{"reference"'):
        read_reference(bad)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"reference": {"a": "caf\xe9"}}', "not UTF-8 text"),
        (b"[1]", r"item 0 is not a question with 'question_id' and 'answer-text' \(got 1\)"),
        (b'"reference"', r'got a JSON str; expected \{"reference"'),
        (b'{"reference": {}', r'malformed JSON .*; expected \{"reference"'),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ],
)
def test_unreadable_references(tmp_path: Path, content: bytes, message: str) -> None:
    bad = tmp_path / "ref.json"
    bad.write_bytes(content)
    with pytest.raises(FormatError, match=message):
        read_reference(bad)
