"""Cross-encoder reranking: the second stage shared by ``odqa refine`` and ``odqa retrieve``.

``CrossEncoderReranker`` scores (question, title + text) pairs with sentence-transformers' ``CrossEncoder`` and is
a :class:`~odqa.retrieve.protocol.Reranker`. ``rerank_head`` applies any reranker to the first ``top_n`` hits of
each list and keeps the rest, in first-stage order, after them; ``Reranked`` wraps any retriever with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from odqa._optional import require
from odqa.config import RerankConfig
from odqa.embed.presets import passage_text
from odqa.errors import ConfigError, ModelError
from odqa.records import Hit
from odqa.retrieve.fusion import top_k
from odqa.retrieve.protocol import Reranker, Retriever

__all__ = ["CrossEncoderReranker", "Reranked", "rerank_head"]


def _load_cross_encoder(config: RerankConfig) -> Any:
    """The ``CrossEncoder`` for ``config.model``; a model that cannot be loaded is one :class:`ModelError` line."""
    require("torch", "embed")
    require("sentence_transformers", "embed")
    from sentence_transformers import CrossEncoder

    from odqa.embed.encoder import quiet_weight_loading

    name = config.model
    if name is None:
        raise ConfigError("reranking needs a cross-encoder: set rerank model (--rerank MODEL) to a hub id or a path")
    try:
        with quiet_weight_loading():
            model = CrossEncoder(name, device=config.device, max_length=config.max_length)
    except (OSError, ValueError) as exc:
        reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        if Path(name).exists():
            raise ModelError(
                f"cannot load cross-encoder {name!r}: the local folder holds no loadable model ({reason}); pass a "
                "folder saved by CrossEncoder.save_pretrained or a Hugging Face sequence-classification model"
            ) from exc
        raise ModelError(
            f"cannot load cross-encoder {name!r}: it is not a local folder and the Hugging Face hub could not provide "
            f"it ({reason}). A hub id needs hub access: download {name!r} where the hub is reachable and pass its "
            "local directory with --rerank"
        ) from exc
    if config.precision != "fp32":
        import torch

        model = model.to(torch.float16 if config.precision == "fp16" else torch.bfloat16)
    if model.num_labels != 1:
        raise ModelError(f"cross-encoder {name!r} has {model.num_labels} output labels; reranking needs a model with "
                         "one relevance score per pair (num_labels=1), such as the cross-encoder/ms-marco-* models")
    return model


class CrossEncoderReranker:
    """Rescores each question's hits with a cross-encoder and sorts them by that score, best first.

    A hit's new score is the model's raw logit (no sigmoid: it would tie saturated scores); equal scores keep
    their input order. All pairs of a call go to the model together, batched and length-sorted by
    sentence-transformers.
    """

    def __init__(self, config: RerankConfig) -> None:
        self.config = config
        self.model = _load_cross_encoder(config)

    def score(self, queries: Sequence[str], hits: Sequence[Sequence[Hit]]) -> list[np.ndarray]:
        """The cross-encoder's score of every hit, one float64 array per query, in the given order."""
        import torch

        pairs = [(q, passage_text(hit.passage)) for q, row in zip(queries, hits, strict=True) for hit in row]
        if not pairs:
            return [np.zeros(0, dtype=np.float64) for _ in hits]
        scores = self.model.predict(pairs, batch_size=self.config.batch_size, activation_fn=torch.nn.Identity(),
                                    show_progress_bar=False, convert_to_numpy=True)
        flat = np.asarray(scores, dtype=np.float64).reshape(len(pairs))
        return np.split(flat, np.cumsum([len(row) for row in hits])[:-1])

    def rerank(self, queries: Sequence[str], hits: Sequence[Sequence[Hit]], k: int) -> list[list[Hit]]:
        """Each query's hits sorted by cross-encoder score, at most ``k`` of them."""
        if k < 1:
            raise ConfigError(f"k must be >= 1, got {k}")
        result = []
        for row, scores in zip(hits, self.score(queries, hits), strict=True):
            result.append(top_k([hit.passage for hit in row], scores, k))
        return result


def rerank_head(
    reranker: Reranker, queries: Sequence[str], hits: Sequence[Sequence[Hit]], top_n: int, k: int
) -> list[list[Hit]]:
    """Rerank the first ``top_n`` hits of each list, then append the rest in first-stage order; keep ``k``.

    Hits past ``top_n`` keep their first-stage scores, which are on another scale than the reranker's: the list
    is in rank order, not necessarily in score order.
    """
    if top_n < 1 or k < 1:
        raise ConfigError(f"top_n and k must be >= 1, got top_n={top_n}, k={k}")
    head = reranker.rerank(queries, [row[:top_n] for row in hits], min(top_n, k))
    return [(list(ranked) + list(row[top_n:]))[:k] for ranked, row in zip(head, hits, strict=True)]


class Reranked:
    """A retriever whose top ``top_n`` hits go through a reranker: ``Reranked(load_retriever(...), reranker)``."""

    def __init__(self, retriever: Retriever, reranker: Reranker, top_n: int = 100) -> None:
        if top_n < 1:
            raise ConfigError(f"top_n must be >= 1, got {top_n}")
        self.retriever = retriever
        self.reranker = reranker
        self.top_n = top_n

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """The first stage's ``max(k, top_n)`` hits per query, the first ``top_n`` reranked, ``k`` kept."""
        if k < 1:
            raise ConfigError(f"k must be >= 1, got {k}")
        first = self.retriever.search(queries, max(k, self.top_n))
        return rerank_head(self.reranker, queries, first, self.top_n, k)
