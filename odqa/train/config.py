"""How a retriever or reranker is fine-tuned on a dataset's questions: ``TrainRankerConfig``.

Torch-free, so the command line builds and validates it before the slow imports. One config serves both
commands: ``odqa train-retriever`` reads ``model`` as a bi-encoder (``pooling``/``normalize`` as for ``--model``
everywhere), ``odqa train-reranker`` as the encoder a cross-encoder is initialised from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from odqa.config import ChunkConfig, Pooling
from odqa.errors import ConfigError

__all__ = ["TrainRankerConfig"]


@dataclass(frozen=True)
class TrainRankerConfig:
    """Contrastive training on positives (candidates holding a gold answer) against hard negatives.

    Each step takes ``batch_size`` questions; each brings one positive and ``negatives`` hard negatives drawn
    from its ``mined`` best-ranked non-positive candidates under BM25 and under a bi-encoder (the retriever's own
    initial model; for a reranker the ``miner`` preset or model). A retriever also scores every other question's
    passages of the batch as negatives (in-batch). The dev questions (``dev_fraction`` of the articles or
    tables, never on both sides) are ranked after every epoch, and before the first, and the best is kept.
    """

    model: str = "minilm"  # preset name, local folder or hub id
    pooling: Pooling | None = None  # for a bi-encoder that is not a preset (the retriever, or the reranker's miner)
    normalize: bool | None = None
    miner: str = "minilm"  # the bi-encoder that mines a reranker's negatives
    epochs: int = 2
    batch_size: int = 16
    negatives: int = 3
    mined: int = 8
    lr: float = 3e-5
    weight_decay: float = 0.01
    warmup_steps: int = 10
    max_length: int = 256  # tokens per text (retriever) or per (question, passage) pair (reranker)
    scale: float = 20.0  # the retriever's similarity scale in the softmax (sentence-transformers' MNRL default)
    dev_fraction: float = 0.15
    ks: tuple[int, ...] = (1, 5, 20)
    checkpoint_every: int = 50
    keep_checkpoints: int = 2
    seed: int = 0
    device: str | None = None  # None = cuda when available, else cpu
    chunk: ChunkConfig = field(default_factory=ChunkConfig)

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "negatives", "mined", "max_length", "checkpoint_every",
                     "keep_checkpoints"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("weight_decay", "warmup_steps"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.lr <= 0 or self.scale <= 0:
            raise ConfigError(f"lr and scale must be > 0, got lr={self.lr}, scale={self.scale}")
        if not 0 <= self.dev_fraction < 1:
            raise ConfigError(f"dev_fraction must be in [0, 1), got {self.dev_fraction}")
        if not self.ks or min(self.ks) < 1:
            raise ConfigError(f"ks must be cutoffs >= 1, got {list(self.ks)}")
        if not self.model.strip():
            raise ConfigError("model must be a preset name, a local folder or a hub id, got an empty string")
