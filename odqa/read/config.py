"""What the Fusion-in-Decoder reader runs with: ``ReadConfig`` (inference) and ``TrainReaderConfig`` (training).

Torch-free, so the command line can build and validate a config before the slow imports. The input format and
the answers' convention are ``odqa.read.data.ReaderFormat``'s; ``ReadConfig.reader_format()`` builds it, taking
the convention of the dataset (:data:`ANSWER_KINDS`) unless ``answers`` / ``answer_joiner`` say otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, get_args

from odqa.config import Precision
from odqa.errors import ConfigError

if TYPE_CHECKING:
    from odqa.read.data import ReaderFormat

__all__ = ["ANSWER_KINDS", "AnswerKind", "ReadConfig", "Schedule", "TrainReaderConfig", "steps_per_epoch"]

Schedule = Literal["linear", "constant"]
AnswerKind = Literal["set", "aliases"]
PASSAGE_FORMAT = "question: {question} title: {title} context: {text}"
SET_JOINER = " $and "  # Complex-TR's released models join a set of answers this way; its metric splits on it first
# What a question's gold answers are, per dataset (the names of odqa eval --dataset): the answers of a
# Complex-TR question are all wanted; elsewhere they are names of one answer (FiD files: NQ, TriviaQA).
ANSWER_KINDS: dict[str, AnswerKind] = {"complex-tr": "set", "fid": "aliases", "timeqa": "aliases",
                                       "hieradate": "aliases", "jemhopqa": "aliases", "hybridqa": "aliases"}


def steps_per_epoch(questions: int, batch_size: int) -> int:
    """Optimiser steps in one pass over ``questions`` at ``batch_size`` a step (the last batch may be short)."""
    return max(1, math.ceil(questions / batch_size))


@dataclass(frozen=True)
class ReadConfig:
    """A reader model and how it reads: ``n_context`` passages of at most ``max_length`` tokens per question.

    ``dataset`` sets what the gold answers are (:data:`ANSWER_KINDS`; ``None``: a FiD file's aliases):
    ``answers`` overrides it, ``"set"`` (all wanted, joined by ``answer_joiner`` into one target and split back
    from a generated one) or ``"aliases"`` (the first is the target; never split).
    ``precision`` bf16/fp16 runs the model under autocast (bf16 on CPUs that compute it natively; fp16 on GPUs).
    """

    model: str | None = None  # hub id or local folder of a T5-family (encoder-decoder) checkpoint
    n_context: int = 100  # passages per question (Complex-TR: 100)
    max_length: int = 200  # tokens per question + passage text (Complex-TR: 200)
    answer_max_length: int = 32  # tokens generated (and per training target)
    passage_format: str = PASSAGE_FORMAT
    dataset: str | None = None  # whose answer convention (odqa eval's names); None = fid
    answers: AnswerKind | None = None  # None = the dataset's
    answer_joiner: str = SET_JOINER
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
        if self.dataset is not None and self.dataset not in ANSWER_KINDS:
            raise ConfigError(f"dataset {self.dataset!r} is not valid; choose one of: {', '.join(ANSWER_KINDS)}")
        if self.answers is not None and self.answers not in get_args(AnswerKind):
            raise ConfigError(f"answers {self.answers!r} is not valid; choose one of: set, aliases")
        if not self.answer_joiner.strip():
            raise ConfigError(f"answer_joiner must hold a visible character (such as {SET_JOINER!r}), got "
                              f"{self.answer_joiner!r}")
        if self.precision not in get_args(Precision):
            raise ConfigError(f"precision {self.precision!r} is not valid; choose one of: fp32, fp16, bf16")

    @property
    def answer_kind(self) -> AnswerKind:
        """``answers``, else the dataset's convention."""
        return self.answers or ANSWER_KINDS[self.dataset or "fid"]

    def reader_format(self) -> ReaderFormat:
        """The ``ReaderFormat`` (input text, lengths, answers) this config describes; checks passage_format."""
        from odqa.read.data import ReaderFormat

        return ReaderFormat(n_passages=self.n_context, max_length=self.max_length,
                            answer_max_length=self.answer_max_length, passage_format=self.passage_format,
                            answers=self.answer_kind, answer_joiner=self.answer_joiner)


@dataclass(frozen=True)
class TrainReaderConfig:
    """How to train a reader: the model and its input format (``reader``), optimiser, schedule, checkpoints.

    The run follows the data: ``epochs`` passes over the training questions, ``steps`` (when given) capping the
    optimiser steps; warm-up is ``warmup_steps``, or a tenth of the run. A checkpoint is written every
    ``checkpoint_every`` steps (the last ``keep_checkpoints`` are kept) and holds everything an exact resume
    needs; the dev file, when given, is read every ``eval_every`` steps and the best model so far is kept in
    ``best/``.
    """

    reader: ReadConfig = field(default_factory=ReadConfig)
    epochs: int = 10
    steps: int | None = None  # a cap on the optimiser steps; None = as many as the epochs take
    lr: float = 1e-4
    weight_decay: float = 0.01
    warmup_steps: int | None = None  # linear warm-up; None = a tenth of the run's steps
    schedule: Schedule = "linear"  # linear decay to 0 at the last step after warm-up, or constant after warm-up
    clip_norm: float = 1.0  # 0 = no clipping
    checkpoint_every: int = 500
    keep_checkpoints: int = 2
    eval_every: int = 500
    seed: int = 0
    gradient_checkpointing: bool = False

    def __post_init__(self) -> None:
        for name in ("epochs", "checkpoint_every", "keep_checkpoints", "eval_every"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.steps is not None and self.steps < 1:
            raise ConfigError(f"steps must be >= 1, got {self.steps}")
        for name in ("lr", "weight_decay", "warmup_steps", "clip_norm"):
            if (getattr(self, name) or 0) < 0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.lr == 0:
            raise ConfigError("lr must be > 0, got 0")
        if self.schedule not in get_args(Schedule):
            raise ConfigError(f"schedule {self.schedule!r} is not valid; choose one of: linear, constant")

    def total_steps(self, questions: int) -> int:
        """The run's optimiser steps: ``epochs`` passes over ``questions`` (``batch_size`` a step), at most
        ``steps``."""
        total = self.epochs * steps_per_epoch(questions, self.reader.batch_size)
        return total if self.steps is None else min(total, self.steps)

    def warmup(self, total: int) -> int:
        """Warm-up steps of a run of ``total`` steps."""
        return self.warmup_steps if self.warmup_steps is not None else total // 10
