"""answer_spans: where has_answer matches, as character offsets into the original text (the report's highlights)."""

from __future__ import annotations

import random

import pytest

from odqa.datasets import load_timeqa
from odqa.demo import demo_data
from odqa.evaluate.answers import answer_spans, has_answer


@pytest.mark.parametrize(("text", "golds", "expected"), [
    ("It joined the Asian Football Confederation in 1954.", ["asian football confederation"], ["Asian Football "
                                                                                              "Confederation"]),
    ("New York City, and York City again", ["New York", "York City"], ["New York City", "York City"]),
    ("The AFC; the afc, AFCs", ["AFC"], ["AFC", "afc"]),  # whole tokens only: "AFCs" is another token
    ("Café Müller opened in 1954", ["Café"], ["Café"]),  # precomposed text
    ("Cafe\u0301 Mu\u0308ller", ["müller"], ["Mu\u0308ller"]),  # decomposed text, precomposed answer
    ("𝔘𝔫𝔦 von 1954 bis 1960", ["1954"], ["1954"]),  # astral characters before the answer
    ("東京都に住んでいた", ["東京"], ["東京"]),  # an unspaced script: one token per character
    ("Rank 12th of 1,200", ["1,200"], ["1,200"]),
    ("No answer here.", ["Paris", ""], []),
])
def test_spans_cover_the_matched_answer(text: str, golds: list[str], expected: list[str]) -> None:
    spans = answer_spans(text, golds)
    assert [text[s:e] for s, e in spans] == expected
    assert bool(spans) == has_answer(text, golds)


def test_spans_agree_with_has_answer_on_the_demo_slice() -> None:
    checked = hits = 0
    for example in load_timeqa(demo_data()):
        for doc in example.ctxs or ():
            for start in range(0, len(doc.text), 600):  # 100-word-sized pieces, as refine passes them
                piece = doc.text[start:start + 700]
                spans = answer_spans(piece, example.answers)
                assert bool(spans) == has_answer(piece, example.answers)
                assert all(has_answer(piece[s:e], example.answers) for s, e in spans)
                checked += 1
                hits += bool(spans)
    assert checked > 500 and hits > 50


def test_spans_agree_with_has_answer_on_odd_unicode() -> None:
    rng = random.Random(7)
    alphabet = "aé́e̊ 漢字かがﾊﾟ,.-'\u0323\u0301ñÅﬁ①\u200b\t\nx1٣ไทยΣσςİi̇"
    golds = ["é", "漢字", "e", "a,", "ﾊﾟ", "x1", "Σ", "ς a", "İ", "ﬁ", "e\u0301"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        for gold in golds:
            spans = answer_spans(text, [gold])
            assert bool(spans) == has_answer(text, [gold]), (text, gold)
            assert all(has_answer(text[s:e], [gold]) for s, e in spans), (text, gold)
