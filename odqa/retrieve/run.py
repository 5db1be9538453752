"""``odqa retrieve`` as library functions: the top k of a corpus index for each question, as FiD JSON Lines.

:func:`retrieve` ranks examples in blocks through any :class:`~odqa.retrieve.protocol.Retriever` (a reranked one
is :class:`~odqa.retrieve.rerank.Reranked`, which :func:`open_retriever` builds when ``config.rerank`` names a
model); :func:`retrieve_to_file` writes them with the same writer as refine and the resolved config beside them,
marked by an optional ``annotate`` hook (HybridQA: :class:`odqa.datasets.hybridqa.TableAnnotator` says which
table, kind and cells each hit is; retrievers know no dataset, so the caller passes it).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from odqa.config import RerankConfig, write_resolved
from odqa.errors import ConfigError, InputError
from odqa.io import CtxKey
from odqa.pipeline import Progress, recall_ks, write_results
from odqa.records import Example
from odqa.refine import Refined
from odqa.retrieve.fusion import Fusion, check_fusion
from odqa.retrieve.protocol import Retriever

__all__ = ["RetrieveConfig", "RetrieveSummary", "open_retriever", "retrieve", "retrieve_to_file"]


@dataclass(frozen=True)
class RetrieveConfig:
    """Which indexes to search and how: ``k`` passages per question, fused when there are several indexes.

    ``depth`` passages are asked of each index before fusion cuts to ``k``; ``None`` means ``k``. ``weights``
    (one per index, default equal) are for weighted fusion only (refused with RRF). ``rerank.model`` turns on a
    cross-encoder over the first stage's top ``rerank.top_n``.
    """

    indexes: tuple[str, ...] = ()
    k: int = 100
    fusion: Fusion = "rrf"
    weights: tuple[float, ...] = ()
    rrf_k: float = 60.0
    depth: int | None = None
    batch_size: int = 256  # questions searched together
    search_params: str | None = None  # FAISS search-time parameters, e.g. "nprobe=32" or "efSearch=128"
    model: str | None = None  # only to check: must name the model the dense index was built with
    device: str | None = None
    ctx_key: CtxKey = "ctxs"
    rerank: RerankConfig = field(default_factory=RerankConfig)

    def __post_init__(self) -> None:
        object.__setattr__(self, "indexes", tuple(str(path) for path in self.indexes))  # YAML gives lists
        object.__setattr__(self, "weights", tuple(float(w) for w in self.weights))
        if self.k < 1:
            raise ConfigError(f"k must be >= 1, got {self.k}")
        if self.depth is not None and self.depth < self.k:
            raise ConfigError(f"depth must be >= k={self.k}, got {self.depth}")
        if self.batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {self.batch_size}")
        check_fusion(self.fusion, self.weights, len(self.indexes))
        if self.ctx_key not in ("ctxs", "passages"):
            raise ConfigError(f"ctx_key {self.ctx_key!r} is not valid; choose one of: ctxs, passages")


def open_retriever(config: RetrieveConfig) -> Retriever:
    """The retriever ``config`` describes: one index, or several fused; reranked when ``config.rerank`` says."""
    from odqa.retrieve.compose import Fused, index_kind, load_retriever
    from odqa.retrieve.rerank import CrossEncoderReranker, Reranked

    if not config.indexes:
        raise ConfigError("no index to search; pass --index indexes/NAME (repeat it to fuse several)")
    kinds = [index_kind(path) for path in config.indexes]
    dense_options = {"model": config.model, "device": config.device, "search_params": config.search_params}
    # The dense indexes take the dense options; with none among them, load_retriever refuses the options given.
    retrievers = [load_retriever(path, **(dense_options if kind == "dense" or "dense" not in kinds else {}))
                  for path, kind in zip(config.indexes, kinds, strict=True)]
    first: Retriever = retrievers[0] if len(retrievers) == 1 else Fused(
        *retrievers, fusion=config.fusion, weights=config.weights or None, rrf_k=config.rrf_k, depth=config.depth)
    if config.rerank.model is None:
        return first
    return Reranked(first, CrossEncoderReranker(config.rerank), config.rerank.top_n)


def retrieve(
    examples: Iterable[Example],
    retriever: Retriever,
    k: int,
    *,
    batch_size: int = 256,
    progress: Progress | None = None,
) -> Iterator[Refined]:
    """Each example with its top ``k`` hits from ``retriever``, ``batch_size`` questions per search."""
    iterator = iter(examples)
    while block := list(itertools.islice(iterator, batch_size)):
        hits = retriever.search([ex.question for ex in block], k)
        for example, found in zip(block, hits, strict=True):
            yield Refined(example, found[:k])
        if progress is not None:
            progress(len(block))


@dataclass(frozen=True)
class RetrieveSummary:
    """What :func:`retrieve_to_file` did: output, resolved config, counts, answer recall@k, time."""

    output: Path
    config_file: Path
    config: RetrieveConfig
    questions: int
    answerable: int
    recall: dict[int, float]  # answer recall@k for each k in recall_ks(config.k), answerable questions only
    seconds: float


def retrieve_to_file(
    examples: Iterable[Example],
    out: str | Path,
    config: RetrieveConfig,
    retriever: Retriever | None = None,
    *,
    progress: Progress | None = None,
    annotate: Callable[[Refined, dict[str, Any]], None] | None = None,
) -> RetrieveSummary:
    """Retrieve for ``examples`` (with ``retriever``, or the one ``config`` names), write FiD JSON Lines to
    ``out`` (``has_answer`` marked, then ``annotate`` called on each record) and the resolved config beside it
    (``<out>.config.json``)."""
    retriever = retriever if retriever is not None else open_retriever(config)
    started = time.perf_counter()
    count = 0

    def ranked() -> Iterator[Refined]:
        nonlocal count
        for item in retrieve(examples, retriever, config.k, batch_size=config.batch_size, progress=progress):
            count += 1
            yield item
        if not count:
            raise InputError("no questions to retrieve for: the input is empty")

    written = write_results(ranked(), out, ks=recall_ks(config.k), ctx_key=config.ctx_key, annotate=annotate)
    seconds = time.perf_counter() - started
    config_file = write_resolved(config, out)
    return RetrieveSummary(written.output, config_file, config, written.questions, written.answerable,
                           written.recall, seconds)
