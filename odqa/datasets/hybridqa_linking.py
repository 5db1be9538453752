"""Table-aware retrieval over one HybridQA table and its linked passages (paper 003, section 4, "Linking").
It lives beside the HybridQA loader, whose ``Table`` it reads: retrievers in ``odqa.retrieve`` know no dataset.

Linking finds the cells a question points at, from two sources:

- cell matching: the cell's value is mentioned in the question (``exact``), is greater/less than a number the
  question compares with ("more than 300,000", "after 2000": ``greater``/``less``), or is the maximum or
  minimum of its column when the question uses a superlative ("highest", "earliest": ``argmax``/``argmin``);
  a column whose header the question names is preferred;
- passage retrieval, the paper's ensemble of two retrievers over the sentences of every linked passage: TF-IDF
  over word 2-3 grams (stopwords dropped) with cosine similarity, and the longest common substring as a share of
  the question (``1 - distance`` in the released ``preprocessing.py``). Each retriever keeps the passages whose
  best sentence is within distance ``tau`` (similarity ``>= 1 - tau``), or, when none is, its single best
  passage; a retrieved passage links the cells that carry it, scored by its similarity.

Ranking: a row scores its best linked cell (passage links weighted by ``passage_weight``), plus a small share
of its own TF-IDF similarity; a linked passage scores the best of its own similarity (the better retriever's,
times ``passage_weight``) and a hop from its best row (the row's score times ``hop + (1 - hop) * similarity``,
never above the row). So the passages of a matched row follow it (Table -> Passage), and the rows of a matched
passage rise with it (Passage -> Table).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

from odqa.datasets.hybridqa import Table, table_passages
from odqa.dates import parse_date
from odqa.errors import ConfigError
from odqa.records import Hit

__all__ = ["CellLink", "TableRetriever"]

Source = Literal["exact", "greater", "less", "argmax", "argmin", "passage"]

_WORD = re.compile(r"\w+")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
_STOPWORDS = frozenset(_WORD.findall(
    "a an the and or of at by for with to from in on is are was were be been what which who whom whose when "
    "where how that this these those it its as than did does do has have had his her their he she they"
))
_GREATER = r"more than|greater than|larger than|higher than|bigger than|over|above|exceeding|at least|after"
_LESS = r"less than|fewer than|smaller than|lower than|under|below|at most|before"
_COMPARISON = re.compile(rf"\b(?:(?P<gt>{_GREATER})|(?P<lt>{_LESS}))\s+(?P<number>\d+(?:\.\d+)?)")
_NUMERIC_MAX = frozenset({"highest", "largest", "biggest", "greatest", "most", "maximum", "top"})
_NUMERIC_MIN = frozenset({"lowest", "smallest", "least", "fewest", "minimum"})
_DATE_MIN = frozenset({"earliest", "first", "oldest"})
_DATE_MAX = frozenset({"latest", "last", "newest", "recent"})

_SCORES: dict[Source, float] = {"exact": 1.0, "greater": 0.9, "less": 0.9, "argmax": 0.9, "argmin": 0.9}
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
#: Similarities at or below this never link (the released code ignores distances of 0.95 and more).
_FLOOR = 0.05


@dataclass(frozen=True, slots=True)
class CellLink:
    """A cell the question links to, why (``source``), and how strongly (``score`` in [0, 1])."""

    row: int
    column: int
    source: Source
    score: float


def _tokens(text: str) -> list[str]:
    """Lowercased word tokens; thousands separators dropped so '550,000' reads as one number."""
    return _WORD.findall(_THOUSANDS.sub("", text.lower()))


def _number(text: str) -> float | None:
    cleaned = _THOUSANDS.sub("", text).replace(" ", "")
    return float(cleaned) if _NUMBER.fullmatch(cleaned) else None


def _date(text: str) -> int | None:
    try:
        return parse_date(text).filled().toordinal()
    except ValueError:
        return None


class _TfIdf:
    """Cosine similarity over sublinear TF-IDF vectors of word n-grams (``sizes``), stopwords dropped first."""

    def __init__(self, texts: Sequence[str], sizes: tuple[int, ...]) -> None:
        self._sizes = sizes
        grams = [self._grams(t) for t in texts]
        df = Counter(g for doc in grams for g in set(doc))
        self._idf = {g: math.log((1 + len(texts)) / (1 + n)) + 1.0 for g, n in df.items()}
        self._vectors = [self._vector(doc) for doc in grams]

    def _grams(self, text: str) -> Counter[str]:
        words = [w for w in _tokens(text) if w not in _STOPWORDS]
        return Counter(" ".join(words[i:i + n]) for n in self._sizes for i in range(len(words) - n + 1))

    def _vector(self, grams: Counter[str]) -> dict[str, float]:
        weights = {g: (1 + math.log(n)) * self._idf[g] for g, n in grams.items() if g in self._idf}
        norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
        return {g: w / norm for g, w in weights.items()}

    def similarities(self, text: str) -> list[float]:
        query = self._vector(self._grams(text))
        return [sum(w * doc.get(g, 0.0) for g, w in query.items()) for doc in self._vectors]


def _longest_common(question: str, sentence: str) -> int:
    """Length of the longest common substring (characters) of two lowercased strings."""
    matcher = SequenceMatcher(None, question, sentence, autojunk=False)
    return matcher.find_longest_match(0, len(question), 0, len(sentence)).size


def _retrieved(similarities: Sequence[float], tau: float) -> list[int]:
    """Passages within distance ``tau``, else the single best one (at least ``_FLOOR`` similar, if any)."""
    within = [i for i, sim in enumerate(similarities) if sim > _FLOOR and 1.0 - sim <= tau]
    if within or not similarities:
        return within
    best = max(range(len(similarities)), key=similarities.__getitem__)
    return [best] if similarities[best] > _FLOOR else []


class TableRetriever:
    """Ranks one table's row passages and linked passages for each question, best first (a Retriever)."""

    def __init__(self, table: Table, *, hop: float = 0.9, passage_weight: float = 0.8, tau: float = 0.7) -> None:
        if not all(0.0 <= value <= 1.0 for value in (hop, passage_weight, tau)):
            raise ConfigError(f"hop, passage_weight and tau must lie in [0, 1], got {hop}, {passage_weight} and "
                              f"{tau}")
        self.table = table
        self._hop = hop
        self._passage_weight = passage_weight
        self._tau = tau
        self.passages = table_passages(table)  # the candidates, in the order of scores(): rows, then linked pages
        self._row_count = len(table.rows)
        self._cells_of = table.cells_linking()
        self._links = list(self._cells_of)
        self._rows_of = [sorted({r for r, _ in self._cells_of[link]}) for link in self._links]
        sentences = [(i, sentence) for i, link in enumerate(self._links)
                     for sentence in _SENTENCE.split(table.passages[link]) if sentence.strip()]
        self._sentence_owner = [i for i, _ in sentences]
        self._sentences = [sentence.lower() for _, sentence in sentences]
        self._sentence_tfidf = _TfIdf([sentence for _, sentence in sentences], sizes=(2, 3))
        self._row_tfidf = _TfIdf([p.text for p in self.passages[: self._row_count]], sizes=(1, 2))
        self._cell_tokens = [[_tokens(cell.text) for cell in row] for row in table.rows]
        columns = list(zip(*table.rows, strict=True)) if table.rows else []
        self._numbers = [self._typed([_number(c.text) for c in col]) for col in columns]
        self._dates = [self._typed([_date(c.text) for c in col]) for col in columns]
        self._header_tokens = [set(_tokens(h)) - _STOPWORDS for h in table.header]

    @staticmethod
    def _typed(values: list[float | None] | list[int | None]) -> list[float | None] | None:
        """The column's values if at least half of its non-empty cells parse, else None."""
        parsed = sum(v is not None for v in values)
        if not values or parsed * 2 < len(values):
            return None
        return [None if v is None else float(v) for v in values]

    def link(self, question: str) -> list[CellLink]:
        """The linking stage: every linked cell with its strongest source, best first."""
        return self._link(question, self._passage_scores(question))

    def _link(self, question: str, passage_scores: tuple[list[float], list[float]]) -> list[CellLink]:
        best: dict[tuple[int, int], CellLink] = {}
        for found in (*self._exact(question), *self._compared(question), *self._superlative(question),
                      *self._via_passages(passage_scores)):
            key = (found.row, found.column)
            if key not in best or found.score > best[key].score:
                best[key] = found
        return sorted(best.values(), key=lambda c: (-c.score, c.row, c.column))

    def _exact(self, question: str) -> Iterable[CellLink]:
        words = _tokens(question)
        text = f" {' '.join(words)} "
        for r, row in enumerate(self._cell_tokens):
            for c, tokens in enumerate(row):
                if tokens and not set(tokens) <= _STOPWORDS and f" {' '.join(tokens)} " in text:
                    yield CellLink(r, c, "exact", _SCORES["exact"])

    def _columns(self, question: str, typed: list[list[float | None] | None]) -> list[int]:
        """Columns of the wanted type, those named in the question if any are."""
        words = set(_tokens(question))
        candidates = [c for c, values in enumerate(typed) if values is not None]
        named = [c for c in candidates if self._header_tokens[c] & words]
        return named or candidates

    def _compared(self, question: str) -> Iterable[CellLink]:
        for match in _COMPARISON.finditer(_THOUSANDS.sub("", question.lower())):
            bound = float(match.group("number"))
            source: Source = "greater" if match.group("gt") else "less"
            for c in self._columns(question, self._numbers):
                for r, value in enumerate(self._numbers[c] or []):
                    if value is not None and (value > bound if source == "greater" else value < bound):
                        yield CellLink(r, c, source, _SCORES[source])

    def _superlative(self, question: str) -> Iterable[CellLink]:
        words = set(_tokens(question))
        triggers: tuple[tuple[frozenset[str], list[list[float | None] | None], Source], ...] = (
            (_NUMERIC_MAX, self._numbers, "argmax"), (_NUMERIC_MIN, self._numbers, "argmin"),
            (_DATE_MAX, self._dates, "argmax"), (_DATE_MIN, self._dates, "argmin"),
        )
        for trigger, typed, source in triggers:
            if not words & trigger:
                continue
            for c in self._columns(question, typed):
                values = [(v, r) for r, v in enumerate(typed[c] or []) if v is not None]
                target = (max if source == "argmax" else min)(v for v, _ in values)
                for value, r in values:
                    if value == target:
                        yield CellLink(r, c, source, _SCORES[source])

    def _via_passages(self, passage_scores: tuple[list[float], list[float]]) -> Iterable[CellLink]:
        for similarities in passage_scores:
            for i in _retrieved(similarities, self._tau):
                for r, c in self._cells_of[self._links[i]]:
                    yield CellLink(r, c, "passage", self._passage_weight * similarities[i])

    def _passage_scores(self, question: str) -> tuple[list[float], list[float]]:
        """Per linked passage, its best sentence's similarity under each retriever: (TF-IDF, longest substring)."""
        tfidf, substring = [0.0] * len(self._links), [0.0] * len(self._links)
        query = question.lower()
        sims = self._sentence_tfidf.similarities(question)
        for owner, sim, sentence in zip(self._sentence_owner, sims, self._sentences, strict=True):
            tfidf[owner] = max(tfidf[owner], sim)
            substring[owner] = max(substring[owner], _longest_common(query, sentence) / max(len(query), 1))
        return tfidf, substring

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """For each query, at most ``k`` of the table's passages (rows, then linked pages), best first."""
        if k < 1:
            raise ConfigError(f"k must be >= 1, got {k}")
        return [self._rank(query)[:k] for query in queries]

    @property
    def rows_of_links(self) -> list[list[int]]:
        """For each linked page (in candidate order, after the rows), the rows whose cells link to it."""
        return self._rows_of

    def numeric_rows(self, question: str) -> set[int]:
        """Rows holding a cell that a comparison ("more than 300,000") or superlative ("highest", "earliest")
        in the question selects; empty when the question has neither."""
        return {c.row for c in (*self._compared(question), *self._superlative(question))}

    def scores(self, question: str) -> list[float]:
        """The linker's score of every candidate, in :attr:`passages` order (rows, then linked pages)."""
        passage_scores = self._passage_scores(question)
        rows = [0.0] * self._row_count
        for cell in self._link(question, passage_scores):
            rows[cell.row] = max(rows[cell.row], cell.score)
        row_sims = self._row_tfidf.similarities(question)
        row_scores = [score + 0.05 * sim for score, sim in zip(rows, row_sims, strict=True)]
        own_scores = [max(pair) for pair in zip(*passage_scores, strict=True)]
        link_scores = [
            max(self._passage_weight * own,
                max(row_scores[r] for r in row_ids) * (self._hop + (1 - self._hop) * own))
            for row_ids, own in zip(self._rows_of, own_scores, strict=True)
        ]
        return [*row_scores, *link_scores]

    def _rank(self, question: str) -> list[Hit]:
        scored = list(zip(self.passages, self.scores(question), strict=True))
        order = sorted(range(len(scored)), key=lambda i: -scored[i][1])
        return [Hit(scored[i][0], scored[i][1]) for i in order]
