"""Reading: answers for FiD-format questions (``ctxs`` or Atlas ``passages``) with a Fusion-in-Decoder reader.

``read(examples, config)`` yields one :class:`Prediction` per question, in input order; ``read_to_file`` writes
them as JSON Lines ``{"id", "question", "prediction", "answers"}`` that ``odqa eval`` reads (``prediction`` is the
generated text, ``answers`` the answers it lists). A question the reader cannot read (its text mostly unknown to
the tokenizer) is not answered: its record has an empty prediction and the reason under ``error``, and the
read goes on.
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
from odqa.read.model import FiDReader, check_encodable, fit_in_memory, is_out_of_memory, unreadable
from odqa.records import Example
from odqa.retrieve.protocol import Retriever

__all__ = ["Prediction", "ReadStats", "ReadSummary", "collator_for", "load_reader", "predict", "read", "read_to_file"]


@dataclass(frozen=True, slots=True)
class Prediction:
    """The reader's answer to one question: the generated text and the answers it lists, or why it has none."""

    id: str
    question: str
    prediction: str
    answers: tuple[str, ...]
    error: str | None = None

    def to_json(self) -> dict[str, object]:
        record: dict[str, object] = {"id": self.id, "question": self.question, "prediction": self.prediction,
                                     "answers": list(self.answers)}
        return record if self.error is None else record | {"error": self.error}


@dataclass
class ReadStats:
    """Counters of one read: questions, passages read, questions answered from the question alone, questions the
    reader could not read (recorded with their reason, not answered)."""

    questions: int = 0
    passages: int = 0
    no_context: int = 0
    unreadable: int = 0
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
    batch = collate(examples)
    check_encodable(batch, reader.tokenizer, reader.name)
    return _generate(reader, batch, collate.format, num_beams)


def _generate(reader: FiDReader, batch: ReaderBatch, fmt: ReaderFormat, num_beams: int) -> list[str]:
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
    """Answer each question from its own passages (the first ``n_context``); batches of ``batch_size``. A
    question the reader cannot read is yielded unanswered, with its reason, and counted in ``stats``."""
    fmt: ReaderFormat = config.reader_format()
    reader = reader or load_reader(config)
    reader.model.eval()
    stats = stats if stats is not None else ReadStats()
    iterator = iter(examples)
    while chunk := list(itertools.islice(iterator, config.batch_size)):
        whole = collator_for(reader, fmt, chunk)(chunk)
        reasons = [unreadable(qid, question, hits, reader.tokenizer, reader.name)
                   for qid, question, hits in zip(whole.ids, whole.questions, whole.hits, strict=True)]
        readable = [ex for ex, reason in zip(chunk, reasons, strict=True) if reason is None]
        batch = whole if len(readable) == len(chunk) else \
            collator_for(reader, fmt, readable)(readable) if readable else None
        texts = iter(_generate(reader, batch, fmt, config.num_beams) if batch is not None else [])
        stats.questions += len(chunk)
        for ex, reason in zip(chunk, reasons, strict=True):
            if reason is not None:
                stats.unreadable += 1
                stats.warnings.append(f"not answered: {reason}")
                yield Prediction(ex.id, ex.question, "", (), error=reason)
                continue
            if not ex.ctxs:
                stats.no_context += 1
                stats.warnings.append(f"question {ex.id!r} has no passages; answered from the question alone")
            stats.passages += min(len(ex.ctxs or ()), fmt.n_passages)
            text = next(texts)
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
