"""The options of ``odqa index build``: one small config, built once from flags or YAML."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from odqa.config import ChunkConfig, EmbedConfig
from odqa.errors import ConfigError

__all__ = ["IndexConfig", "IndexKind"]

IndexKind = Literal["dense", "bm25"]


@dataclass(frozen=True)
class IndexConfig:
    """How a passage set becomes an index: dense (FAISS over embeddings) or BM25 (bm25s).

    ``shard_size`` passages are embedded and written at a time (peak memory is one shard, whatever the corpus);
    ``train_size`` vectors, evenly spaced over the corpus, train a FAISS index that needs training (IVF, PQ).
    ``embed.cache_dir`` ``None`` means no embedding cache: an index's shards are its own cache.
    """

    kind: IndexKind = "dense"
    faiss: str = "Flat"
    shard_size: int = 50_000
    train_size: int = 100_000
    embed: EmbedConfig = field(default_factory=EmbedConfig)
    chunk: ChunkConfig = field(default_factory=ChunkConfig)

    def __post_init__(self) -> None:
        if self.kind not in get_args(IndexKind):
            raise ConfigError(f"index kind {self.kind!r} is not valid; choose one of: {', '.join(get_args(IndexKind))}")
        if self.shard_size < 1:
            raise ConfigError(f"shard_size must be >= 1, got {self.shard_size}")
        if self.train_size < 1:
            raise ConfigError(f"train_size must be >= 1, got {self.train_size}")
        if not self.faiss.strip():
            raise ConfigError("faiss factory string is empty; use e.g. 'Flat', 'HNSW32' or 'IVF4096,PQ64'")
