"""``odqa read`` and ``odqa train-reader``: the Fusion-in-Decoder reader over FiD JSON Lines or a retriever."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from odqa.cli._app import app, console, guarded
from odqa.config import Precision

if TYPE_CHECKING:
    from rich.progress import Progress

    from odqa.read.config import ReadConfig, TrainReaderConfig
    from odqa.read.infer import ReadSummary
    from odqa.read.train import DevScore, TrainSummary

__all__ = ["read_command", "train_reader_command"]

ModelOpt = Annotated[str | None, typer.Option(
    help="Reader: hub id (t5-base, google/flan-t5-base, ...) or a local folder (a train-reader checkpoint).")]
NContextOpt = Annotated[int | None, typer.Option(help="Passages per question (default 100).")]
BatchOpt = Annotated[int | None, typer.Option(help="Questions per forward pass (default 1).")]
MaxLengthOpt = Annotated[int | None, typer.Option(help="Tokens per question + passage text (default 200).")]
AnswerLengthOpt = Annotated[int | None, typer.Option(help="Tokens per answer (default 32).")]
BeamsOpt = Annotated[int | None, typer.Option("--beams", help="Beam size (default 1: greedy).")]
DatasetOpt = Annotated[str | None, typer.Option(
    "--dataset", "-d", help="Whose answer convention: complex-tr (a set of answers), fid, timeqa, hieradate, "
                            "jemhopqa, hybridqa (aliases of one answer). Default: the input file's dataset; a FiD "
                            "file: fid.")]
AnswersOpt = Annotated[str | None, typer.Option(
    "--answers", help="Override the dataset's convention: set (all wanted, joined by --joiner) or aliases (the "
                      "first is the target, never split).")]
JoinerOpt = Annotated[str | None, typer.Option(
    "--joiner", help="Connector between the answers of a set (default ' $and ', Complex-TR's).")]
FormatOpt = Annotated[str | None, typer.Option(
    help="Reader input text, with {question}, {title}, {text} (default FiD's).")]
DeviceOpt = Annotated[str | None, typer.Option(help="cpu, cuda, cuda:1, ... (default cuda when present).")]
PrecisionOpt = Annotated[Precision | None, typer.Option(help="fp32 (default), bf16, fp16 (GPU, reading only).")]


def _reader_overrides(prefix: str, **values: object) -> dict[str, object]:
    return {f"{prefix}{key}": value for key, value in values.items()}


@app.command("read")
@guarded
def read_command(
    source: Annotated[Path, typer.Argument(
        metavar="INPUT", help="FiD JSON Lines (ctxs, or Atlas passages), or any question file with passages.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Predictions to write (JSON Lines, read by odqa eval).")],
    model: ModelOpt = None,
    n_context: NContextOpt = None,
    batch_size: BatchOpt = None,
    max_length: MaxLengthOpt = None,
    answer_length: AnswerLengthOpt = None,
    beams: BeamsOpt = None,
    dataset: DatasetOpt = None,
    answers: AnswersOpt = None,
    joiner: JoinerOpt = None,
    passage_format: FormatOpt = None,
    device: DeviceOpt = None,
    precision: PrecisionOpt = None,
    config: Annotated[Path | None, typer.Option(help="YAML config (see configs/read.yaml).")] = None,
) -> None:
    """Read: answer each question from its passages with a Fusion-in-Decoder reader."""
    from odqa.config import load_config
    from odqa.read.config import ReadConfig

    overrides = _reader_overrides(
        "", model=model, n_context=n_context, batch_size=batch_size, max_length=max_length,
        answer_max_length=answer_length, num_beams=beams, dataset=dataset, answers=answers, answer_joiner=joiner,
        passage_format=passage_format, device=device, precision=precision)
    cfg = _with_dataset(load_config(ReadConfig, config, **overrides), source)
    _print_read_summary(_read(source, out, cfg))


def _with_dataset(cfg: ReadConfig, source: Path) -> ReadConfig:
    """The config with its dataset (whose answer convention applies) taken from the input file when not given."""
    from dataclasses import replace

    from odqa.datasets.detect import detect_format

    if cfg.dataset is not None or not source.is_file():
        return cfg
    return replace(cfg, dataset=detect_format(source) or "fid")


def _progress(what: str, unit: str) -> Progress:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    return Progress(SpinnerColumn(), TextColumn(what), BarColumn(), MofNCompleteColumn(), TextColumn(unit),
                    TimeElapsedColumn(), TextColumn("{task.description}"), console=console, transient=True)


def _read(source: Path, out: Path, cfg: ReadConfig) -> ReadSummary:
    from odqa.inputs import load_examples
    from odqa.read.infer import load_reader, read_to_file

    examples = load_examples(source)
    cfg.reader_format()  # a bad passage format fails before the model loads
    with console.status(f"loading reader {cfg.model!r}"):
        reader = load_reader(cfg)
    with _progress("reading", "questions") as bar:
        task = bar.add_task("", total=None)
        return read_to_file(examples, out, cfg, reader=reader, progress=lambda n: bar.advance(task, n))


def _print_read_summary(summary: ReadSummary) -> None:
    from rich.table import Table

    stats, cfg = summary.stats, summary.config
    for message in stats.warnings[:5]:
        console.print(f"[yellow]warning[/]: {message}", highlight=False)
    if len(stats.warnings) > 5:
        console.print(f"[yellow]warning[/]: ... and {len(stats.warnings) - 5} more", highlight=False)
    table = Table(title=f"odqa read ({cfg.model}, n-context {cfg.n_context})")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_row("questions", f"{stats.questions:,}")
    table.add_row("passages read", f"{stats.passages:,}")
    table.add_row("answered from the question alone", f"{stats.no_context:,}")
    if stats.unreadable:
        table.add_row("not answered: unreadable to the tokenizer (reason under 'error')", f"{stats.unreadable:,}")
    seconds = summary.seconds
    table.add_row("time", f"{seconds:.1f} s ({stats.questions / max(seconds, 1e-9):.2f} questions/s)")
    table.add_row("output", str(summary.output))
    console.print(table)


@app.command("train-reader")
@guarded
def train_reader_command(
    source: Annotated[Path, typer.Argument(
        metavar="TRAIN", help="Training questions with answers: FiD JSON Lines with ctxs, or (with --retriever) "
                              "any question file odqa loads.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for checkpoints and best/.")],
    model: ModelOpt = None,
    dev: Annotated[Path | None, typer.Option(help="Dev questions, read every --eval-every steps.")] = None,
    retriever: Annotated[Path | None, typer.Option(
        help="Index folder or FiD file: fetch each batch's passages from it instead of the questions' ctxs.")
                         ] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue from the latest checkpoint in --out.")
                      ] = False,
    epochs: Annotated[int | None, typer.Option(help="Passes over the training questions (default 10).")] = None,
    steps: Annotated[int | None, typer.Option(help="At most this many optimiser steps (default: no cap).")] = None,
    lr: Annotated[float | None, typer.Option(help="Peak learning rate (default 1e-4).")] = None,
    warmup: Annotated[int | None, typer.Option(help="Warm-up steps (default: a tenth of the run).")] = None,
    checkpoint_every: Annotated[int | None, typer.Option(help="Steps between checkpoints (default 500).")] = None,
    eval_every: Annotated[int | None, typer.Option(help="Steps between dev evaluations (default 500).")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed of the data order and initial RNG (default 0).")] = None,
    gradient_checkpointing: Annotated[bool, typer.Option(
        "--gradient-checkpointing", help="Recompute activations: less memory for many passages.")] = False,
    n_context: NContextOpt = None,
    batch_size: BatchOpt = None,
    max_length: MaxLengthOpt = None,
    answer_length: AnswerLengthOpt = None,
    beams: BeamsOpt = None,
    dataset: DatasetOpt = None,
    answers: AnswersOpt = None,
    joiner: JoinerOpt = None,
    passage_format: FormatOpt = None,
    device: DeviceOpt = None,
    precision: PrecisionOpt = None,
    config: Annotated[Path | None, typer.Option(help="YAML config (see configs/train-reader.yaml).")] = None,
) -> None:
    """Train a Fusion-in-Decoder reader, with checkpoints, exact resume and the best dev checkpoint kept."""
    from dataclasses import replace

    from odqa.config import load_config
    from odqa.read.config import TrainReaderConfig

    overrides = _reader_overrides(
        "reader.", model=model, n_context=n_context, batch_size=batch_size, max_length=max_length,
        answer_max_length=answer_length, num_beams=beams, dataset=dataset, answers=answers, answer_joiner=joiner,
        passage_format=passage_format, device=device, precision=precision)
    cfg = load_config(TrainReaderConfig, config, epochs=epochs, steps=steps, lr=lr, warmup_steps=warmup,
                      checkpoint_every=checkpoint_every, eval_every=eval_every, seed=seed,
                      gradient_checkpointing=gradient_checkpointing or None, **overrides)
    cfg = replace(cfg, reader=_with_dataset(cfg.reader, source))
    _print_train_summary(_train(source, out, cfg, dev, retriever, resume))


def _train(source: Path, out: Path, cfg: TrainReaderConfig, dev: Path | None,
           retriever: Path | None, resume: bool) -> TrainSummary:
    from odqa.inputs import load_examples
    from odqa.read.train import train_reader
    from odqa.retrieve.compose import load_retriever

    examples = list(load_examples(source))
    dev_examples = list(load_examples(dev)) if dev is not None else None
    cfg.reader.reader_format()
    fetch = load_retriever(retriever) if retriever is not None else None

    def on_dev(score: DevScore) -> None:
        console.print(f"step {score.step}: dev exact match {score.exact:.3f}, F1 {score.f1:.3f} "
                      f"({score.questions} questions)", highlight=False)

    with _progress("training", "steps") as bar:
        task = bar.add_task("", total=cfg.total_steps(len(examples)))

        def progress(step: int, loss: float) -> None:
            bar.update(task, completed=step, description=f"loss {loss:.4f}")

        return train_reader(examples, out, cfg, dev=dev_examples, retriever=fetch, resume=resume,
                            progress=progress, on_dev=on_dev)


def _print_train_summary(summary: TrainSummary) -> None:
    from rich.table import Table

    table = Table(title=f"odqa train-reader ({summary.config.reader.model})")
    table.add_column("figure")
    table.add_column("value", justify="right")
    losses = summary.losses
    if summary.resumed_from is not None:
        table.add_row("resumed from step", f"{summary.resumed_from:,}")
    table.add_row("steps", f"{len(losses):,}")
    table.add_row("epochs", f"{summary.epochs:.2f} ({summary.questions:,} questions)")
    if losses:
        tail = losses[-min(len(losses), 50):]
        table.add_row("loss (first step / mean of last 50)", f"{losses[0]:.4f} / {sum(tail) / len(tail):.4f}")
    if summary.no_context:
        table.add_row("training questions without passages", f"{summary.no_context:,}")
    if summary.best is not None:
        best = summary.best
        table.add_row("best dev exact match (step)", f"{best.exact:.3f} ({best.step:,})")
        table.add_row("best dev F1", f"{best.f1:.3f}")
        table.add_row("best model", str(summary.best_dir))
    table.add_row("time", f"{summary.seconds:.1f} s")
    table.add_row("last checkpoint", str(summary.checkpoint))
    console.print(table)
