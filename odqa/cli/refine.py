"""``odqa refine``: score each question's candidate passages and write the top k as FiD JSON Lines."""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from odqa.cli._app import app, console, guarded
from odqa.config import Pooling, Precision, Scorer

if TYPE_CHECKING:
    from collections.abc import Iterator

    from odqa.config import RefineConfig
    from odqa.embed import Encoder
    from odqa.records import Example

RECALL_KS = (1, 5, 10, 20, 100)


@app.command("refine")
@guarded
def refine_command(
    source: Annotated[Path, typer.Argument(
        metavar="INPUT",
        help="Questions with candidates: FiD/Atlas/Complex-TR JSON(L), a TimeQA file, or a crawl output folder.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="FiD JSON Lines to write.")],
    k: Annotated[int | None, typer.Option(help="Passages kept per question (default 100).")] = None,
    scorer: Annotated[Scorer | None, typer.Option(help="Scoring (default hybrid).")] = None,
    model: Annotated[str | None, typer.Option(help="Embedding preset, hub id or local path (default minilm).")
                     ] = None,
    pooling: Annotated[Pooling | None, typer.Option(help="For a model that is not a preset.")] = None,
    normalize: Annotated[bool | None, typer.Option("--normalize/--no-normalize",
                                                      help="Unit-normalise vectors (non-preset models).")] = None,
    query_prompt: Annotated[str | None, typer.Option(help="Override the preset's query prefix ('' = none).")
                            ] = None,
    words: Annotated[int | None, typer.Option(help="Words per passage (default 100).")] = None,
    stride: Annotated[int | None, typer.Option(help="Words between passage starts (default = words).")] = None,
    chars: Annotated[int | None, typer.Option(help="Characters per passage for unspaced scripts (default 200)."
                                                 )] = None,
    batch_size: Annotated[int | None, typer.Option(help="Encoder batch size (default 16 on CPU, 128 on GPU).")] = None,
    device: Annotated[str | None, typer.Option(help="cpu, cuda, cuda:1, ... (default auto).")] = None,
    precision: Annotated[Precision | None, typer.Option(help="Half precision is for GPUs (default fp32).")] = None,
    cache_dir: Annotated[str | None, typer.Option(help="Embedding cache folder ('' = no cache).")] = None,
    atlas: Annotated[bool, typer.Option("--atlas", help="Write 'passages' (Atlas) instead of 'ctxs' (FiD).")
                     ] = False,
    config: Annotated[Path | None, typer.Option(help="YAML config (see configs/refine.yaml).")] = None,
) -> None:
    """Refine: keep the k best passages of each question's candidates (Complex-TR context refinement)."""
    from odqa.config import RefineConfig, load_config, write_resolved

    cfg = load_config(
        RefineConfig,
        config,
        k=k,
        scorer=scorer,
        ctx_key="passages" if atlas else None,
        **{
            "chunk.words": words, "chunk.stride": stride, "chunk.chars": chars,
            "embed.model": model, "embed.pooling": pooling, "embed.normalize": normalize,
            "embed.query_prompt": query_prompt, "embed.batch_size": batch_size, "embed.device": device,
            "embed.precision": precision, "embed.cache_dir": cache_dir,
        },
    )
    summary = run_refine(source, out, cfg)
    write_resolved(cfg, out)
    _print_summary(summary, out)


def run_refine(source: Path, out: Path, cfg: RefineConfig) -> dict[str, Any]:
    """Refine ``source`` into ``out`` with a progress display; returns the summary figures."""
    from odqa.datasets.detect import load_examples
    from odqa.errors import InputError

    examples = load_examples(source)
    first = next(examples, None)  # reads and checks the input before the (slow) model load
    if first is None:
        raise InputError(f"{source} holds no questions; expected one JSON record per question")
    examples = itertools.chain([first], examples)
    encoder = None
    if cfg.scorer in ("dense", "hybrid"):
        from odqa.embed import Encoder

        with console.status(f"loading embedding model {cfg.embed.model!r}"):
            encoder = Encoder(cfg.embed)
    try:
        return _refine_to_file(examples, out, cfg, encoder)
    finally:
        if encoder is not None:
            encoder.close()


def _refine_to_file(examples: Iterator[Example], out: Path, cfg: RefineConfig, encoder: Encoder | None
                    ) -> dict[str, Any]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from odqa.evaluate import recall_at_k
    from odqa.io import write_jsonl
    from odqa.refine import RefineStats, fid_record, refine

    stats = RefineStats()
    flags: list[list[bool]] = []
    started = time.perf_counter()
    columns = (SpinnerColumn(), TextColumn("refining"), BarColumn(), MofNCompleteColumn(), TextColumn("questions"),
               TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("refine", total=None)

        def records() -> Iterator[dict[str, Any]]:
            for item in refine(examples, cfg, encoder, stats, lambda n: bar.advance(task, n)):
                record = fid_record(item, cfg.ctx_key)
                if item.example.answers:
                    flags.append([ctx["has_answer"] for ctx in record[cfg.ctx_key]])
                yield record

        written = write_jsonl(out, records())
    elapsed = time.perf_counter() - started
    ks = [k for k in RECALL_KS if k <= cfg.k]
    return {
        "questions": written,
        "answerable": len(flags),
        "passages": stats.passages,
        "encoded": encoder.encoded if encoder is not None else 0,
        "seconds": elapsed,
        "recall": recall_at_k(flags, ks) if flags else {},
        "stats": stats,
        "scorer": cfg.scorer,
        "k": cfg.k,
    }


def _print_summary(summary: dict[str, Any], out: Path) -> None:
    from rich.table import Table

    stats = summary["stats"]
    for message in stats.warnings[:5]:
        console.print(f"[yellow]warning[/]: {message}", highlight=False)
    if len(stats.warnings) > 5:
        console.print(f"[yellow]warning[/]: ... and {len(stats.warnings) - 5} more", highlight=False)
    if stats.fewer_than_k:
        console.print(f"[yellow]warning[/]: {stats.fewer_than_k} question(s) had fewer than k={summary['k']} "
                      "candidate passages; all of theirs were kept", highlight=False)
    table = Table(title=f"odqa refine ({summary['scorer']}, k={summary['k']})")
    table.add_column("figure")
    table.add_column("value", justify="right")
    seconds = summary["seconds"]
    table.add_row("questions", f"{summary['questions']:,}")
    table.add_row("passages scored", f"{summary['passages']:,}")
    table.add_row("passages encoded (cache misses)", f"{summary['encoded']:,}")
    table.add_row("time", f"{seconds:.1f} s ({summary['questions'] / max(seconds, 1e-9):.1f} questions/s)")
    for k, value in summary["recall"].items():
        table.add_row(f"answer recall@{k} ({summary['answerable']} answerable)", f"{value:.3f}")
    table.add_row("output", str(out))
    console.print(table)
