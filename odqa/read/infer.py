"""Reading: answers for FiD-format questions (``ctxs`` or Atlas ``passages``) with a Fusion-in-Decoder reader.

``read(examples, config)`` yields one :class:`Prediction` per question, in input order; ``read_to_file`` writes
them as JSON Lines ``{"id", "question", "prediction", "answers"}`` that ``odqa eval`` reads (``prediction`` is the
generated text, ``answers`` that text split back on the connector).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from odqa.errors import ConfigError
from odqa.read.config import ReadConfig
from odqa.read.data import ReaderBatch, ReaderCollator, ReaderFormat
from odqa.read.model import FiDReader, check_encodable, fit_in_memory, is_out_of_memory
from odqa.records import Example
from odqa.retrieve.protocol import Retriever

__all__ = ["Prediction", "ReadStats", "ReadSummary", "collator_for", "load_reader", "predict", "read", "read_to_file"]


@dataclass(frozen=True, slots=True)
class Prediction:
    """The reader's answer to one question: the generated text and the answers it lists."""

    id: str
    question: str
    prediction: str
    answers: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {"id": self.id, "question": self.question, "prediction": self.prediction,
                "answers": list(self.answers)}


@dataclass
class ReadStats:
    """Counters of one read: questions, passages read, questions answered from the question alone."""

    questions: int = 0
    passages: int = 0
    no_context: int = 0
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ReadSummary:
    """What ``read_to_file`` did, for the command's summary table."""

    config: ReadConfig
    stats: ReadStats
    seconds: float
    output: Path


def load_reader(config: ReadConfig) -> FiDReader:
    """The reader model ``config.model`` names, on its device and precision."""
    if config.model is None:
        raise ConfigError("no reader model given; pass --model (a hub id such as t5-base, or a local folder)")
    return FiDReader.load(config.model, device=config.device, precision=config.precision)


def collator_for(reader: FiDReader, fmt: ReaderFormat, examples: list[Example],
                 retriever: Retriever | None = None) -> ReaderCollator:
    """The collator for one batch; reading the examples' own ctxs, N is the most any of them has (at most
    ``n_passages``, at least 1): filler rows are masked out anyway, so padding to ``n_passages`` only costs time."""
    if retriever is None:
        most = max((len(ex.ctxs or ()) for ex in examples), default=1)
        fmt = replace(fmt, n_passages=max(1, min(fmt.n_passages, most)))
    return ReaderCollator(retriever, reader.tokenizer, fmt)


def predict(reader: FiDReader, collate: ReaderCollator, examples: list[Example], *, num_beams: int = 1
            ) -> list[str]:
    """The generated texts for one batch of examples; running out of memory says what would fit."""
    fmt = collate.format
    batch = collate(examples)
    check_encodable(batch, reader.tokenizer, reader.name)

    def step(b: ReaderBatch) -> list[str]:
        return reader.generate(b, num_beams=num_beams, max_length=fmt.answer_max_length)

    try:
        return step(batch)
    except Exception as exc:
        if not is_out_of_memory(exc):
            raise
        raise fit_in_memory(step, batch, reader.device, "reading") from exc


def read(examples: Iterable[Example], config: ReadConfig, *, reader: FiDReader | None = None,
         stats: ReadStats | None = None, progress: Callable[[int], None] | None = None) -> Iterator[Prediction]:
    """Answer each question from its own passages (the first ``n_context``); batches of ``batch_size``."""
    fmt: ReaderFormat = config.reader_format()
    reader = reader or load_reader(config)
    reader.model.eval()
    stats = stats if stats is not None else ReadStats()
    iterator = iter(examples)
    while chunk := list(itertools.islice(iterator, config.batch_size)):
        for ex in chunk:
            if not ex.ctxs:
                stats.no_context += 1
                stats.warnings.append(f"question {ex.id!r} has no passages; answered from the question alone")
            stats.passages += min(len(ex.ctxs or ()), fmt.n_passages)
        texts = predict(reader, collator_for(reader, fmt, chunk), chunk, num_beams=config.num_beams)
        stats.questions += len(chunk)
        for ex, text in zip(chunk, texts, strict=True):
            yield Prediction(ex.id, ex.question, text, tuple(fmt.split(text)))
        if progress is not None:
            progress(len(chunk))


def read_to_file(examples: Iterable[Example], out: str | Path, config: ReadConfig, *,
                 reader: FiDReader | None = None, progress: Callable[[int], None] | None = None) -> ReadSummary:
    """Read every question and write the predictions (atomically) plus the resolved config beside them."""
    from odqa.config import write_resolved
    from odqa.io import write_jsonl

    start = time.perf_counter()
    stats = ReadStats()
    predictions = read(examples, config, reader=reader, stats=stats, progress=progress)
    write_jsonl(out, (p.to_json() for p in predictions))
    write_resolved(config, out)
    return ReadSummary(config, stats, time.perf_counter() - start, Path(out))
