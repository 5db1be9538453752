"""One definition of the scripts written without spaces, shared by chunking, BM25 and has_answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from odqa.evaluate.answers import answer_tokens, has_answer
from odqa.text import is_unspaced, is_unspaced_char

THAI = "แม่น้ำเจ้าพระยาไหลผ่านใจกลางเมือง"  # the Chao Phraya river flows through the city centre
KHMER = "អង្គរវត្តជាប្រាសាទដ៏ល្បីល្បាញ។"  # Angkor Wat is a famous temple.
JAPANESE = "東京タワーは港区にある。"
MYANMAR = "မြန်မာနိုင်ငံ"
LAO = "ປະເທດລາວ"


@pytest.mark.parametrize("text", [THAI, KHMER, JAPANESE, MYANMAR, LAO, "北京是中国的首都", "ｶﾀｶﾅ", "𠀋𠂉"])
def test_unspaced_scripts(text: str) -> None:
    assert is_unspaced(text)
    assert all(is_unspaced_char(ch) for ch in text if ch.isalpha())


@pytest.mark.parametrize("text", ["Geneva is a city", "서울은 한국의 수도이다", "Москва", "القاهرة", "दिल्ली", ""])
def test_spaced_scripts(text: str) -> None:
    assert not is_unspaced(text)
    assert not any(is_unspaced_char(ch) for ch in text)


def test_a_little_japanese_in_english_text_is_still_spaced() -> None:
    assert not is_unspaced("The Tokyo Tower (東京タワー) is a communications tower in Minato, Tokyo.")


@pytest.mark.parametrize(
    ("text", "answer", "absent"),
    [(THAI, "เจ้าพระยา", "กรุงเทพ"), (KHMER, "អង្គរវត្ត", "ភ្នំពេញ"), (JAPANESE, "港区", "新宿区")],
)
def test_has_answer_matches_a_character_span(text: str, answer: str, absent: str) -> None:
    assert has_answer(text, [answer]) and not has_answer(text, [absent])


def test_has_answer_keeps_thai_marks_with_their_letter() -> None:
    assert answer_tokens("น้ำ") == ["น้", "ำ"]  # the tone mark stays with its consonant; sara am is a letter


def test_no_other_module_defines_the_ranges() -> None:
    root = Path(__file__).parents[1] / "odqa"
    owners = [p.relative_to(root).as_posix() for p in root.rglob("*.py")
              if any(mark in p.read_text(encoding="utf-8").lower() for mark in ("0x3040", "\\u3040", "0x0e00"))]
    assert owners == ["text.py"]
