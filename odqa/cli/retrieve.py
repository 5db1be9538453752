"""``odqa retrieve``: the top k passages of one or more corpus indexes for each question, as FiD JSON Lines."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from odqa.cli._app import app, console, guarded

if TYPE_CHECKING:
    from odqa.datasets.hybridqa import TableAnnotator
    from odqa.retrieve.run import RetrieveConfig, RetrieveSummary

__all__ = ["retrieve_command"]


@app.command("retrieve")
@guarded
def retrieve_command(
    source: Annotated[Path, typer.Argument(
        metavar="QUESTIONS", help="Questions: JSON Lines {id, question, answers?}, any dataset file odqa loads, a "
                                  "crawl folder, or HybridQA questions with --tables.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="FiD JSON Lines to write.")],
    index: Annotated[list[Path] | None, typer.Option(
        "--index", help="Index folder (indexes/NAME); repeat to fuse several.")] = None,
    k: Annotated[int | None, typer.Option(help="Passages per question (default 100).")] = None,
    fuse: Annotated[Literal["rrf", "weighted"] | None, typer.Option(
        help="How several indexes are fused (default rrf).")] = None,
    weight: Annotated[list[float] | None, typer.Option(
        "--weight", help="With --fuse weighted only: one weight per --index, in order (default equal).")] = None,
    depth: Annotated[int | None, typer.Option(help="Passages asked of each index before fusion (default k).")
                     ] = None,
    batch_size: Annotated[int | None, typer.Option(help="Questions searched together (default 256).")] = None,
    search_params: Annotated[str | None, typer.Option(
        help="FAISS search parameters, e.g. nprobe=32 (IVF) or efSearch=128 (HNSW).")] = None,
    model: Annotated[str | None, typer.Option(
        help="Checked against the dense index's model (queries always use the model it was built with).")] = None,
    device: Annotated[str | None, typer.Option(help="cpu, cuda, ... for the query encoder (default auto).")] = None,
    rerank: Annotated[str | None, typer.Option(
        metavar="MODEL", help="Cross-encoder (hub id or local path) that reranks the first stage's top N.")] = None,
    rerank_top: Annotated[int | None, typer.Option(
        metavar="N", help="Passages reranked per question (default 100); the rest follow in first-stage order.")
                          ] = None,
    tables: Annotated[Path | None, typer.Option(
        help="HybridQA: the WikiTables-WithLinks folder the questions' tables (and the index) come from; each hit "
             "is marked with its table_id, kind and cells.")] = None,
    atlas: Annotated[bool, typer.Option("--atlas", help="Write 'passages' (Atlas) instead of 'ctxs' (FiD).")
                     ] = False,
    config: Annotated[Path | None, typer.Option(help="YAML config (see configs/retrieve.yaml).")] = None,
) -> None:
    """Retrieve: the k best passages of a corpus index (dense, BM25, or several fused) for each question."""
    from odqa.config import load_config
    from odqa.retrieve.run import RetrieveConfig

    cfg = load_config(
        RetrieveConfig, config,
        indexes=tuple(str(p) for p in index) if index else None, k=k, fusion=fuse,
        weights=tuple(weight) if weight else None, depth=depth, batch_size=batch_size, search_params=search_params,
        model=model, device=device, ctx_key="passages" if atlas else None,
        **{"rerank.model": rerank, "rerank.top_n": rerank_top},
    )
    annotator = None
    if tables is not None:
        from odqa.datasets.hybridqa import TableAnnotator

        annotator = TableAnnotator(tables)
    _print_summary(_run(source, out, cfg, tables, annotator), annotator)


def _run(source: Path, out: Path, cfg: RetrieveConfig, tables: Path | None,
         annotator: TableAnnotator | None) -> RetrieveSummary:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from odqa.inputs import load_examples
    from odqa.retrieve.run import open_retriever, retrieve_to_file

    examples = load_examples(source, tables)  # reads and checks the first record before the (slow) index load
    with console.status("loading index" + ("es" if len(cfg.indexes) > 1 else "")):
        retriever = open_retriever(cfg)
    columns = (SpinnerColumn(), TextColumn("retrieving"), BarColumn(), MofNCompleteColumn(), TextColumn("questions"),
               TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("retrieve", total=None)
        return retrieve_to_file(examples, out, cfg, retriever, progress=lambda n: bar.advance(task, n),
                                annotate=annotator)


def _print_summary(summary: RetrieveSummary, annotator: TableAnnotator | None) -> None:
    from rich.table import Table

    cfg = summary.config
    how = cfg.indexes[0] if len(cfg.indexes) == 1 else f"{len(cfg.indexes)} indexes, {cfg.fusion} fusion"
    table = Table(title=f"odqa retrieve ({how}, k={cfg.k})")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_row("questions", f"{summary.questions:,}")
    if cfg.rerank.model is not None:
        table.add_row("reranked", f"top {cfg.rerank.top_n} by {cfg.rerank.model}")
    table.add_row("time", f"{summary.seconds:.1f} s ({summary.questions / max(summary.seconds, 1e-9):.1f} "
                          "questions/s)")
    for cutoff, value in summary.recall.items():
        table.add_row(f"answer recall@{cutoff} ({summary.answerable} answerable)", f"{value:.3f}")
    if annotator is not None:
        from odqa.pipeline import recall_ks

        for cutoff, value in annotator.table_recall(recall_ks(cfg.k)).items():
            table.add_row(f"table recall@{cutoff} (own table among the hits)", f"{value:.3f}")
    table.add_row("output", str(summary.output))
    console.print(table)
