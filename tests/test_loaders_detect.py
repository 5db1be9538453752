"""Which loader reads a questions file: detected from its first record, so each dataset's candidates are read
where that dataset keeps them."""

from __future__ import annotations

from pathlib import Path

import pytest

from odqa.datasets.detect import detect_format, load_dataset
from odqa.errors import FormatError, InputError


@pytest.mark.parametrize(
    ("file", "expected"),
    [
        ("timeqa/human_train.hard.slice.jsonl", "timeqa"),
        ("timeqa/human_annotated_train.slice.json", "timeqa"),
        ("hieradate/normal.json", "hieradate"),
        ("hieradate/distractor.jsonl", "hieradate"),
        ("jemhopqa/train_ver1.2.slice.json", "jemhopqa"),
        ("hybridqa/dev.sample.json", "hybridqa"),
        ("complex_tr/reasonqa.jsonl", "complex-tr"),
        ("complex_tr/odqa.jsonl", "complex-tr"),
        ("complex_tr/squad_style.json", "complex-tr"),
    ],
)
def test_shipped_files_are_detected(data_dir: Path, file: str, expected: str) -> None:
    assert detect_format(data_dir / file) == expected


def test_other_question_records_are_fid_and_an_empty_file_is_none(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "q1", "question": "Who?", "ctxs": [{"text": "Anna."}]}\n')
    assert detect_format(path) == "fid"
    assert [d.text for e in load_dataset(path) for d in e.ctxs or ()] == ["Anna."]
    path.write_text("\n\n")
    assert detect_format(path) is None and list(load_dataset(path)) == []


def test_each_dataset_keeps_its_candidates(data_dir: Path) -> None:
    (hieradate,) = load_dataset(data_dir / "hieradate" / "distractor.jsonl")
    assert hieradate.meta["dataset"] == "hieradate" and len(hieradate.ctxs or ()) == 10
    reason = next(load_dataset(data_dir / "complex_tr" / "reasonqa.jsonl"))
    assert reason.meta["level"] == "L2" and (reason.ctxs or ())[0].id.endswith(":context")


def test_hybridqa_questions_name_their_loader(data_dir: Path) -> None:
    with pytest.raises(InputError, match=r"load_hybridqa\(questions, tables_dir\)"):
        load_dataset(data_dir / "hybridqa" / "dev.sample.json")


def test_a_record_of_a_detected_dataset_that_misfits_is_a_format_error(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text('{"_id": "x", "question": "Who?", "answer": "A", "context": [["T", ["s"]], ["U", ["t"]]]}\n')
    with pytest.raises(FormatError, match=r"h\.jsonl:1: HieraDate record 'x' .* lacks"):
        list(load_dataset(path))
