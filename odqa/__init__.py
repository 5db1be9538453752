"""odqa: turn a list of questions into the best possible reader input, fast, and measure every step."""

from __future__ import annotations

__version__ = "0.1.0"

from odqa.chunk import chunk, chunk_document
from odqa.errors import (
    BadIndexError,
    ConfigError,
    CrawlError,
    DependencyError,
    FormatError,
    InputError,
    ModelError,
    OdqaError,
)
from odqa.records import Document, Example, Hit, Page, Passage
from odqa.retrieve.protocol import Reranker, Retriever

__all__ = [
    "BadIndexError",
    "ConfigError",
    "CrawlError",
    "DependencyError",
    "Document",
    "Example",
    "FormatError",
    "Hit",
    "InputError",
    "ModelError",
    "OdqaError",
    "Page",
    "Passage",
    "Reranker",
    "Retriever",
    "__version__",
    "chunk",
    "chunk_document",
]
