"""Lexical tokenisation for BM25: lowercased, Snowball-stemmed English word tokens without stopwords; character
bigrams for text written without spaces between words (Japanese, Chinese, Thai, Khmer, ...: see
:mod:`odqa.text`), so no dictionary is needed."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from itertools import pairwise
from typing import Any

from odqa.text import is_unspaced

__all__ = ["STOPWORDS", "Tokenizer", "tokenize"]

Tokenizer = Callable[[str], Sequence[str]]

_WORD = re.compile(r"\w+", re.UNICODE)
_SEGMENT = re.compile(r"[^\s\u200b]+")  # bigrams stay within what spaces and zero-width spaces separate

# A short list of English function words; kept small so content words like "first" or "after" still count.
# odqa's one English stopword list: other modules import it rather than keep their own.
STOPWORDS = frozenset(
    {
        "a", "an", "the", "and", "or", "but", "if", "of", "at", "by", "for", "with", "about", "against",
        "between", "into", "through", "during", "to", "from", "in", "on", "off", "over", "under", "again",
        "further", "then", "once", "here", "there", "when", "where", "why", "how", "all", "any", "both", "each",
        "few", "more", "most", "other", "some", "such", "no", "nor", "not", "only", "own", "same", "so", "than",
        "too", "very", "s", "t", "can", "will", "just", "don", "should", "now", "is", "are", "was", "were",
        "be", "been", "being", "have", "has", "had", "having", "do", "does", "did", "doing", "i", "me", "my",
        "we", "our", "you", "your", "he", "him", "his", "she", "her", "it", "its", "they", "them", "their",
        "what", "which", "who", "whom", "whose", "this", "that", "these", "those", "am", "as", "until", "while",
    }
)


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer  # PyStemmer: Snowball stemmers in C, the same that bm25s uses

    return Stemmer.Stemmer("english", 0)  # no cache: PyStemmer's own made stemming 4.5x slower on varied text


def tokenize(text: str) -> tuple[str, ...]:
    """Tokens for BM25: stemmed words (minus stopwords) or, for unspaced scripts, character bigrams."""
    if is_unspaced(text):
        segments = _SEGMENT.findall(text.lower())
        return tuple(token for s in segments for token in ([a + b for a, b in pairwise(s)] or [s]))
    words = [t for t in _WORD.findall(text.lower()) if t not in STOPWORDS]
    return tuple(_stemmer().stemWords(words))
