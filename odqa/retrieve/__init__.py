"""Retrievers and rerankers over passages; fusion is a pure function over hit lists."""

from __future__ import annotations

from odqa.retrieve.protocol import Reranker, Retriever

__all__ = ["Reranker", "Retriever"]
