"""odqa: turn a list of questions into the best possible reader input, fast, and measure every step."""

from __future__ import annotations

from odqa._version import __version__
from odqa.chunk import chunk, chunk_document
from odqa.config import ChunkConfig, EmbedConfig, HybridConfig, RefineConfig, RerankConfig
from odqa.embed import Encoder
from odqa.errors import (
    ConfigError,
    CrawlError,
    DependencyError,
    FormatError,
    IndexFormatError,
    IndexMismatchError,
    InputError,
    ModelError,
    OdqaError,
    OutputError,
    ResourceError,
)
from odqa.index.build import build_index
from odqa.index.config import IndexConfig
from odqa.inputs import load_examples
from odqa.pipeline import RefineSummary, refine_to_file
from odqa.records import Document, Example, Hit, Page, Passage
from odqa.refine import Refined, refine
from odqa.retrieve.compose import Fused, StaticRetriever, load_retriever
from odqa.retrieve.protocol import Reranker, Retriever
from odqa.retrieve.rerank import CrossEncoderReranker, Reranked
from odqa.retrieve.run import RetrieveConfig, RetrieveSummary, retrieve_to_file

__all__ = [
    "ChunkConfig",
    "ConfigError",
    "CrawlError",
    "CrossEncoderReranker",
    "DependencyError",
    "Document",
    "EmbedConfig",
    "Encoder",
    "Example",
    "FormatError",
    "Fused",
    "Hit",
    "HybridConfig",
    "IndexConfig",
    "IndexFormatError",
    "IndexMismatchError",
    "InputError",
    "ModelError",
    "OdqaError",
    "OutputError",
    "Page",
    "Passage",
    "RefineConfig",
    "RefineSummary",
    "Refined",
    "RerankConfig",
    "Reranked",
    "Reranker",
    "ResourceError",
    "RetrieveConfig",
    "RetrieveSummary",
    "Retriever",
    "StaticRetriever",
    "__version__",
    "build_index",
    "chunk",
    "chunk_document",
    "load_examples",
    "load_retriever",
    "refine",
    "refine_to_file",
    "retrieve_to_file",
]
