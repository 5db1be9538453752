"""HybridQA refinement (``odqa refine QUESTIONS --tables WikiTables-WithLinks/``): each question's candidates
are its own table's rows and linked pages (:mod:`odqa.datasets.hybridqa`), scored, cut to the top k and written
as FiD JSON Lines. Every ctx says what it is (``kind``: ``row`` or ``passage``), which cells it belongs to
(``cells``: ``[[row, column], ...]``) and its ``table_id``; every record says where its answer lies
(``answer_from``: ``table`` or ``passage``), as :class:`~odqa.datasets.hybridqa.TableAnnotator` marks them,
so ``odqa eval`` splits recall@k as HybridQA splits its evaluation.

Scorers (``RefineConfig.scorer``):

- ``table``: the HYBRIDER-style linker alone (:class:`~odqa.datasets.hybridqa_linking.TableRetriever`);
- ``bm25``, ``dense``, ``hybrid``: refine's scorers over the same candidates (:func:`odqa.refine.score_passages`);
- ``table-hybrid``, the default with ``--tables``: linker, BM25 and dense scores (each min-max rescaled), a
  numeric signal for the rows a comparison or superlative selects and refine's temporal signal, summed with
  :class:`TableHybridWeights`, then passed along the table's links both ways (:func:`fuse_table_signals`).
  The default weights are the best measured on the tuning slice of the shipped HybridQA dev questions (109
  questions; docs/datasets.md): the linker with half its weight of BM25 and the temporal signal, a row lifted
  to its best page's score and a page to 0.95 of its row's. Dense and the extra numeric signal get no weight
  (dense moved recall by at most two of 109 questions, a numeric weight of 0.5 lowered recall@1 and @5: the
  linker already links the cells a comparison or superlative selects). With those weights no model is needed;
  a caller who gives dense a weight passes an encoder.

It sits above :mod:`odqa.datasets` and :mod:`odqa.pipeline`, which must not import each other.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from odqa.config import RefineConfig
from odqa.datasets.hybridqa import TableAnnotator, load_hybridqa, load_table
from odqa.datasets.hybridqa_linking import TableRetriever
from odqa.errors import ConfigError, InputError
from odqa.pipeline import Progress, RefineSummary, write_refined
from odqa.records import Example
from odqa.refine import (
    Refined,
    RefineStats,
    check_encoder,
    needs_encoder,
    rerank_selected,
    score_passages,
    select_hits,
)
from odqa.retrieve.bm25 import bm25_scores
from odqa.retrieve.fusion import minmax
from odqa.retrieve.protocol import Reranker
from odqa.retrieve.temporal import temporal_scores
from odqa.retrieve.tokenize import Tokenizer, tokenize

if TYPE_CHECKING:
    from odqa.embed import Encoder

__all__ = [
    "TableHybridWeights",
    "fuse_table_signals",
    "refine_tables",
    "refine_tables_to_file",
    "table_scores",
    "tables_need_encoder",
]

_RETRIEVERS_KEPT = 64  # tables whose linker indexes stay built (questions of one table usually come together)


@dataclass(frozen=True)
class TableHybridWeights:
    """How ``table-hybrid`` sums its signals, and how far a score travels along the table's links.

    Measured on HybridQA dev questions (``odqa bench hybridqa``, docs/datasets.md); the numeric and temporal
    signals are already in [0, 1] and are added as they are.
    """

    link: float = 1.0
    bm25: float = 0.5
    dense: float = 0.0  # above 0, refine_tables needs an encoder
    numeric: float = 0.0  # rows holding a cell the question's comparison or superlative selects
    temporal: float = 0.2  # refine's closeness of a candidate's years to the question's
    row_from_page: float = 1.0  # a row keeps at least this share of its best linked page's score (Passage -> Table)
    page_from_row: float = 0.95  # a linked page keeps at least this share of its best row's score (Table -> Passage)

    def __post_init__(self) -> None:
        weights = (self.link, self.bm25, self.dense, self.numeric, self.temporal)
        if min(weights) < 0 or not 0 <= self.row_from_page <= 1 or not 0 <= self.page_from_row <= 1:
            raise ConfigError(f"table-hybrid weights must be >= 0 and the shares row_from_page, page_from_row in "
                              f"[0, 1]; got {self}")


def fuse_table_signals(
    link: np.ndarray,
    bm25: np.ndarray,
    dense: np.ndarray,
    numeric: np.ndarray,
    temporal: np.ndarray | None,
    rows_of_links: Sequence[Sequence[int]],
    weights: TableHybridWeights,
) -> np.ndarray:
    """``table-hybrid`` scores of a table's candidates (rows first, then one linked page per ``rows_of_links``
    entry, naming the rows that link to it).

    The weighted sum of the min-max rescaled link, BM25 and dense scores, plus the numeric and temporal signals;
    then a row rises to ``row_from_page`` of its best page, and a page to ``page_from_row`` of its best row, so
    a question matching one page lifts its row, and the row lifts the row's other pages, where a HybridQA answer
    often is.
    """
    base = (weights.link * minmax(link) + weights.bm25 * minmax(bm25) + weights.dense * minmax(dense)
            + weights.numeric * np.asarray(numeric, dtype=np.float64))
    if temporal is not None:
        base = base + weights.temporal * temporal
    n_rows = len(base) - len(rows_of_links)
    rows, pages = base[:n_rows].copy(), base[n_rows:]
    for page, row_ids in zip(pages, rows_of_links, strict=True):
        for r in row_ids:
            rows[r] = max(rows[r], weights.row_from_page * page)
    best_row = np.array([max((rows[r] for r in row_ids), default=0.0) for row_ids in rows_of_links],
                        dtype=np.float64)
    return np.concatenate([rows, np.maximum(pages, weights.page_from_row * best_row)])


def table_scores(
    question: str,
    retriever: TableRetriever,
    config: RefineConfig,
    dense: np.ndarray | None = None,
    tokens: Tokenizer = tokenize,
    weights: TableHybridWeights | None = None,
) -> np.ndarray:
    """Scores of ``retriever.passages`` (one table's rows, then its linked pages) for ``question`` under
    ``config.scorer``; ``dense`` holds the question-candidate similarities for dense, hybrid and table-hybrid."""
    passages = retriever.passages
    if config.scorer == "table":
        return np.asarray(retriever.scores(question), dtype=np.float64)
    if config.scorer != "table-hybrid":
        return score_passages(question, passages, config, dense, tokens)
    weights = weights or TableHybridWeights()
    if dense is None and weights.dense:
        raise ConfigError(f"table-hybrid with dense weight {weights.dense} needs dense similarities; pass them (an "
                          "encoder), or set the dense weight to 0")
    numeric = np.zeros(len(passages), dtype=np.float64)
    numeric[sorted(retriever.numeric_rows(question))] = 1.0
    return fuse_table_signals(
        np.asarray(retriever.scores(question), dtype=np.float64),
        bm25_scores(question, passages, tokens=tokens),
        np.zeros(len(passages)) if dense is None else dense.astype(np.float64),
        numeric,
        temporal_scores(question, [p.text for p in passages]),
        retriever.rows_of_links,
        weights,
    )


def tables_need_encoder(config: RefineConfig, weights: TableHybridWeights | None = None) -> bool:
    """Whether ``config.scorer`` (with ``weights``, for table-hybrid) uses dense similarities, and so an encoder."""
    return needs_encoder(config) or (config.scorer == "table-hybrid" and (weights or TableHybridWeights()).dense > 0)


def refine_tables(
    examples: Iterable[Example],
    tables_dir: str | Path,
    config: RefineConfig,
    encoder: Encoder | None = None,
    stats: RefineStats | None = None,
    progress: Callable[[int], None] | None = None,
    weights: TableHybridWeights | None = None,
    reranker: Reranker | None = None,
) -> Iterator[Refined]:
    """Yield each HybridQA example (from :func:`~odqa.datasets.load_hybridqa`) with its top ``config.k``
    candidates among its table's rows and linked pages. ``encoder`` (built from ``config.embed``) is needed by
    dense and hybrid, and by table-hybrid when ``weights`` give dense a weight; ``reranker`` (with
    ``config.rerank.model``) reranks each question's top ``config.rerank.top_n``, as in :func:`odqa.refine.refine`.
    Candidates are scored whole: rows and page introductions are not chunked."""
    stats = stats if stats is not None else RefineStats()
    if (reranker is None) != (config.rerank.model is None):
        raise ConfigError("a reranker goes with config.rerank.model: pass both or neither")
    keep = max(config.k, config.rerank.top_n) if reranker is not None else config.k
    if config.scorer == "original":
        raise ConfigError("scorer 'original' keeps a given order, which table candidates do not have; choose "
                          "table-hybrid, table, hybrid, bm25 or dense")
    dense = tables_need_encoder(config, weights)
    if dense:
        if encoder is None:
            raise ConfigError(f"scorer {config.scorer!r} needs an encoder: refine_tables(examples, tables_dir, "
                              "config, Encoder(config.embed))")
        check_encoder(config.embed, encoder)

    @functools.lru_cache(maxsize=_RETRIEVERS_KEPT)
    def retriever_of(table_id: str) -> TableRetriever:
        return TableRetriever(load_table(tables_dir, table_id))

    tokens: Tokenizer = functools.lru_cache(maxsize=100_000)(tokenize)
    iterator = iter(examples)
    while block := list(itertools.islice(iterator, config.block_size)):
        retrievers = [retriever_of(_table_id(ex)) for ex in block]
        similarities: list[np.ndarray | None] = [None] * len(block)
        if encoder is not None and dense:
            flat = [p for r in retrievers for p in r.passages]
            vectors = encoder.encode_passages(flat)
            queries = encoder.encode_queries([ex.question for ex in block])
            offset = 0
            for i, r in enumerate(retrievers):
                similarities[i] = vectors[offset : offset + len(r.passages)] @ queries[i]
                offset += len(r.passages)
        selected = [select_hits(ex, retriever.passages, functools.partial(
                        table_scores, ex.question, retriever, config, sims, tokens, weights), stats, config.k, keep)
                    for ex, retriever, sims in zip(block, retrievers, similarities, strict=True)]
        if reranker is not None:
            selected = rerank_selected(reranker, block, selected, config)
        for ex, hits in zip(block, selected, strict=True):
            yield Refined(ex, hits)
        if progress is not None:
            progress(len(block))


def _table_id(example: Example) -> str:
    table_id = example.meta.get("table_id")
    if not isinstance(table_id, str):
        raise InputError(f"question {example.id!r} names no table (meta 'table_id'); read HybridQA questions with "
                         "odqa.datasets.load_hybridqa(questions, tables_dir)")
    return table_id


def refine_tables_to_file(
    questions: str | Path,
    tables_dir: str | Path,
    out: str | Path,
    config: RefineConfig | None = None,
    encoder: Encoder | None = None,
    *,
    progress: Progress | None = None,
    weights: TableHybridWeights | None = None,
    reranker: Reranker | None = None,
) -> RefineSummary:
    """Refine a HybridQA questions file over its tables (``tables_dir``: WikiTables-WithLinks, with
    ``tables_tok/`` and ``request_tok/``) and write FiD JSON Lines to ``out``, the resolved config beside it.

    ``config`` defaults to ``RefineConfig(scorer="table-hybrid")``, the measured best; its chunk settings are
    unused. Recall in the summary covers the questions that have an answer.
    """
    first = next(iter(load_hybridqa(questions, tables_dir)), None)  # a bad file or table fails before any work
    if first is None:
        raise InputError(f"{questions} holds no questions; expected HybridQA records {{question_id, question, "
                         "table_id[, answer-text]}")

    def refined(config: RefineConfig, stats: RefineStats) -> Iterator[Refined]:
        examples = load_hybridqa(questions, tables_dir)
        yield from refine_tables(examples, tables_dir, config, encoder, stats, progress, weights, reranker)

    return write_refined(refined, out, config or RefineConfig(scorer="table-hybrid"), encoder,
                         annotate=TableAnnotator(tables_dir))
