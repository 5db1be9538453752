"""Documents to passages: the DPR rule (100 whitespace words, no overlap, title carried separately), and a
character budget for text written without spaces between words (Japanese, Chinese)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from odqa.config import ChunkConfig
from odqa.records import Document, Passage

__all__ = ["chunk", "chunk_document", "is_unspaced"]

# Hiragana, katakana, CJK ideographs (incl. extension A), halfwidth katakana, Hangul is spaced so not included.
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff66-\uff9f]")
_SENTENCE_END = re.compile(r"(?<=[。！？!?])")


def is_unspaced(text: str) -> bool:
    """True when most of ``text`` is in a script written without spaces between words."""
    sample = text[:2000]
    letters = sum(1 for ch in sample if not ch.isspace())
    return letters > 0 and len(_UNSPACED.findall(sample)) / letters > 0.3


def _by_words(text: str, size: int, stride: int) -> Iterator[str]:
    words = text.split()
    for start in range(0, len(words), stride):
        yield " ".join(words[start : start + size])
        if start + size >= len(words):
            break


def _by_chars(text: str, budget: int) -> Iterator[str]:
    """Pack sentences into chunks of at most ``budget`` characters; a longer sentence is cut hard."""
    current = ""
    for sentence in _SENTENCE_END.split(re.sub(r"\s+", " ", text).strip()):
        while len(sentence) > budget:
            if current:
                yield current
                current = ""
            yield sentence[:budget]
            sentence = sentence[budget:]
        if len(current) + len(sentence) > budget and current:
            yield current
            current = ""
        current += sentence
    if current.strip():
        yield current


def chunk_document(doc: Document, config: ChunkConfig | None = None) -> list[Passage]:
    """Split one document; a document that already fits in one passage keeps its id."""
    config = config or ChunkConfig()
    if is_unspaced(doc.text):
        pieces = [p.strip() for p in _by_chars(doc.text, config.chars)]
    else:
        pieces = list(_by_words(doc.text, config.words, config.stride or config.words))
    pieces = [p for p in pieces if p]
    if len(pieces) <= 1:
        return [Passage(id=doc.id, doc_id=doc.id, title=doc.title, text=pieces[0] if pieces else "")] if pieces else []
    return [Passage(id=f"{doc.id}:{i}", doc_id=doc.id, title=doc.title, text=p) for i, p in enumerate(pieces)]


def chunk(docs: Iterable[Document], config: ChunkConfig | None = None) -> Iterator[Passage]:
    """Split documents into passages (see :func:`chunk_document`); empty documents yield nothing."""
    for doc in docs:
        yield from chunk_document(doc, config)
