"""The retrieval interfaces a training script imports: stdlib and records only (no torch, no FAISS).

A retriever is anything with ``search(queries, k) -> list[list[Hit]]``: one list per query, best first, at
most ``k`` hits each. A reranker reorders given hits. A ten-line fake satisfies either.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from odqa.records import Hit

__all__ = ["Reranker", "Retriever"]


@runtime_checkable
class Retriever(Protocol):
    """Batch-first retrieval: ``search(queries, k)`` returns ``len(queries)`` lists of at most ``k`` hits."""

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]: ...


@runtime_checkable
class Reranker(Protocol):
    """Reorders (and may rescore) the hits of each query; returns at most ``k`` per query."""

    def rerank(self, queries: Sequence[str], hits: Sequence[Sequence[Hit]], k: int) -> list[list[Hit]]: ...
