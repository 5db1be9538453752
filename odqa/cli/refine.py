"""``odqa refine``: score each question's candidate passages and write the top k as FiD JSON Lines."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from odqa.cli._app import app, console, guarded
from odqa.config import EmbedBackend, EmbedPrecision, Pooling, Scorer
from odqa.ray.config import Engine

if TYPE_CHECKING:
    from odqa.config import RefineConfig
    from odqa.pipeline import RefineSummary
    from odqa.ray import RayConfig


@app.command("refine")
@guarded
def refine_command(
    source: Annotated[Path, typer.Argument(
        metavar="INPUT",
        help="Questions with candidates: a crawl output folder, or a Complex-TR, TimeQA, HieraDate or FiD/Atlas "
             "file.")],
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
    batch_size: Annotated[int | None, typer.Option(
        help="Encoder batch size (default on CPU 8 with OpenVINO, 16 with torch; 128 on GPU).")] = None,
    device: Annotated[str | None, typer.Option(help="cpu, cuda, cuda:1, ... (default auto).")] = None,
    precision: Annotated[EmbedPrecision | None, typer.Option(
        help="auto (default): the fastest measured on the device (bf16 on CPUs with AVX-512 BF16/AMX, fp16 on "
             "CUDA, else fp32); bf16 is refused on a CPU without it (emulated, 8x slower); the choice is written in "
             "the config beside the output.")] = None,
    backend: Annotated[EmbedBackend | None, typer.Option(
        help="What runs the encoder: auto (default) is openvino on a CPU where it is installed (fastest measured "
             "there), else torch; the choice is written in the config beside the output.")] = None,
    cache_dir: Annotated[str | None, typer.Option(help="Embedding cache folder (default: the user cache).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Encode everything; read and write no vector cache "
                                                              "(a converted OpenVINO model is still reused).")
                        ] = False,
    cache_limit_gb: Annotated[float | None, typer.Option(
        help="Embedding cache size limit; least recently used vectors are evicted past it (default 2).")] = None,
    rerank: Annotated[str | None, typer.Option(
        metavar="MODEL", help="Cross-encoder (hub id or local path) that reranks each question's top N.")] = None,
    rerank_top: Annotated[int | None, typer.Option(
        metavar="N", help="Passages reranked per question (default 100); the rest follow in first-stage order.")
                          ] = None,
    atlas: Annotated[bool, typer.Option("--atlas", help="Write 'passages' (Atlas) instead of 'ctxs' (FiD).")
                     ] = False,
    config: Annotated[Path | None, typer.Option(help="YAML config (see configs/refine.yaml).")] = None,
    engine: Annotated[Engine, typer.Option(help="Where passages are embedded: here, or on a Ray cluster (same "
                                                "output).")] = "local",
    ray_address: Annotated[str | None, typer.Option(help="Ray cluster to attach to (default: RAY_ADDRESS, else "
                                                         "a local cluster).")] = None,
    ray_actors: Annotated[int | None, typer.Option(help="Encoder actors (default one per GPU, else per CPU).")
                          ] = None,
    tables: Annotated[Path | None, typer.Option(
        help="HybridQA: the WikiTables-WithLinks folder; INPUT is then a HybridQA questions file, each question "
             "ranked over its table's rows and linked passages (default scorer table-hybrid).")] = None,
) -> None:
    """Refine: keep the k best passages of each question's candidates (Complex-TR context refinement)."""
    from odqa.config import RefineConfig, load_config
    from odqa.ray import ray_config

    cfg = load_config(
        RefineConfig,
        config,
        k=k,
        scorer=scorer or ("table-hybrid" if tables is not None else None),
        ctx_key="passages" if atlas else None,
        **{
            "chunk.words": words, "chunk.stride": stride, "chunk.chars": chars,
            "embed.model": model, "embed.pooling": pooling, "embed.normalize": normalize,
            "embed.query_prompt": query_prompt, "embed.batch_size": batch_size, "embed.device": device,
            "embed.precision": precision, "embed.backend": backend, "embed.cache_dir": "" if no_cache else cache_dir,
            "embed.cache_limit_gb": cache_limit_gb,
            "rerank.model": rerank, "rerank.top_n": rerank_top,
        },
    )
    summary = _run(source, out, cfg, tables, ray_config(engine, ray_address, ray_actors))
    _print_summary(summary)


def _run(source: Path, out: Path, cfg: RefineConfig, tables: Path | None = None,
         ray: RayConfig | None = None) -> RefineSummary:
    """Read the input (its first record before the slow model load), then refine with a progress bar."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from odqa.inputs import load_examples
    from odqa.pipeline import refine_to_file
    from odqa.refine import needs_encoder

    if tables is not None:
        from odqa.tables import refine_tables_to_file

        run = functools.partial(refine_tables_to_file, source, tables, out, cfg)
    else:
        run = functools.partial(refine_to_file, load_examples(source), out, cfg)
    if cfg.rerank.model is not None:
        from odqa.retrieve.rerank import CrossEncoderReranker

        with console.status(f"loading cross-encoder {cfg.rerank.model!r}"):
            run = functools.partial(run, reranker=CrossEncoderReranker(cfg.rerank))
    encoder = None
    if needs_encoder(cfg):
        from odqa.ray import engine_encoder

        with console.status(f"loading embedding model {cfg.embed.model!r}"):
            encoder = engine_encoder(cfg.embed, ray)
    columns = (SpinnerColumn(), TextColumn("refining"), BarColumn(), MofNCompleteColumn(), TextColumn("questions"),
               TimeElapsedColumn())
    try:
        with Progress(*columns, console=console, transient=True) as bar:
            task = bar.add_task("refine", total=None)
            return run(encoder, progress=lambda n: bar.advance(task, n))
    finally:
        if encoder is not None:
            encoder.close()


def _print_summary(summary: RefineSummary) -> None:
    from rich.table import Table

    stats, k = summary.stats, summary.config.k
    for message in stats.warnings[:5]:
        console.print(f"[yellow]warning[/]: {message}", highlight=False)
    if len(stats.warnings) > 5:
        console.print(f"[yellow]warning[/]: ... and {len(stats.warnings) - 5} more", highlight=False)
    if stats.fewer_than_k:
        console.print(f"[yellow]warning[/]: {stats.fewer_than_k} question(s) had fewer than k={k} "
                      "candidate passages; all of theirs were kept", highlight=False)
    table = Table(title=f"odqa refine ({summary.config.scorer}, k={k})")
    table.add_column("figure")
    table.add_column("value", justify="right")
    seconds = summary.seconds
    table.add_row("questions", f"{summary.questions:,}")
    table.add_row("passages scored", f"{stats.passages:,}")
    table.add_row("repeated passages dropped", f"{stats.duplicates:,}")
    table.add_row("passages encoded (cache misses)", f"{summary.encoded:,}")
    if summary.config.rerank.model is not None:
        table.add_row("reranked", f"top {summary.config.rerank.top_n} by {summary.config.rerank.model}")
    table.add_row("time", f"{seconds:.1f} s ({summary.questions / max(seconds, 1e-9):.1f} questions/s)")
    for cutoff, value in summary.recall.items():
        table.add_row(f"answer recall@{cutoff} ({summary.answerable} answerable)", f"{value:.3f}")
    table.add_row("output", str(summary.output))
    console.print(table)
