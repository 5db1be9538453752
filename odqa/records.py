"""Typed records passed between pipeline stages.

Each stage is a function over an iterator of these frozen records; JSON Lines on disk (see :mod:`odqa.io`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Document", "Example", "Hit", "Page", "Passage"]


@dataclass(frozen=True, slots=True)
class Page:
    """One fetched web page, successful or not; failures keep their reason as data."""

    url: str
    status: str  # "ok" or "error"
    http_status: int | None = None
    content_type: str | None = None
    html: str | None = None
    error: str | None = None
    final_url: str | None = None


@dataclass(frozen=True, slots=True)
class Document:
    """A whole article: the unit that is chunked into passages."""

    id: str
    title: str
    text: str
    url: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Passage:
    """A retrievable unit (100 words by default); the title is carried separately, not counted."""

    id: str
    doc_id: str
    title: str
    text: str


@dataclass(frozen=True, slots=True)
class Hit:
    """A passage with the score a scorer gave it for one question."""

    passage: Passage
    score: float


@dataclass(frozen=True, slots=True)
class Example:
    """One question with its gold answers and, optionally, its candidate documents or passages."""

    id: str
    question: str
    answers: tuple[str, ...] = ()
    subject: str | None = None
    ctxs: tuple[Document, ...] | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
