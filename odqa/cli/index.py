"""``odqa index build`` and ``odqa index export``: corpus indexes over passages, and passages as DPR TSV."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from odqa.cli._app import app, console, guarded
from odqa.config import EmbedBackend, EmbedPrecision, Pooling
from odqa.index.config import IndexKind
from odqa.ray.config import Engine

if TYPE_CHECKING:
    from odqa.index.config import IndexConfig
    from odqa.index.manifest import Manifest
    from odqa.index.resources import BuildPlan
    from odqa.ray import RayConfig

__all__ = ["index_app"]

index_app = typer.Typer(help="Build corpus indexes (FAISS, BM25) and export passage sets.", no_args_is_help=True)
app.add_typer(index_app, name="index")

PassagesArg = Annotated[Path, typer.Argument(
    metavar="PASSAGES",
    help="JSON Lines passages {id, doc_id?, title?, text}, DPR TSV (id, text, title; header optional), a question "
         "file odqa loads or a crawl folder (candidates chunked as refine chunks them).")]


@index_app.command("build")
@guarded
def build_command(
    source: PassagesArg,
    out: Annotated[Path, typer.Option("--out", "-o", help="Index folder, e.g. indexes/NAME (rerun to resume).")],
    kind: Annotated[IndexKind | None, typer.Option(help="dense (FAISS over embeddings) or bm25 (default dense).")
                    ] = None,
    model: Annotated[str | None, typer.Option(help="Embedding preset, hub id or local path (default minilm).")
                     ] = None,
    pooling: Annotated[Pooling | None, typer.Option(help="For a model that is not a preset.")] = None,
    normalize: Annotated[bool | None, typer.Option("--normalize/--no-normalize",
                                                      help="Unit-normalise vectors (non-preset models).")] = None,
    faiss: Annotated[str | None, typer.Option(help="FAISS factory string: Flat, HNSW32, IVF4096,PQ64, ... "
                                                   "(default Flat).")] = None,
    shard_size: Annotated[int | None, typer.Option(help="Passages embedded and written at a time (default 50000).")
                          ] = None,
    train_size: Annotated[int | None, typer.Option(help="Vectors sampled to train IVF/PQ (default 100000).")
                          ] = None,
    words: Annotated[int | None, typer.Option(help="Words per passage when chunking a question file (default 100).")
                     ] = None,
    stride: Annotated[int | None, typer.Option(help="Words between passage starts (default = words).")] = None,
    chars: Annotated[int | None, typer.Option(help="Characters per passage for unspaced scripts (default 200).")
                     ] = None,
    batch_size: Annotated[int | None, typer.Option(
        help="Encoder batch size (default on CPU 8 with OpenVINO, 16 with torch; 128 on GPU).")] = None,
    device: Annotated[str | None, typer.Option(help="cpu, cuda, cuda:1, ... (default auto).")] = None,
    precision: Annotated[EmbedPrecision | None, typer.Option(
        help="auto (default): the fastest measured on the device (bf16 on CPUs with AVX-512 BF16/AMX, fp16 on "
             "CUDA, else fp32); the choice is written in the index manifest.")] = None,
    backend: Annotated[EmbedBackend | None, typer.Option(
        help="What runs the encoder: auto (default) is openvino on a CPU where it is installed, else torch.")] = None,
    vectors: Annotated[Path | None, typer.Option(
        help="Passage vectors computed elsewhere: a .npy file or a folder of .npy shards, one row per passage in "
             "passage order; --model names the model that computed them (queries are encoded by it).")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Rebuild an index that is already in --out.")
                         ] = False,
    config: Annotated[Path | None, typer.Option(help="YAML config (see configs/index.yaml).")] = None,
    engine: Annotated[Engine, typer.Option(help="Where passages are embedded: here, or on a Ray cluster (same "
                                                "files; a build resumes on either).")] = "local",
    ray_address: Annotated[str | None, typer.Option(help="Ray cluster to attach to (default: RAY_ADDRESS, else "
                                                         "a local cluster).")] = None,
    ray_actors: Annotated[int | None, typer.Option(help="Encoder actors (default one per GPU, else per CPU).")
                          ] = None,
) -> None:
    """Build a dense (FAISS) or BM25 index over passages; an interrupted build resumes where it stopped."""
    from odqa.config import load_config, write_resolved
    from odqa.index.config import IndexConfig
    from odqa.ray import ray_config

    cfg = load_config(
        IndexConfig, config, kind=kind, faiss=faiss, shard_size=shard_size, train_size=train_size,
        **{"chunk.words": words, "chunk.stride": stride, "chunk.chars": chars,
           "embed.model": model, "embed.pooling": pooling, "embed.normalize": normalize,
           "embed.batch_size": batch_size, "embed.device": device, "embed.precision": precision,
           "embed.backend": backend},
    )
    ray = ray_config(engine, ray_address, ray_actors)
    started = time.perf_counter()
    manifest = _build(source, out, cfg, overwrite, ray, vectors)
    seconds = time.perf_counter() - started
    from odqa.index.dense import ran_config

    write_resolved(ran_config(cfg, manifest), out / "build")
    _print_build(manifest, out, seconds)


def _build(source: Path, out: Path, cfg: IndexConfig, overwrite: bool, ray: RayConfig | None,
           vectors: Path | None) -> Manifest:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        SpinnerColumn,
        Task,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    from odqa.index.build import build_index, corpus_size, open_encoder
    from odqa.index.source import open_passages
    from odqa.index.vectors import VectorSource

    imported = VectorSource(vectors) if vectors is not None else None  # a bad path fails before the count
    size = corpus_size(open_passages(source, cfg.chunk))
    passages = open_passages(source, cfg.chunk)
    encoder = None
    if cfg.kind == "dense" and imported is None:
        with console.status(f"loading embedding model {cfg.embed.model!r}"):
            encoder = open_encoder(cfg, ray)
    class Rate(ProgressColumn):
        """Passages/s as measured (shown from the first finished shard on)."""

        def render(self, task: Task) -> Text:
            return Text(f"{task.speed:,.0f} passages/s" if task.speed else "")

    columns = (SpinnerColumn(), TextColumn("indexing"), BarColumn(), MofNCompleteColumn(), TextColumn("passages"),
               Rate(), TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn())
    bar = Progress(*columns, console=console, transient=True)
    task = bar.add_task("index", total=size.count)

    def start(plan: BuildPlan) -> None:  # once every check has passed: what the build needs, then its progress
        console.print(plan.describe(), highlight=False, soft_wrap=True)
        bar.start()

    try:
        return build_index(passages, out, cfg, encoder=encoder, vectors=imported, size=size, overwrite=overwrite,
                           progress=lambda n: bar.advance(task, n), plan=start)
    finally:
        if bar.live.is_started:
            bar.stop()
        if encoder is not None:
            encoder.close()


def _print_build(manifest: Manifest, out: Path, seconds: float) -> None:
    from rich.table import Table

    settings = manifest.settings
    table = Table(title=f"odqa index build ({manifest.kind})")
    table.add_column("figure")
    table.add_column("value", justify="right")
    count = manifest.count or 0
    table.add_row("passages", f"{count:,}")
    table.add_row("shards", f"{len(manifest.shards):,}")
    if manifest.kind == "dense":
        table.add_row("model", f"{settings['preset']} ({settings['dimension']} dimensions, {settings['score']})")
        table.add_row("FAISS index", settings["faiss"])
    else:
        table.add_row("BM25", f"{settings['method']}, k1={settings['k1']}, b={settings['b']}")
    table.add_row("time", f"{seconds:.1f} s ({count / max(seconds, 1e-9):,.0f} passages/s, resumed shards included)")
    table.add_row("output", str(out))
    console.print(table)


@index_app.command("export")
@guarded
def export_command(
    source: Annotated[Path, typer.Argument(
        metavar="PASSAGES", help="An index folder, or any passage set `odqa index build` reads.")],
    tsv: Annotated[Path, typer.Option("--tsv", help="DPR TSV file to write (id, text, title with a header row).")],
    words: Annotated[int | None, typer.Option(help="Words per passage when chunking a question file (default 100).")
                     ] = None,
) -> None:
    """Write a passage set (an index's, or any input's) as DPR TSV."""
    from odqa.config import ChunkConfig
    from odqa.index.export import export_tsv

    count = export_tsv(source, tsv, ChunkConfig() if words is None else ChunkConfig(words=words))
    console.print(f"wrote {count:,} passages to {tsv}", highlight=False)
