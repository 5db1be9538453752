from __future__ import annotations

import json
from pathlib import Path

import pytest

from odqa.datasets import load_timeqa
from odqa.errors import FormatError
from odqa.evaluate import has_answer
from odqa.inputs import load_examples

TIMEQA = Path(__file__).parent / "data" / "timeqa"


def test_question_lines_format() -> None:
    examples = list(load_timeqa(TIMEQA / "human_train.hard.slice.jsonl"))
    assert len(examples) == 14
    first = examples[0]
    assert first.id == "/wiki/Newton_D._Baker_House#P466#0"
    assert first.answers == ("George Peter",)
    assert first.subject == "Newton D . Baker House"
    assert first.ctxs is not None and len(first.ctxs) == 1
    article = first.ctxs[0]
    assert article.id == "/wiki/Newton_D._Baker_House" and article.title == "Newton D . Baker House"
    assert has_answer(article.text, first.answers)
    assert not article.text.startswith("Newton D . Baker House Newton")  # title carried separately
    unanswerable = examples[-1]
    assert unanswerable.answers == () and unanswerable.meta["answerable"] is False


def test_annotated_pages_format() -> None:
    examples = list(load_timeqa(TIMEQA / "human_annotated_train.slice.json"))
    assert len(examples) == 11
    assert examples[0].id == "/wiki/Newton_D._Baker_House#P466#0"
    assert examples[0].question.endswith("from 1811 to 1827?") and examples[0].answers == ("George Peter",)
    for ex in examples:
        assert ex.ctxs is not None and all(has_answer(ex.ctxs[0].text, [a]) for a in ex.answers)
    # the page holding unanswerable questions (answer "") loads them as the other shape does: no answer
    endrass = {e.id: e for e in examples if e.id.startswith("/wiki/Engelbert_Endrass")}
    assert [(e.answers, e.meta["answerable"]) for e in endrass.values()] == [
        ((), False), (("Leutnant zur See",), True), ((), False)]
    lines = {e.id: e for e in load_timeqa(TIMEQA / "human_train.hard.slice.jsonl")}
    shared = endrass.keys() & lines.keys()
    assert shared == {"/wiki/Engelbert_Endrass#P410#0"}
    assert all(endrass[i].answers == lines[i].answers for i in shared)


def test_detection_picks_the_timeqa_loader() -> None:
    assert [e.id for e in load_examples(TIMEQA / "human_annotated_train.slice.json")][:1] == [
        "/wiki/Newton_D._Baker_House#P466#0"
    ]


def test_record_that_does_not_fit(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"idx": "x", "question": "q", "targets": []}) + "\n")
    with pytest.raises(FormatError, match=r"bad\.jsonl:1: not a TimeQA question record"):
        list(load_timeqa(path))


def _first_line() -> dict[str, object]:
    line = (TIMEQA / "human_train.hard.slice.jsonl").read_text("utf-8").splitlines()[0]
    record: dict[str, object] = json.loads(line)
    return record


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"question": 5}, "'question' must be a string, got a JSON number"),
        ({"question": None}, "'question' must be a string, got null"),
        ({"idx": None}, "'idx' must be a string, got null"),
        ({"targets": [None]}, r"'targets' must be a list of strings, got \[null\]"),
        ({"targets": "George Peter"}, "'targets' must be a list of strings"),
        ({"paragraphs": [{"title": None, "text": "words"}]}, "paragraph 0: 'title' must be a string, got null"),
        ({"paragraphs": [{"title": "T", "text": None}]}, "paragraph 0: 'text' must be a string, got null"),
        ({"paragraphs": [{"title": "T", "text": "a"}, "b"]}, "paragraph 1 must be an object {title, text}"),
        ({"paragraphs": None}, "'paragraphs' must be a list of {title, text}, got null"),
    ],
)
def test_question_line_with_null_or_wrong_type_fields(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(_first_line()) + "\n" + json.dumps(_first_line() | change) + "\n")
    with pytest.raises(FormatError, match=r"bad\.jsonl:2: .*" + message):
        list(load_timeqa(path))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"paras": [None, "text"]}, r"'paras' must be \[title, paragraph, \.\.\.\] strings"),
        ({"paras": ["Title", None]}, r"'paras' must be \[title, paragraph, \.\.\.\] strings"),
        ({"index": None}, "'index' must be a string, got null"),
        ({"link": 5}, "'link' must be a string or absent, got a JSON number"),
        ({"questions": [[7, [{"answer": "x"}]]]}, "question 0: the question must be a string, got a JSON number"),
        ({"questions": [["Who?", [{"answer": None}]]]}, "question 0: every 'answer' must be a string"),
    ],
)
def test_annotated_page_with_null_or_wrong_type_fields(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    pages = json.loads((TIMEQA / "human_annotated_train.slice.json").read_text("utf-8"))
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([pages[0] | change]))
    with pytest.raises(FormatError, match=r"bad\.json: .*" + message):
        list(load_timeqa(path))
