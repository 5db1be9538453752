from __future__ import annotations

import unicodedata

import pytest

from odqa.chunk import chunk, chunk_document
from odqa.config import ChunkConfig
from odqa.errors import ConfigError
from odqa.records import Document
from odqa.text import is_unspaced

# Thai puts spaces between phrases, not words: "Bangkok is the capital of Thailand", "the Chao Phraya river flows
# through the city centre", "most of the population is Buddhist", "Thai food is famous all over the world".
THAI = ("กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย", "แม่น้ำเจ้าพระยาไหลผ่านใจกลางเมือง", "ประชากรส่วนใหญ่นับถือศาสนาพุทธ",
        "อาหารไทยมีชื่อเสียงไปทั่วโลก")
# Khmer ends sentences with ។ (khan): "Phnom Penh is the capital of Cambodia.", "The Mekong flows through
# Cambodia.", "Angkor Wat is a famous temple."
KHMER = ("ភ្នំពេញជារាជធានីនៃប្រទេសកម្ពុជា។", "ទន្លេមេគង្គហូរកាត់ប្រទេសកម្ពុជា។", "អង្គរវត្តជាប្រាសាទដ៏ល្បីល្បាញ។")


def words(n: int, start: int = 0) -> str:
    return " ".join(f"w{i}" for i in range(start, start + n))


def test_dpr_rule_100_words_no_overlap_title_separate() -> None:
    doc = Document(id="d", title="A Title With Words", text=words(250))
    passages = chunk_document(doc)
    assert [len(p.text.split()) for p in passages] == [100, 100, 50]
    assert [p.id for p in passages] == ["d:0", "d:1", "d:2"]
    assert all(p.title == "A Title With Words" and p.doc_id == "d" for p in passages)
    assert passages[1].text.split()[0] == "w100"  # no overlap, nothing skipped
    assert " ".join(p.text for p in passages) == words(250)


def test_size_and_stride() -> None:
    passages = chunk_document(Document("d", "", words(10)), ChunkConfig(words=4, stride=2))
    assert [p.text for p in passages] == [words(4, 0), words(4, 2), words(4, 4), words(4, 6)]


def test_short_document_keeps_its_id_and_empty_yields_nothing() -> None:
    assert [p.id for p in chunk_document(Document("ctx-7", "t", "just a few words"))] == ["ctx-7"]
    assert list(chunk([Document("e", "t", "   ")])) == []


def test_japanese_is_chunked_by_character_budget() -> None:
    sentence = "東京は日本の首都であり、政治と経済の中心地である。"
    text = sentence * 40  # ~1000 characters and not a single space
    assert is_unspaced(text) and not is_unspaced(words(50))
    passages = chunk_document(Document("j", "東京", text), ChunkConfig(chars=120))
    assert len(passages) > 5
    assert all(len(p.text) <= 120 for p in passages)
    assert "".join(p.text for p in passages) == text  # nothing lost, nothing repeated
    assert all(p.text.endswith("。") for p in passages)  # cut at sentence ends when they fit


def test_overlong_unspaced_sentence_is_cut_hard() -> None:
    passages = chunk_document(Document("j", "", "あ" * 450), ChunkConfig(chars=200))
    assert [len(p.text) for p in passages] == [200, 200, 50]


@pytest.mark.parametrize("kwargs", [{"words": 0}, {"words": 10, "stride": 11}, {"chars": 0}])
def test_bad_chunk_options(kwargs: dict[str, int]) -> None:
    with pytest.raises(ConfigError):
        ChunkConfig(**kwargs)


def test_thai_is_chunked_by_character_budget_at_spaces() -> None:
    text = " ".join(THAI * 17)  # 2,260 characters, 68 space-separated phrases
    assert len(text) > 2150 and is_unspaced(text)
    passages = chunk_document(Document("t", "กรุงเทพมหานคร", text), ChunkConfig(chars=200))
    assert len(passages) >= len(text) // 200
    assert all(len(p.text) <= 200 for p in passages)
    assert " ".join(p.text for p in passages) == text  # cut only where a space was
    assert all(set(p.text.split()) <= set(THAI) for p in passages)  # no phrase cut in two


def test_khmer_is_chunked_at_sentence_ends() -> None:
    text = "".join(KHMER * 20)  # no space at all
    assert is_unspaced(text)
    passages = chunk_document(Document("k", "", text), ChunkConfig(chars=150))
    assert len(passages) > 5 and all(len(p.text) <= 150 for p in passages)
    assert "".join(p.text for p in passages) == text
    assert all(p.text.endswith("។") for p in passages)


def test_hard_cut_never_separates_a_combining_mark_from_its_letter() -> None:
    text = THAI[1] * 20  # one 660-character phrase: no space, no sentence end
    passages = chunk_document(Document("t", "", text), ChunkConfig(chars=100))
    assert "".join(p.text for p in passages) == text and all(len(p.text) <= 100 for p in passages)
    assert all(unicodedata.category(p.text[0])[0] != "M" for p in passages)
