"""BM25 scores against bm25s (an independent implementation of Lucene's variant), and the tokeniser on English,
Japanese, Thai and Khmer text."""

from __future__ import annotations

import bm25s
import numpy as np
import pytest

from odqa.records import Passage
from odqa.retrieve.bm25 import bm25_scores
from odqa.retrieve.tokenize import tokenize

ENGLISH = (
    ("Lake Geneva", "Lake Geneva is a lake on the north side of the Alps shared by France and Switzerland. " * 3),
    ("Geneva", "In 1998 the mayor of Geneva was Anna Keller. She served until 2003."),
    ("Zurich", "Zurich is the largest city in Switzerland and a centre of banking."),
    ("Bern", "Bern is the capital of Switzerland; the mayor of Bern lives in the old town."),
)
THAI = (  # "Bangkok is the capital of Thailand", "the Chao Phraya river flows through the city centre", ...
    ("กรุงเทพ", "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย ประชากรส่วนใหญ่นับถือศาสนาพุทธ"),
    ("เจ้าพระยา", "แม่น้ำเจ้าพระยาไหลผ่านใจกลางเมือง อาหารไทยมีชื่อเสียงไปทั่วโลก"),
    ("อาหาร", "อาหารไทยมีชื่อเสียงไปทั่วโลก"),
)
KHMER = (  # "Phnom Penh is the capital of Cambodia.", "The Mekong flows through Cambodia.", "Angkor Wat is ..."
    ("ភ្នំពេញ", "ភ្នំពេញជារាជធានីនៃប្រទេសកម្ពុជា។"),
    ("មេគង្គ", "ទន្លេមេគង្គហូរកាត់ប្រទេសកម្ពុជា។"),
    ("អង្គរវត្ត", "អង្គរវត្តជាប្រាសាទដ៏ល្បីល្បាញ។"),
)
JAPANESE = (
    ("東京", "東京は日本の首都であり、政治と経済の中心地である。"),
    ("京都", "京都は千年以上にわたって日本の都であった。"),
    ("大阪", "大阪は商業の町として栄えた。"),
)


def passages(rows: tuple[tuple[str, str], ...]) -> list[Passage]:
    return [Passage(str(i), str(i), title, text) for i, (title, text) in enumerate(rows)]


@pytest.mark.parametrize(
    ("rows", "question"),
    [
        (ENGLISH, "mayor of Geneva"),
        (ENGLISH, "Geneva Geneva lake"),  # a repeated query term counts twice, as in bm25s and Lucene
        (ENGLISH, "largest city of Switzerland"),
        (ENGLISH, "unknown words"),
        (JAPANESE, "日本の首都はどこ"),
        (THAI, "แม่น้ำเจ้าพระยา"),
        (KHMER, "រាជធានីនៃប្រទេសកម្ពុជា"),
    ],
)
@pytest.mark.parametrize(("k1", "b"), [(0.9, 0.4), (1.5, 0.75)])
def test_bm25_matches_bm25s_lucene(rows: tuple[tuple[str, str], ...], question: str, k1: float, b: float) -> None:
    docs = passages(rows)
    reference = bm25s.BM25(method="lucene", k1=k1, b=b)
    reference.index([list(tokenize(f"{p.title} {p.text}")) for p in docs], show_progress=False)
    expected = reference.get_scores(list(tokenize(question)))
    # Lucene >= 8 (and bm25s after it) drops BM25's constant factor (k1 + 1), which changes no ranking.
    np.testing.assert_allclose(bm25_scores(question, docs, k1=k1, b=b), (k1 + 1) * expected, rtol=1e-5)


@pytest.mark.parametrize(
    ("rows", "question", "best"),
    [
        (THAI, "แม่น้ำเจ้าพระยาไหลผ่านที่ไหน", 1),  # "where does the Chao Phraya river flow?"
        (KHMER, "អង្គរវត្តជាអ្វី", 2),  # "what is Angkor Wat?"
        (JAPANESE, "京都は日本の都", 1),
    ],
)
def test_unspaced_questions_find_their_passage(rows: tuple[tuple[str, str], ...], question: str, best: int) -> None:
    assert int(np.argmax(bm25_scores(question, passages(rows)))) == best


def test_unspaced_text_becomes_character_bigrams_within_spaces() -> None:
    assert tokenize("東京都") == ("東京", "京都")
    assert tokenize("ภาษา ไทย") == ("ภา", "าษ", "ษา", "ไท", "ทย")  # no bigram across the space
    assert tokenize("ភ្នំ\u200bពេញ") == ("ភ្", "្ន", "នំ", "ពេ", "េញ")  # a zero-width space separates too
    assert tokenize("東京タワーはTokyo Tower") == (
        "東京", "京タ", "タワ", "ワー", "ーは", "はt", "to", "ok", "ky", "yo", "to", "ow", "we", "er"
    )


def test_one_stopword_list_holds_every_function_word() -> None:
    assert tokenize("whose house") == ("hous",)  # "whose": the HybridQA linker's list had it, ours did not
