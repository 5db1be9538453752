"""``odqa train-retriever`` and ``odqa train-reranker``: fine-tune a bi-encoder or a cross-encoder on a dataset's
questions (:mod:`odqa.train`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from odqa.cli._app import app, console, guarded
from odqa.config import Pooling

if TYPE_CHECKING:
    from odqa.train.config import TrainRankerConfig
    from odqa.train.loop import DevRecall, TrainRankerSummary

__all__ = ["train_reranker_command", "train_retriever_command"]

SourceArg = Annotated[Path, typer.Argument(
    metavar="TRAIN", help="Training questions with answers and candidates: any file odqa refine reads (Complex-TR, "
                          "TimeQA, HieraDate, FiD/Atlas, a crawl folder), or a HybridQA file with --tables.")]
OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Folder for checkpoints, mined.json and best/.")]
TablesOpt = Annotated[Path | None, typer.Option(
    help="HybridQA: the WikiTables-WithLinks folder; each question's candidates are its table's rows and linked "
         "pages.")]
DevOpt = Annotated[Path | None, typer.Option(
    help="Dev questions (other articles than TRAIN's); default: --dev-fraction of TRAIN's articles.")]
ResumeOpt = Annotated[bool, typer.Option("--resume", help="Continue from the latest checkpoint in --out.")]
EpochsOpt = Annotated[int | None, typer.Option(help="Passes over the training questions (default 2).")]
BatchOpt = Annotated[int | None, typer.Option(help="Questions per step (default 16).")]
NegativesOpt = Annotated[int | None, typer.Option(help="Hard negatives per question per step (default 3).")]
LrOpt = Annotated[float | None, typer.Option(help="Peak learning rate (default 3e-5).")]
MaxLengthOpt = Annotated[int | None, typer.Option(help="Tokens per text or pair (default 256).")]
DevFractionOpt = Annotated[float | None, typer.Option(help="Share of articles kept for dev (default 0.15).")]
CheckpointOpt = Annotated[int | None, typer.Option(help="Steps between checkpoints (default 50).")]
SeedOpt = Annotated[int | None, typer.Option(help="Seed of the split, data order and initial RNG (default 0).")]
DeviceOpt = Annotated[str | None, typer.Option(help="cpu, cuda, ... (default: cuda when available).")]
ConfigOpt = Annotated[Path | None, typer.Option(help="YAML config (TrainRankerConfig fields).")]


@app.command("train-retriever")
@guarded
def train_retriever_command(
    source: SourceArg,
    out: OutOpt,
    model: Annotated[str | None, typer.Option(help="Bi-encoder to start from: a preset, a local folder or a hub id "
                                                   "(default minilm, the bundled all-MiniLM-L6-v2).")] = None,
    pooling: Annotated[Pooling | None, typer.Option(help="For a model that is not a preset.")] = None,
    normalize: Annotated[bool | None, typer.Option("--normalize/--no-normalize",
                                                      help="Unit-normalise vectors (non-preset models).")] = None,
    tables: TablesOpt = None, dev: DevOpt = None, resume: ResumeOpt = False, epochs: EpochsOpt = None,
    batch_size: BatchOpt = None, negatives: NegativesOpt = None, lr: LrOpt = None, max_length: MaxLengthOpt = None,
    dev_fraction: DevFractionOpt = None, checkpoint_every: CheckpointOpt = None, seed: SeedOpt = None,
    device: DeviceOpt = None, config: ConfigOpt = None,
) -> None:
    """Fine-tune a bi-encoder: each question's answer-holding passages against BM25's and its own hard negatives
    and the batch's other passages; the best dev model is written to OUT/best."""
    cfg = _config(config, model=model, pooling=pooling, normalize=normalize, epochs=epochs, batch_size=batch_size,
                  negatives=negatives, lr=lr, max_length=max_length, dev_fraction=dev_fraction,
                  checkpoint_every=checkpoint_every, seed=seed, device=device)
    _print_summary(_train("retriever", source, out, cfg, tables, dev, resume))


