"""Which characters belong to scripts written without spaces between words: the one definition that chunking
(a character budget), BM25 (character bigrams) and has_answer (one token per character) share.

Han, kana, Thai, Lao, Khmer and Myanmar put no space between words (Thai and Khmer put one between phrases or
sentences at most); Hangul is written with spaces, so it is not included.
"""

from __future__ import annotations

import re

__all__ = ["UNSPACED_RANGES", "is_unspaced", "is_unspaced_char"]

#: Code point ranges (inclusive) of the scripts written without spaces between words.
UNSPACED_RANGES: tuple[tuple[int, int], ...] = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x19E0, 0x19FF),  # Khmer symbols
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9F),  # half-width Katakana
    (0x20000, 0x3134F),  # CJK extensions B-G
)

_UNSPACED = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in UNSPACED_RANGES) + "]")
_SPACES = re.compile(r"\s+")  # the characters str.isspace calls space
_SAMPLE = 2000  # characters looked at to classify a text


def is_unspaced_char(ch: str) -> bool:
    """True for a character of a script written without spaces between words."""
    return _UNSPACED.match(ch) is not None


def is_unspaced(text: str) -> bool:
    """True when more than 30% of the visible characters at the start of ``text`` are of such a script."""
    sample = text[:_SAMPLE]
    visible = len(sample) - sum(map(len, _SPACES.findall(sample)))
    return visible > 0 and len(_UNSPACED.findall(sample)) / visible > 0.3
