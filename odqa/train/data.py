"""Training data for rankers: each question's candidates, the ones holding a gold answer, hard negatives, and
the split by article.

A question's candidates are what refinement ranks for it: its documents cut into passages (``odqa refine``), or,
for a HybridQA question, its table's rows and linked pages whole (``odqa refine --tables``). Positives are the
candidates that hold a gold answer (DPR has_answer, as answer recall counts them). Questions are split by
article (a HybridQA question's table), so no article is on both sides.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from odqa.chunk import chunk
from odqa.config import ChunkConfig
from odqa.errors import ConfigError, NoPositiveError
from odqa.evaluate.answers import has_answer, recall_at_k
from odqa.records import Example, Passage
from odqa.refine import distinct_passages
from odqa.retrieve.bm25 import bm25_scores

__all__ = ["Group", "GroupStats", "article_of", "build_groups", "check_disjoint", "dev_recall", "mine_negatives",
           "split_by_article"]


@dataclass(frozen=True)
class Group:
    """One training question: its candidates, the indices of those holding a gold answer, and its mined hard
    negatives (indices of non-positive candidates, the hardest first)."""

    id: str
    question: str
    article: str
    candidates: tuple[Passage, ...]
    positives: tuple[int, ...]
    negatives: tuple[int, ...] = ()


@dataclass(frozen=True)
class GroupStats:
    """How many questions were read, and why some were left out of training."""

    questions: int
    kept: int
    unanswerable: int  # no gold answer
    no_positive: int  # an answer, but no candidate holds it


def article_of(example: Example) -> str:
    """What the split keeps on one side: a HybridQA question's table, else its first document (article)."""
    table_id = example.meta.get("table_id")
    if isinstance(table_id, str):
        return table_id
    return example.ctxs[0].id if example.ctxs else example.id


def _candidates(example: Example, config: ChunkConfig) -> list[Passage]:
    if isinstance(example.meta.get("table_id"), str):  # table rows and linked pages are ranked whole
        return distinct_passages(Passage(id=d.id, doc_id=article_of(example), title=d.title, text=d.text)
                                 for d in example.ctxs or ())
    return distinct_passages(chunk(example.ctxs or (), config))


def build_groups(examples: Iterable[Example], config: ChunkConfig) -> tuple[list[Group], GroupStats]:
    """The questions that can be learned from (an answer held by at least one candidate), with counts.

    Raises :class:`NoPositiveError` when none can: unanswerable questions, or candidates that never hold the
    answer (the wrong documents, or answers written differently from the text), teach nothing.
    """
    groups, questions, unanswerable, no_positive = [], 0, 0, 0
    for ex in examples:
        questions += 1
        if not ex.answers:
            unanswerable += 1
            continue
        candidates = _candidates(ex, config)
        positives = tuple(i for i, p in enumerate(candidates) if has_answer(p.text, ex.answers))
        if not positives:
            no_positive += 1
            continue
        groups.append(Group(ex.id, ex.question, article_of(ex), tuple(candidates), positives))
    if not groups:
        raise NoPositiveError(
            f"none of the {questions} training questions has a candidate passage holding a gold answer "
            f"({unanswerable} have no answer, {no_positive} have candidates without it): give questions with "
            "answers and their documents (ctxs), or a HybridQA file with --tables")
    return groups, GroupStats(questions, len(groups), unanswerable, no_positive)


def _in_dev(article: str, fraction: float, seed: int) -> bool:
    digest = hashlib.blake2b(f"{seed}\0{article}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64 < fraction


def split_by_article(groups: Sequence[Group], fraction: float, seed: int) -> tuple[list[Group], list[Group]]:
    """``(train, dev)``: each article's questions on one side, drawn by a seeded hash of the article id (about
    ``fraction`` of the articles go to dev; the draw does not depend on the order or number of questions)."""
    dev = [g for g in groups if _in_dev(g.article, fraction, seed)]
    return [g for g in groups if not _in_dev(g.article, fraction, seed)], dev


def check_disjoint(train: Sequence[Group], dev: Sequence[Group]) -> None:
    """Refuse a dev set sharing an article (or table) with the training questions: its recall would flatter."""
    shared = sorted({g.article for g in train} & {g.article for g in dev})
    if shared:
        raise ConfigError(f"{len(shared)} article(s) are both in the training and the dev questions (first: "
                          f"{shared[0]!r}); dev must hold other articles: leave --dev out to split by article")


def mine_negatives(groups: Sequence[Group], dense: Sequence[np.ndarray] | None, mined: int) -> list[Group]:
    """Each group with its hard negatives: the ``mined`` best non-positive candidates under BM25 and under
    ``dense`` (a bi-encoder's similarities, one array per group), interleaved, each candidate once."""
    out = []
    for i, group in enumerate(groups):
        rankings = [bm25_scores(group.question, group.candidates)]
        if dense is not None:
            rankings.append(np.asarray(dense[i], dtype=np.float64))
        positive = set(group.positives)
        tops = [[int(j) for j in np.argsort(-scores, kind="stable") if int(j) not in positive][:mined]
                for scores in rankings]
        pool = list(dict.fromkeys(j for pair in itertools.zip_longest(*tops) for j in pair if j is not None))
        out.append(replace(group, negatives=tuple(pool)))
    return out


def dev_recall(groups: Sequence[Group], scores: Sequence[np.ndarray], ks: Sequence[int]) -> dict[int, float]:
    """Answer recall@k of ``groups`` ranked by ``scores`` (one array per group, higher is better)."""
    flags = []
    for group, row in zip(groups, scores, strict=True):
        positive = set(group.positives)
        flags.append([int(j) in positive for j in np.argsort(-np.asarray(row), kind="stable")])
    return recall_at_k(flags, ks)
