"""HieraDate loader: normal and distractor settings, probes kept, probe questions, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odqa.datasets import load_hieradate, probe_examples
from odqa.errors import FormatError


def test_normal_setting(data_dir: Path) -> None:
    lived, born = load_hieradate(data_dir / "hieradate" / "normal.json")
    assert lived.answers == ("Maceo Anderson",) and lived.meta["setting"] == "normal"
    assert lived.ctxs is not None and [d.title for d in lived.ctxs] == ["Maceo Anderson", "Jacek Karpiński"]
    assert lived.ctxs[0].text.endswith("He was a founding member of the Four Step Brothers.")
    assert lived.meta["probes"]["ans_reason_1"] == {"year": 90, "month": 10, "day": 1}
    assert lived.meta["probes"]["ans_reason_2"] == {"year": 82, "month": 10, "day": 12}
    assert lived.meta["data_label"] == "2wikimultihopqa"
    assert born.meta["probes"]["ans_reason_2"] == "no"


def test_distractor_setting(data_dir: Path) -> None:
    (example,) = load_hieradate(data_dir / "hieradate" / "distractor.jsonl")
    assert example.meta["setting"] == "distractor" and example.ctxs is not None and len(example.ctxs) == 10


def test_probe_examples(data_dir: Path) -> None:
    lived, born = load_hieradate(data_dir / "hieradate" / "normal.json")
    probes = probe_examples(lived)
    assert [p.id.split("#")[1] for p in probes] == [
        "ans_extract_1", "ans_extract_2", "ans_extract_3", "ans_extract_4",
        "ans_reason_1", "ans_reason_2", "ans_reason_3", "ans_robust",
    ]
    assert probes[0].question == "What is the date of birth of Maceo Anderson?"
    assert probes[0].answers == ("September 3, 1910",) and probes[0].ctxs == lived.ctxs
    assert probes[4].answers == () and probes[4].meta["gold"] == {"year": 90, "month": 10, "day": 1}
    assert len(probe_examples(born)) == 5


def _record(data_dir: Path, index: int) -> dict[str, object]:
    records: list[dict[str, object]] = json.loads((data_dir / "hieradate" / "normal.json").read_text("utf-8"))
    return records[index]


@pytest.mark.parametrize(
    ("drop", "message"),
    [
        ("ans_reason_2", "lacks ans_reason_2"),
        ("context", "missing 'context'"),
        ("ques_robust", "lacks ques_robust"),
    ],
)
def test_records_that_do_not_fit(tmp_path: Path, data_dir: Path, drop: str, message: str) -> None:
    record = {k: v for k, v in _record(data_dir, 1).items() if k != drop}
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(FormatError, match=message) as info:
        list(load_hieradate(path))
    assert info.value.line == 1


def test_lived_longer_record_needs_four_extractions(tmp_path: Path, data_dir: Path) -> None:
    record = {k: v for k, v in _record(data_dir, 0).items() if k not in {"ans_extract_4", "ques_extract_4"}}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([record]), encoding="utf-8")
    with pytest.raises(FormatError, match=r"lived-longer .* lacks ques_extract_4, ans_extract_4"):
        list(load_hieradate(path))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"ans_reason_1": "82 years"}, r"ans_reason_1 is '82 years'; a lived-longer record's numerical probes"),
        ({"ans_reason_2": {"year": 1, "month": 2}}, r"ans_reason_2 is .*are ages \{\"year\""),
        ({"ques_extract_1": ["?"]}, "probe questions and text answers must be strings; ques_extract_1 is not"),
        ({"ans_extract_2": {"year": 2001}}, "text answers must be strings; ans_extract_2 is not"),
        ({"ans_reason_3": True}, "text answers must be strings; ans_reason_3 is not"),
    ],
)
def test_lived_longer_probes_of_the_wrong_type(
    tmp_path: Path, data_dir: Path, change: dict[str, object], message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(_record(data_dir, 1)) + "\n" + json.dumps(_record(data_dir, 0) | change) + "\n",
                    encoding="utf-8")
    with pytest.raises(FormatError, match=message) as info:
        list(load_hieradate(path))
    assert info.value.line == 2


def test_bad_paragraph(tmp_path: Path, data_dir: Path) -> None:
    gold = _record(data_dir, 1)["context"]
    path = tmp_path / "bad.jsonl"
    for context, message in [([*gold, ["Title", "not a sentence list"]], r"context paragraph 2 is not \[title, \["),
                             (gold[:1], r"context holds 1 paragraph\(s\); every setting has the 2 gold")]:
        path.write_text(json.dumps(_record(data_dir, 1) | {"context": context}) + "\n", encoding="utf-8")
        with pytest.raises(FormatError, match=message):
            list(load_hieradate(path))


def test_id_as_the_dataset_readme_names_it(tmp_path: Path, data_dir: Path) -> None:
    record = _record(data_dir, 1)
    record["id"] = record.pop("_id")
    path = tmp_path / "readme_keys.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    (example,) = load_hieradate(path)
    assert example.id == "0f1e2d3c4b5a69788796a5b4c3d2e1f0" and "id" not in example.meta


def test_generated_probes_load_and_score(tmp_path: Path) -> None:
    generate = pytest.importorskip("odqa.generate.hieradate")
    from odqa.evaluate.hieradate import evaluate_hieradate

    people = [
        {"entity": "Maceo Anderson", "date_of_birth": "September 3, 1910", "date_of_death": "July 4, 2001"},
        {"entity": "Jacek Karpiński", "date_of_birth": "9 April 1927", "date_of_death": "21 February 2010"},
    ]
    questions = ["Who lived longer, Maceo Anderson or Jacek Karpiński?",
                 "Who was born first, Maceo Anderson or Jacek Karpiński?"]
    pairs = [generate.pair_from_dict({"id": f"g{i}", "question": q, "entities": people})
             for i, q in enumerate(questions)]
    records = generate.hieradate_probes(pairs, generate.HieraDateConfig(seed=1))
    path = tmp_path / "generated.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "utf-8")
    examples = list(load_hieradate(path))
    assert [len(probe_examples(e)) for e in examples] == [8, 5]
    oracle = {e.id: {"answer": e.answers[0], **e.meta["probes"]} for e in examples}
    assert evaluate_hieradate(examples, oracle)["em_math"] == 100.0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"_id": None}, "'_id' must be a string, got null"),
        ({"_id": ["a"]}, "'_id' must be a string, got a JSON array"),
        ({"question": None}, "question and answer must be strings"),
    ],
)
def test_null_or_wrong_type_id(tmp_path: Path, data_dir: Path, change: dict[str, object], message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(_record(data_dir, 1)) + "\n" + json.dumps(_record(data_dir, 1) | change) + "\n",
                    encoding="utf-8")
    with pytest.raises(FormatError, match=r"bad\.jsonl:2: .*" + message):
        list(load_hieradate(path))