@app.command("train-reranker")
@guarded
def train_reranker_command(
    source: SourceArg,
    out: OutOpt,
    model: Annotated[str | None, typer.Option(help="Encoder or bi-encoder to initialise the cross-encoder from: a "
                                                   "preset, a local folder or a hub id (default minilm).")] = None,
    miner: Annotated[str | None, typer.Option(help="Bi-encoder that mines hard negatives beside BM25: a preset, "
                                                   "or a folder with --pooling/--normalize (default minilm).")
                     ] = None,
    pooling: Annotated[Pooling | None, typer.Option(help="The miner's pooling, when it is not a preset.")] = None,
    normalize: Annotated[bool | None, typer.Option("--normalize/--no-normalize",
                                                      help="Whether the miner's vectors are unit-normalised.")
                         ] = None,
    tables: TablesOpt = None, dev: DevOpt = None, resume: ResumeOpt = False, epochs: EpochsOpt = None,
    batch_size: BatchOpt = None, negatives: NegativesOpt = None, lr: LrOpt = None, max_length: MaxLengthOpt = None,
    dev_fraction: DevFractionOpt = None, checkpoint_every: CheckpointOpt = None, seed: SeedOpt = None,
    device: DeviceOpt = None, config: ConfigOpt = None,
) -> None:
    """Train a cross-encoder reranker on the same positives and hard negatives; --rerank OUT/best loads it."""
    cfg = _config(config, model=model, miner=miner, pooling=pooling, normalize=normalize, epochs=epochs,
                  batch_size=batch_size, negatives=negatives, lr=lr, max_length=max_length,
                  dev_fraction=dev_fraction, checkpoint_every=checkpoint_every, seed=seed, device=device)
    _print_summary(_train("reranker", source, out, cfg, tables, dev, resume))


def _config(path: Path | None, **overrides: object) -> TrainRankerConfig:
    from odqa.config import load_config
    from odqa.train.config import TrainRankerConfig

    return load_config(TrainRankerConfig, path, **overrides)


def _train(kind: str, source: Path, out: Path, cfg: TrainRankerConfig, tables: Path | None, dev: Path | None,
           resume: bool) -> TrainRankerSummary:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from odqa.inputs import load_examples

    examples = load_examples(source, tables)
    dev_examples = load_examples(dev, tables) if dev is not None else None
    with console.status("loading torch"):
        if kind == "retriever":
            from odqa.train.retriever import train_retriever as trainer
        else:
            from odqa.train.reranker import train_reranker as trainer

    def on_dev(result: DevRecall) -> None:
        figures = ", ".join(f"R@{k} {v:.3f}" for k, v in result.recall.items())
        console.print(f"epoch {result.epoch} (step {result.step}): dev {figures} ({result.questions} questions)",
                      highlight=False)

    columns = (TextColumn("training"), BarColumn(), MofNCompleteColumn(), TextColumn("steps"),
               TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("mining negatives", total=None)

        def progress(step: int, total: int, loss: float) -> None:
            bar.update(task, completed=step, total=total, description=f"loss {loss:.4f}")

        return trainer(examples, out, cfg, dev=dev_examples, resume=resume, progress=progress, on_dev=on_dev)


def _print_summary(summary: TrainRankerSummary) -> None:
    from rich.table import Table

    table = Table(title=f"odqa train-{summary.kind} ({summary.config.model})")
    table.add_column("figure")
    table.add_column("value", justify="right")
    data = summary.data
    table.add_row("questions read", f"{data.questions:,}")
    table.add_row("left out: no answer / no candidate holding it", f"{data.unanswerable:,} / {data.no_positive:,}")
    table.add_row("training questions (articles)", f"{summary.train_questions:,} ({summary.train_articles:,})")
    table.add_row("dev questions (articles)", f"{summary.dev_questions:,} ({summary.dev_articles:,})")
    if summary.resumed_from is not None:
        table.add_row("resumed from step", f"{summary.resumed_from:,}")
    losses = summary.losses
    table.add_row("steps", f"{len(losses):,}")
    if losses:
        tail = losses[-min(len(losses), 50):]
        table.add_row("loss (first step / mean of last 50)", f"{losses[0]:.4f} / {sum(tail) / len(tail):.4f}")
    for result in summary.dev:
        figures = " ".join(f"{v:.3f}" for v in result.recall.values())
        ks = ",".join(str(k) for k in result.recall)
        table.add_row(f"dev R@{ks}, epoch {result.epoch}", figures)
    if summary.best is not None:
        table.add_row("best (epoch)", f"epoch {summary.best.epoch}")
    table.add_row("time", f"{summary.seconds:.1f} s")
    table.add_row("model", str(summary.best_dir))
    table.add_row("use it with", summary.usage)
    console.print(table)
