"""What the Fusion-in-Decoder reader runs with: ``ReadConfig`` (inference) and ``TrainReaderConfig`` (training).

Torch-free, so the command line can build and validate a config before the slow imports. The input format and
the answer connector are ``odqa.read.data.ReaderFormat``'s; ``ReadConfig.reader_format()`` builds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, get_args

from odqa.config import Precision
from odqa.errors import ConfigError

if TYPE_CHECKING:
    from odqa.read.data import ReaderFormat

__all__ = ["ReadConfig", "Schedule", "TrainReaderConfig"]

Schedule = Literal["linear", "constant"]
PASSAGE_FORMAT = "question: {question} title: {title} context: {text}"


@dataclass(frozen=True)
class ReadConfig:
    """A reader model and how it reads: ``n_context`` passages of at most ``max_length`` tokens per question.

    ``answer_joiner`` joins several gold answers into one target (Complex-TR's " and ") and splits a generated
    answer back into a list; ``None`` trains on the first answer and never splits (alias answers: NQ, TriviaQA).
    ``precision`` bf16/fp16 runs the model under autocast (bf16 also on CPUs with AMX; fp16 only on GPUs).
    """

    model: str | None = None  # hub id or local folder of a T5-family (encoder-decoder) checkpoint
    n_context: int = 100  # passages per question (Complex-TR: 100)
    max_length: int = 200  # tokens per question + passage text (Complex-TR: 200)
    answer_max_length: int = 32  # tokens generated (and per training target)
    passage_format: str = PASSAGE_FORMAT
    answer_joiner: str | None = " and "
    batch_size: int = 1  # questions per forward pass (each is n_context encoder rows)
    num_beams: int = 1
    device: str | None = None  # None = cuda when available, else cpu
    precision: Precision = "fp32"

    def __post_init__(self) -> None:
        if self.model is not None and not self.model.strip():
            raise ConfigError("reader model must be a hub id or a local folder, got an empty string")
        for name in ("n_context", "max_length", "answer_max_length", "batch_size", "num_beams"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.answer_joiner is not None and not self.answer_joiner.strip():
            raise ConfigError(f"answer_joiner must hold a visible character (such as ' and '), got "
                              f"{self.answer_joiner!r}; use null to keep the first answer only")
        if self.precision not in get_args(Precision):
            raise ConfigError(f"precision {self.precision!r} is not valid; choose one of: fp32, fp16, bf16")

    def reader_format(self) -> ReaderFormat:
        """The ``ReaderFormat`` (input text, lengths, connector) this config describes; checks passage_format."""
        from odqa.read.data import ReaderFormat

        return ReaderFormat(n_passages=self.n_context, max_length=self.max_length,
                            answer_max_length=self.answer_max_length, passage_format=self.passage_format,
                            answer_joiner=self.answer_joiner)


@dataclass(frozen=True)
class TrainReaderConfig:
    """How to train a reader: the model and its input format (``reader``), optimiser, schedule, checkpoints.

    A checkpoint is written every ``checkpoint_every`` steps (the last ``keep_checkpoints`` are kept) and holds
    everything an exact resume needs; the dev file, when given, is read every ``eval_every`` steps and the best
    model so far is kept in ``best/``.
    """

    reader: ReadConfig = field(default_factory=ReadConfig)
    steps: int = 10000
    lr: float = 1e-4
    weight_decay: float = 0.01
    warmup_steps: int = 1000
    schedule: Schedule = "linear"  # linear decay to 0 at ``steps`` after warm-up, or constant after warm-up
    clip_norm: float = 1.0  # 0 = no clipping
    checkpoint_every: int = 500
    keep_checkpoints: int = 2
    eval_every: int = 500
    seed: int = 0
    gradient_checkpointing: bool = False

    def __post_init__(self) -> None:
        for name in ("steps", "checkpoint_every", "keep_checkpoints", "eval_every"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("lr", "weight_decay", "warmup_steps", "clip_norm"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.lr == 0:
            raise ConfigError("lr must be > 0, got 0")
        if self.schedule not in get_args(Schedule):
            raise ConfigError(f"schedule {self.schedule!r} is not valid; choose one of: linear, constant")

