"""Complex-TR loader: the three shapes, level and hops from the id, clear errors on records that misfit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odqa.datasets import load_complex_tr, parse_complex_tr_id, to_fid, write_examples_fid
from odqa.errors import FormatError
from odqa.io import example_to_fid, read_fid


@pytest.mark.parametrize(
    ("qid", "expected"),
    [
        ("L2_Q451225_P108_4", ("L2", "1-hop")),
        ("L3_Q1000_P69_2", ("L3", "1-hop")),
        ("L2M_Q1000_P69_1", ("L2", "multi-hop")),
        ("L2H_Q4000_P488_8", ("L2", "multi-hop")),
        ("L3M_Q1000_P69_P108_3", ("L3", "multi-hop")),
        ("L3H_Q1000_P39_P108_2", ("L3", "multi-hop")),  # the six levels the released notebook prints
    ],
)
def test_parse_id(qid: str, expected: tuple[str, str]) -> None:
    assert parse_complex_tr_id(qid) == expected


@pytest.mark.parametrize(
    "qid", ["L1_Q1_P1_1", "Q451225_P108_4", "L2_Q1_1", "L2_Q1_P1_P2_P3_1", "L2__P1_1", "l2_Q_P_1"]
)
def test_parse_id_rejects_other_shapes(qid: str) -> None:
    with pytest.raises(ValueError, match=r"e\.g\. 'L2_Q451225_P108_4'"):
        parse_complex_tr_id(qid)


def test_reasonqa_records(data_dir: Path) -> None:
    examples = list(load_complex_tr(data_dir / "complex_tr" / "reasonqa.jsonl"))
    assert len(examples) == 7
    first = examples[0]
    assert first.answers == ("Delft University of Technology", "Utrecht University")
    assert first.meta["level"] == "L2" and first.meta["hops"] == "1-hop" and first.meta["answerable"]
    assert first.meta["date"] == "September 01 1931" and "fact_context" in first.meta
    assert first.ctxs is not None and first.ctxs[0].text.startswith("Hendrik Anthony Kramers")
    assert examples[5].answers == () and not examples[5].meta["answerable"]


def test_odqa_and_squad_shapes_give_the_same_questions(data_dir: Path) -> None:
    reason = list(load_complex_tr(data_dir / "complex_tr" / "reasonqa.jsonl"))
    odqa = list(load_complex_tr(data_dir / "complex_tr" / "odqa.jsonl"))
    squad = list(load_complex_tr(data_dir / "complex_tr" / "squad_style.json"))
    for shape in (odqa, squad):
        assert [(e.id, e.question, e.answers) for e in shape] == [(e.id, e.question, e.answers)
                                                                   for e in reason]
    assert odqa[0].ctxs is not None and [d.title for d in odqa[0].ctxs] == ["Wikipedia", "Web"]
    assert squad[0].ctxs is None


def test_back_to_fid(data_dir: Path) -> None:
    example = next(load_complex_tr(data_dir / "complex_tr" / "odqa.jsonl"))
    record = to_fid(example)
    assert record["id"] == "L2_Q451225_P108_4" and record["answers"] == list(example.answers)
    assert [c["title"] for c in record["ctxs"]] == ["Wikipedia", "Web"]
    assert set(to_fid(example, ctx_key="passages")) == {"id", "question", "answers", "passages"}


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"id": "Q1_P1_1", "question": "?", "text_answers": {"text": []}}, "is not '<level>_<subject>"),
        ({"id": "L2_Q1_P1_1", "question": "?"}, "no answer list"),
        ({"id": "L2_Q1_P1_1", "question": "?", "text_answers": {"text": [1]}}, "must be strings"),
        ({"id": "L2_Q1_P1_1", "question": "?", "answers": {"text": []}, "passages": [{"title": "t"}]},
         "passage 0 has no 'text'"),
        ({"question": "?"}, "no 'id' string"),
        ({"id": "L2_Q1_P1_1", "question": "?", "text_answers": {"text": []}, "context": ["a", "b"]},
         "'context' must be the context text"),
    ],
)
def test_records_that_do_not_fit(tmp_path: Path, record: dict[str, object], message: str) -> None:
    path = tmp_path / "bad.jsonl"
    good = {"id": "L2_Q1_P1_1", "question": "?", "text_answers": {"text": ["a"]}}
    path.write_text(json.dumps(good) + "\n" + json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(FormatError, match=message) as info:
        list(load_complex_tr(path))
    assert info.value.line == 2


def test_bad_squad_file(tmp_path: Path) -> None:
    path = tmp_path / "squad.json"
    path.write_text(json.dumps({"data": [{"qas": []}]}, indent=1), encoding="utf-8")
    with pytest.raises(FormatError, match=r"expected data\[\].paragraphs\[\].qas\[\]"):
        list(load_complex_tr(path))


def test_to_fid_is_the_record_refine_writes(data_dir: Path) -> None:
    example = next(load_complex_tr(data_dir / "complex_tr" / "odqa.jsonl"))
    for key in ("ctxs", "passages"):
        record = to_fid(example, ctx_key=key)  # type: ignore[arg-type]
        envelope = example_to_fid(example, [], ctx_key=key)  # type: ignore[arg-type]
        assert list(record) == list(envelope) and {k: v for k, v in record.items() if k != key} == {
            k: v for k, v in envelope.items() if k != key}
        assert record[key] == [{"id": d.id, "title": d.title, "text": d.text} for d in example.ctxs or ()]
    bare = next(load_complex_tr(data_dir / "complex_tr" / "reasonqa.jsonl"))
    assert to_fid(bare) == example_to_fid(bare, []) | {"ctxs": [{"id": f"{bare.id}:context", "title": "",
                                                                   "text": bare.ctxs[0].text}]}  # type: ignore[index]


@pytest.mark.parametrize(
    ("squad", "message"),
    [
        ({"data": [{"paragraphs": [{"qas": "abc"}]}]}, r"data\[0\]\.paragraphs\[0\]\.qas is a JSON str, not a list"),
        ({"data": [{"paragraphs": [{"qas": [1]}]}]}, r"data\[0\]\.paragraphs\[0\]\.qas\[0\] is a JSON int, expected a "
                                                      "question object"),
        ({"data": 5}, r"data is a JSON int, not a list; expected data\[\]\.paragraphs\[\]\.qas\[\]"),
        ({"data": ["x"]}, r"data\[0\] is a JSON str, not an object"),
    ],
)
def test_squad_files_of_the_wrong_shape(tmp_path: Path, squad: dict[str, object], message: str) -> None:
    path = tmp_path / "squad.json"
    path.write_text(json.dumps(squad, indent=1), encoding="utf-8")
    with pytest.raises(FormatError, match=message):
        list(load_complex_tr(path))


def test_one_line_json_array_and_unreadable_files(tmp_path: Path) -> None:
    record = {"id": "L2_Q1_P1_1", "question": "?", "text_answers": {"text": ["a"]}}
    path = tmp_path / "one_line.json"
    path.write_text(json.dumps([record]), encoding="utf-8")
    assert [e.id for e in load_complex_tr(path)] == ["L2_Q1_P1_1"]
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(FormatError, match="expected a list of JSON objects, found int"):
        list(load_complex_tr(path))
    latin1 = tmp_path / "latin1.jsonl"
    latin1.write_bytes(b'{"id": "L2_Q1_P1_1", "question": "caf\xe9"}\n')
    with pytest.raises(FormatError, match="not UTF-8 text"):
        list(load_complex_tr(latin1))
    squad = tmp_path / "squad.json"
    squad.write_bytes(b'{\n "data": [{"title": "caf\xe9"}]}\n')
    with pytest.raises(FormatError, match="not UTF-8 text"):
        list(load_complex_tr(squad))


def test_write_fid_round_trip(data_dir: Path, tmp_path: Path) -> None:
    examples = list(load_complex_tr(data_dir / "complex_tr" / "odqa.jsonl"))
    out = tmp_path / "fid.jsonl"
    assert write_examples_fid(out, examples) == 7
    again = list(read_fid(out))
    assert [(e.id, e.answers) for e in again] == [(e.id, e.answers) for e in examples]
    assert again[0].ctxs is not None and again[0].ctxs[1].text == examples[0].ctxs[1].text  # type: ignore[index]


def test_fid_output_of_refine_is_read_as_gold(data_dir: Path, tmp_path: Path) -> None:
    examples = list(load_complex_tr(data_dir / "complex_tr" / "odqa.jsonl"))
    out = tmp_path / "refined.jsonl"
    write_examples_fid(out, examples)
    again = list(load_complex_tr(out))
    assert [(e.id, e.answers, e.meta["hops"]) for e in again] == [(e.id, e.answers, e.meta["hops"])
                                                                   for e in examples]
    assert again[0].ctxs is not None and len(again[0].ctxs) == 2


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"question": None}, "'question' must be a string"),
        ({"passages": [{"title": 5, "text": "x"}]}, "passage 0: 'title' must be a string or absent, got a JSON number"),
        ({"passages": [{"title": "t", "text": "x", "id": ["a"]}]},
         "passage 0: 'id' must be a string or a number, got a JSON array"),
        ({"passages": [None]}, "passage 0 has no 'text' string"),
    ],
)
def test_null_or_wrong_type_fields(tmp_path: Path, change: dict[str, object], message: str) -> None:
    good = {"id": "L2_Q1_P1_1", "question": "?", "text_answers": {"text": ["a"]}}
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(good | change) + "\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"bad\.jsonl:2: .*" + message):
        list(load_complex_tr(path))
