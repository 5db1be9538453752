"""Context refinement (Complex-TR section 3.2): chunk each question's candidate documents into passages, score
every passage against its question, keep the top k.

Questions are processed in blocks: the passages of a block are embedded in one call (each distinct text once,
and through the persistent cache), then each question is scored on its own candidates only.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from odqa.chunk import chunk
from odqa.config import TABLE_SCORERS, EmbedConfig, RefineConfig
from odqa.errors import ConfigError
from odqa.evaluate.answers import has_answer
from odqa.io import CtxKey, example_to_fid
from odqa.records import Example, Hit, Passage
from odqa.retrieve.bm25 import bm25_scores
from odqa.retrieve.fusion import reciprocal_rank_fusion, top_k, weighted_fusion
from odqa.retrieve.protocol import Reranker
from odqa.retrieve.rerank import rerank_head
from odqa.retrieve.temporal import temporal_scores
from odqa.retrieve.tokenize import Tokenizer, tokenize

if TYPE_CHECKING:
    from odqa.embed import Encoder

__all__ = [
    "RefineStats",
    "Refined",
    "check_encoder",
    "distinct_passages",
    "fid_record",
    "needs_encoder",
    "refine",
    "rerank_selected",
    "score_passages",
    "select_hits",
]


@dataclass(frozen=True)
class Refined:
    """One question with its top-k passages, best first."""

    example: Example
    hits: list[Hit]


def fid_record(item: Refined, ctx_key: CtxKey = "ctxs") -> dict[str, Any]:
    """The FiD JSON record of a refined question, each passage marked with ``has_answer``."""
    marks = [has_answer(hit.passage.text, item.example.answers) for hit in item.hits]
    return example_to_fid(item.example, item.hits, has_answer=marks, ctx_key=ctx_key)


@dataclass
class RefineStats:
    """Counters for the end-of-run summary, and the warnings worth showing."""

    questions: int = 0
    passages: int = 0
    duplicates: int = 0  # candidate passages dropped because an earlier candidate of the question had their text
    no_candidates: int = 0
    fewer_than_k: int = 0
    empty_question: int = 0
    warnings: list[str] = field(default_factory=list)

    def warn(self, message: str) -> None:
        self.warnings.append(message)


def score_passages(
    question: str,
    passages: Sequence[Passage],
    config: RefineConfig,
    dense: np.ndarray | None = None,
    tokens: Tokenizer = tokenize,
) -> np.ndarray:
    """Scores of ``passages`` for ``question`` under ``config.scorer`` (higher is better).

    ``dense`` holds the question-passage similarities when the scorer needs them (dense, hybrid); ``tokens`` is
    the BM25 tokenizer (``refine`` passes a cached one, as questions share passages).
    """
    _refuse_table_scorer(config)
    if config.scorer == "original":
        return -np.arange(len(passages), dtype=np.float64)
    if config.scorer == "bm25":
        return bm25_scores(question, passages, tokens=tokens)
    if dense is None:
        raise ConfigError(f"scorer {config.scorer!r} needs dense similarities; pass them, or use scorer 'bm25'")
    if config.scorer == "dense":
        return dense.astype(np.float64)
    weights = config.hybrid
    arrays = [bm25_scores(question, passages, tokens=tokens), dense.astype(np.float64)]
    if weights.fusion == "rrf":
        return reciprocal_rank_fusion(arrays, weights.rrf_k)
    coefficients = [weights.bm25_weight, weights.dense_weight]
    if weights.temporal_weight:
        temporal = temporal_scores(question, [p.text for p in passages])
        if temporal is not None:
            # Already in [0, 1] and comparable across passages: added as is, not min-max rescaled.
            return weighted_fusion(arrays, coefficients) + weights.temporal_weight * temporal
    return weighted_fusion(arrays, coefficients)


def _refuse_table_scorer(config: RefineConfig) -> None:
    if config.scorer in TABLE_SCORERS:
        raise ConfigError(f"scorer {config.scorer!r} ranks the rows and linked passages of HybridQA tables: give the "
                          "tables (`odqa refine QUESTIONS --tables WikiTables-WithLinks/`, odqa.tables."
                          "refine_tables_to_file), or choose bm25, dense or hybrid")


def needs_encoder(config: RefineConfig) -> bool:
    """Whether ``config.scorer`` uses dense similarities (and so an :class:`~odqa.embed.Encoder`)."""
    return config.scorer in ("dense", "hybrid")


def distinct_passages(passages: Iterable[Passage]) -> list[Passage]:
    """``passages`` without repeated texts, each text kept at its first (best-ranked) source.

    The same article reached twice (two URLs, a mirror, a dataset listing it twice) would otherwise fill the
    top k with every passage twice.
    """
    seen: set[str] = set()
    kept = []
    for passage in passages:
        if passage.text not in seen:
            seen.add(passage.text)
            kept.append(passage)
    return kept


def check_encoder(config: EmbedConfig, encoder: Encoder) -> None:
    """Refuse an encoder that makes other vectors than ``config`` describes, since the config is what gets
    written next to the output (``auto`` precision and backend accept what the encoder resolved them to)."""
    from odqa.embed import VectorSpec, resolve_model

    built = encoder.spec
    wanted = VectorSpec.of(resolve_model(config),
                           built.precision if config.precision == "auto" else config.precision,
                           built.backend if config.backend == "auto" else config.backend, built.model_digest)
    differ = [f"{name} {getattr(built, name)!r} (encoder) vs {getattr(wanted, name)!r} (config)"
              for name in built.differing(wanted)]
    if differ:
        raise ConfigError(f"the encoder does not match the refine config's embed settings: {'; '.join(differ)}; "
                          "build it from the same settings: Encoder(config.embed)")


def refine(
    examples: Iterable[Example],
    config: RefineConfig | None = None,
    encoder: Encoder | None = None,
    stats: RefineStats | None = None,
    progress: Callable[[int], None] | None = None,
    reranker: Reranker | None = None,
) -> Iterator[Refined]:
    """Yield each example with its top ``config.k`` passages. ``encoder`` is required for dense/hybrid and must
    be built from ``config.embed``; ``reranker`` is required when ``config.rerank.model`` is set
    (``CrossEncoderReranker(config.rerank)``) and reranks each question's top ``config.rerank.top_n``.

    A question's candidates never hold the same passage text twice (see :func:`distinct_passages`). Examples
    without candidates, or with an empty question, are kept (empty ctxs / original order) and counted.
    """
    config = config or RefineConfig()
    stats = stats if stats is not None else RefineStats()
    _refuse_table_scorer(config)
    if needs_encoder(config):
        if encoder is None:
            raise ConfigError(
                f"scorer {config.scorer!r} needs an encoder: refine(examples, config, Encoder(config.embed))")
        check_encoder(config.embed, encoder)
    if (reranker is None) != (config.rerank.model is None):
        raise ConfigError("a reranker goes with config.rerank.model, which the resolved config records: pass "
                          "reranker=CrossEncoderReranker(config.rerank) and set rerank.model, or neither")
    keep = max(config.k, config.rerank.top_n) if reranker is not None else config.k
    tokens: Tokenizer = functools.lru_cache(maxsize=100_000)(tokenize)  # lives as long as this run
    iterator = iter(examples)
    while block := list(itertools.islice(iterator, config.block_size)):
        chunked = [list(chunk(ex.ctxs or (), config.chunk)) for ex in block]
        candidates = [distinct_passages(ps) for ps in chunked]
        stats.duplicates += sum(len(ps) for ps in chunked) - sum(len(ps) for ps in candidates)
        similarities: list[np.ndarray | None] = [None] * len(block)
        if encoder is not None and needs_encoder(config):
            flat = [p for ps in candidates for p in ps]
            vectors = encoder.encode_passages(flat)
            queries = encoder.encode_queries([ex.question for ex in block])
            offset = 0
            for i, ps in enumerate(candidates):
                similarities[i] = vectors[offset : offset + len(ps)] @ queries[i]
                offset += len(ps)
        selected = [select_hits(ex, ps, functools.partial(score_passages, ex.question, ps, config, sims, tokens),
                                stats, config.k, keep)
                    for ex, ps, sims in zip(block, candidates, similarities, strict=True)]
        if reranker is not None:
            selected = rerank_selected(reranker, block, selected, config)
        for ex, hits in zip(block, selected, strict=True):
            yield Refined(ex, hits)
        if progress is not None:
            progress(len(block))


def select_hits(
    ex: Example,
    passages: Sequence[Passage],
    score: Callable[[], np.ndarray],
    stats: RefineStats,
    k: int,
    keep: int | None = None,
) -> list[Hit]:
    """The ``keep`` (default ``k``) best of one question's passages by ``score()``, counted in ``stats``.

    Shared by every per-question scorer: no passages gives empty ctxs, an empty question keeps the input order.
    """
    keep = k if keep is None else keep
    stats.questions += 1
    stats.passages += len(passages)
    if not passages:
        stats.no_candidates += 1
        stats.warn(f"question {ex.id!r} has no candidate passages; written with empty ctxs")
        return []
    if len(passages) < k:
        stats.fewer_than_k += 1
    if not ex.question.strip():
        stats.empty_question += 1
        stats.warn(f"question {ex.id!r} is empty; its passages are kept in their original order, score 0")
        return [Hit(p, 0.0) for p in passages[:keep]]
    return top_k(passages, score(), keep)


def rerank_selected(reranker: Reranker, block: Sequence[Example], selected: list[list[Hit]], config: RefineConfig
                    ) -> list[list[Hit]]:
    """Each question's top ``rerank.top_n`` reranked (see :func:`rerank_head`); empty questions keep their order."""
    todo = [i for i, (ex, hits) in enumerate(zip(block, selected, strict=True)) if ex.question.strip() and hits]
    ranked = rerank_head(reranker, [block[i].question for i in todo], [selected[i] for i in todo],
                         config.rerank.top_n, config.k)
    out = [hits[: config.k] for hits in selected]
    for i, hits in zip(todo, ranked, strict=True):
        out[i] = hits
    return out
