"""Corpus indexes: a self-describing folder (manifest, passage store, vector shards and FAISS index, or bm25s).

Build with :func:`odqa.index.build.build_index` (or ``odqa index build``); search with
:func:`odqa.retrieve.compose.load_retriever`. ``build_index(..., vectors=PATH)`` indexes vectors computed
elsewhere. Importing this package loads neither torch nor FAISS.
"""

from __future__ import annotations

from odqa.index.build import CorpusSize, build_index, corpus_size, open_encoder
from odqa.index.config import IndexConfig
from odqa.index.source import open_passages, read_passages

__all__ = [
    "CorpusSize", "IndexConfig", "build_index", "corpus_size", "open_encoder", "open_passages", "read_passages",
]
