"""Documents to passages: the DPR rule (100 whitespace words, no overlap, title carried separately), and a
character budget for text written without spaces between words (Japanese, Chinese, Thai, Khmer, ...: see
:mod:`odqa.text`)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator

from odqa.config import ChunkConfig
from odqa.records import Document, Passage
from odqa.text import is_unspaced

__all__ = ["chunk", "chunk_document"]

# Sentence ends: CJK and Latin marks, Khmer khan and bariyoosan, Myanmar section mark (Thai and Lao use a space).
_SENTENCE_END = re.compile(r"(?<=[。！？!?។៕။])")
_SPACE = re.compile(r"(?<=[ \u200b])")  # after a space or a zero-width space (Khmer, Thai word breaks)


def _by_words(text: str, size: int, stride: int) -> Iterator[str]:
    words = text.split()
    for start in range(0, len(words), stride):
        yield " ".join(words[start : start + size])
        if start + size >= len(words):
            break


def _hard_cuts(text: str, budget: int) -> Iterator[str]:
    """Pieces of at most ``budget`` characters, never cut between a letter and its combining marks."""
    while len(text) > budget:
        cut = budget
        while cut > 1 and unicodedata.category(text[cut]).startswith("M"):
            cut -= 1
        yield text[:cut]
        text = text[cut:]
    yield text


def _units(text: str, budget: int) -> Iterator[str]:
    """Sentences; a sentence over ``budget`` split after its spaces, a piece still over it cut hard."""
    for sentence in _SENTENCE_END.split(text):
        if len(sentence) <= budget:
            yield sentence
            continue
        for piece in _SPACE.split(sentence):
            yield from _hard_cuts(piece, budget)


def _by_chars(text: str, budget: int) -> Iterator[str]:
    """Pack sentences into chunks of at most ``budget`` characters (see :func:`_units` for longer ones)."""
    current = ""
    for unit in _units(re.sub(r"\s+", " ", text).strip(), budget):
        if len(current) + len(unit) > budget and current:
            yield current
            current = ""
        current += unit
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
