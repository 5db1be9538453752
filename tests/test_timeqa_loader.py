from __future__ import annotations

import json
from pathlib import Path

import pytest

from odqa.datasets import load_timeqa
from odqa.datasets.detect import load_examples
from odqa.errors import FormatError
from odqa.evaluate import has_answer

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
