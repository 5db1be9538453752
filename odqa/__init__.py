"""odqa: turn a list of questions into the best possible reader input, fast, and measure every step."""

from __future__ import annotations

from odqa._version import __version__
from odqa.chunk import chunk, chunk_document
from odqa.config import ChunkConfig, EmbedConfig, HybridConfig, RefineConfig
from odqa.embed import Encoder
from odqa.errors import (
    ConfigError,
    CrawlError,
    DependencyError,
    FormatError,
    InputError,
    ModelError,
    OdqaError,
    OutputError,
)
from odqa.inputs import load_examples
from odqa.pipeline import RefineSummary, refine_to_file
from odqa.records import Document, Example, Hit, Page, Passage
from odqa.refine import Refined, refine
from odqa.retrieve.protocol import Reranker, Retriever

__all__ = [
    "ChunkConfig",
    "ConfigError",
    "CrawlError",
    "DependencyError",
    "Document",
    "EmbedConfig",
    "Encoder",
    "Example",
    "FormatError",
    "Hit",
    "HybridConfig",
    "InputError",
    "ModelError",
    "OdqaError",
    "OutputError",
    "Page",
    "Passage",
    "RefineConfig",
    "RefineSummary",
    "Refined",
    "Reranker",
    "Retriever",
    "__version__",
    "chunk",
    "chunk_document",
    "load_examples",
    "refine",
    "refine_to_file",
]
