"""A command's whole run as one library function: questions in, FiD JSON Lines out, a summary back.

The CLI only parses flags, calls one of these and prints the summary; Python users (and the demo) call the same
functions. Progress display is passed in as a callback, never built here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from odqa.config import RefineConfig, write_resolved
from odqa.errors import InputError
from odqa.evaluate import recall_at_k
from odqa.io import CtxKey, write_fid
from odqa.records import Example
from odqa.refine import Refined, RefineStats, fid_record, refine

if TYPE_CHECKING:
    from odqa.embed import Encoder
    from odqa.retrieve.protocol import Reranker

__all__ = [
    "RECALL_KS", "Progress", "RefineSummary", "WriteSummary", "recall_ks", "refine_to_file", "write_refined",
    "write_results",
]

RECALL_KS = (1, 5, 10, 20, 100)
Progress = Callable[[int], None]  # called with the number of questions just finished

NO_CANDIDATES_FIX = (
    "gather candidates first: crawl them (`odqa crawl QUESTIONS --out crawl/NAME`, then `odqa refine crawl/NAME`) "
    "or retrieve them from a corpus index (`odqa retrieve`)"
)


def recall_ks(depth: int) -> tuple[int, ...]:
    """The answer-recall cut-offs reported for a run that keeps ``depth`` passages per question."""
    return tuple(k for k in RECALL_KS if k <= depth)


@dataclass(frozen=True)
class WriteSummary:
    """What :func:`write_results` wrote, with answer recall@k over the questions that have answers."""

    output: Path
    questions: int
    answerable: int
    recall: dict[int, float]


def write_results(
    items: Iterable[Refined],
    out: str | Path,
    *,
    ks: Sequence[int] = RECALL_KS,
    ctx_key: CtxKey = "ctxs",
    annotate: Callable[[Refined, dict[str, Any]], None] | None = None,
) -> WriteSummary:
    """Atomically write ranked questions as FiD JSON Lines (``has_answer`` marked) and measure answer recall.

    ``annotate`` may add fields to each record before it is written (HybridQA: what each ctx is, where the
    answer lies). An error raised while ``items`` is consumed leaves no output behind (nor replaces an earlier
    one).
    """
    flags: list[list[bool]] = []

    def records() -> Iterator[dict[str, Any]]:
        for item in items:
            record = fid_record(item, ctx_key)
            if annotate is not None:
                annotate(item, record)
            if item.example.answers:
                flags.append([bool(ctx["has_answer"]) for ctx in record[ctx_key]])
            yield record

    written = write_fid(out, records())
    return WriteSummary(Path(out), written, len(flags), recall_at_k(flags, ks) if flags else {})


@dataclass(frozen=True)
class RefineSummary:
    """What :func:`refine_to_file` did: the output and its resolved config, counts, answer recall, time."""

    output: Path
    config_file: Path
    config: RefineConfig
    questions: int
    answerable: int
    recall: dict[int, float]  # answer recall@k for each k in recall_ks(config.k), answerable questions only
    encoded: int  # passage texts run through the model in this run (embedding cache misses)
    seconds: float
    stats: RefineStats  # passages scored, duplicates dropped, questions without candidates, warnings


def write_refined(
    run: Callable[[RefineConfig, RefineStats], Iterable[Refined]],
    out: str | Path,
    config: RefineConfig,
    encoder: Encoder | None = None,
    *,
    annotate: Callable[[Refined, dict[str, Any]], None] | None = None,
) -> RefineSummary:
    """The one writer of a refinement: ``run(config, stats)`` ranks the questions under ``config`` with the
    encoder's resolved precision and backend (``auto`` -> what ran), which is the config written beside the FiD
    JSON Lines (``<out>.config.json``); returns the summary. Shared by :func:`refine_to_file` and HybridQA's
    :func:`odqa.tables.refine_tables_to_file`."""
    if encoder is not None:
        config = replace(config, embed=encoder.resolved(config.embed))
    stats = RefineStats()
    encoded_before = encoder.encoded if encoder is not None else 0
    started = time.perf_counter()
    written = write_results(run(config, stats), out, ks=recall_ks(config.k), ctx_key=config.ctx_key,
                            annotate=annotate)
    seconds = time.perf_counter() - started
    config_file = write_resolved(config, out)
    encoded = encoder.encoded - encoded_before if encoder is not None else 0
    return RefineSummary(written.output, config_file, config, written.questions, written.answerable,
                         written.recall, encoded, seconds, stats)


def refine_to_file(
    examples: Iterable[Example],
    out: str | Path,
    config: RefineConfig | None = None,
    encoder: Encoder | None = None,
    *,
    progress: Progress | None = None,
    reranker: Reranker | None = None,
) -> RefineSummary:
    """Refine ``examples`` (see :func:`odqa.refine.refine`), write the top k of each question as FiD JSON Lines
    to ``out`` and the resolved config beside it (``<out>.config.json``, with the precision and backend the encoder
    used; see :func:`write_refined`).

    ``encoder`` is needed by the dense and hybrid scorers and must be built from ``config.embed``; the caller
    owns (and closes) it. ``reranker`` goes with ``config.rerank.model`` (``CrossEncoderReranker(config.rerank)``).
    Input in which no question has a candidate passage is an :class:`InputError` and writes nothing: refinement
    only ranks candidates, it does not find them.
    """

    def refined(config: RefineConfig, stats: RefineStats) -> Iterator[Refined]:
        yield from refine(examples, config, encoder, stats, progress, reranker)
        if not stats.questions:
            raise InputError("no questions to refine: the input is empty")
        if not stats.passages:
            raise InputError(f"none of the {stats.questions} question(s) has candidate passages (under 'ctxs' or "
                             f"'passages', or where its dataset keeps them); {NO_CANDIDATES_FIX}")

    return write_refined(refined, out, config or RefineConfig(), encoder)
