"""Training a Fusion-in-Decoder reader: from FiD files (each question's own ``ctxs``) or any Retriever.

``train_reader(train, "readers/tr", config, dev=dev)`` runs ``config.epochs`` passes over the questions (at most
``config.steps`` optimiser steps) in a seeded order (a new permutation per epoch), writes ``checkpoint-NNNNNNN/``
every ``checkpoint_every`` steps (atomically: a hidden folder renamed into place) and reads the dev questions every
``eval_every`` steps, keeping the best model so far in ``best/``. A checkpoint holds the model and tokenizer (a
plain Hugging Face folder) and ``trainer.pt``: optimiser, schedule, step, RNG states and history, so
``resume=True`` takes exactly the step the uninterrupted run would have taken next (the data position follows from
the step and the seed); it resumes on any device, a GPU run's on a CPU too.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from odqa.checkpoints import (
    CHECKPOINT,
    TRAINER_STATE,
    batch_indices,
    check_out,
    flat,
    latest_checkpoint,
    prune,
    rng_state,
    set_rng_state,
    write_folder,
)
from odqa.config import to_dict
from odqa.errors import ConfigError, DependencyError, InputError
from odqa.evaluate.answers import token_f1
from odqa.read.config import TrainReaderConfig, steps_per_epoch
from odqa.read.data import ReaderBatch, ReaderFormat
from odqa.read.infer import collator_for, load_reader, predict
from odqa.read.model import FiDReader, check_encodable, fit_in_memory, is_out_of_memory
from odqa.records import Example
from odqa.retrieve.protocol import Retriever

try:
    import torch
except ImportError as exc:  # the reader needs torch; the rest of odqa does not
    raise DependencyError("torch", "embed") from exc

__all__ = ["DevScore", "TrainSummary", "evaluate_reader", "latest_checkpoint", "train_reader"]



@dataclass(frozen=True, slots=True)
class DevScore:
    """The reader on the dev questions at one step: exact match and token F1, as fractions."""

    step: int
    exact: float
    f1: float
    questions: int


@dataclass(frozen=True)
class TrainSummary:
    """What a training run did: its losses (all steps, a resumed run's included), dev scores and folders;
    ``epochs`` is how many passes over the ``questions`` its steps made."""

    config: TrainReaderConfig
    questions: int
    epochs: float
    losses: list[float]
    dev: list[DevScore]
    best: DevScore | None
    checkpoint: Path
    best_dir: Path | None
    resumed_from: int | None
    no_context: int
    seconds: float


def _score(prediction: str, answers: Sequence[str], fmt: ReaderFormat) -> tuple[float, float]:
    """EM as the answers' kind reads it (:meth:`ReaderFormat.exact`) and token F1: the best over aliases, or
    against the joined target of a set."""
    golds = (list(answers) if fmt.answers == "aliases" else [fmt.target(answers)]) or [""]
    return fmt.exact(prediction, answers), token_f1(prediction, golds)


def evaluate_reader(reader: FiDReader, examples: Sequence[Example], fmt: ReaderFormat, *,
                    retriever: Retriever | None = None, step: int = 0, batch_size: int = 1,
                    num_beams: int = 1) -> DevScore:
    """Exact match and F1 of the reader's answers to ``examples`` (the model is left in eval mode)."""
    reader.model.eval()
    exact = f1 = 0.0
    for start in range(0, len(examples), batch_size):
        chunk = list(examples[start:start + batch_size])
        collate = collator_for(reader, fmt, chunk, retriever)
        for ex, text in zip(chunk, predict(reader, collate, chunk, num_beams=num_beams), strict=True):
            em, f = _score(text, ex.answers, fmt)
            exact += em
            f1 += f
    n = max(len(examples), 1)
    return DevScore(step, exact / n, f1 / n, len(examples))


def _schedule(config: TrainReaderConfig, steps: int) -> Callable[[int], float]:
    warmup, linear = config.warmup(steps), config.schedule == "linear"

    def scale(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (steps - step) / max(1, steps - warmup)) if linear else 1.0

    return scale


def train_reader(
    train: Iterable[Example],
    out: str | Path,
    config: TrainReaderConfig,
    *,
    dev: Iterable[Example] | None = None,
    retriever: Retriever | None = None,
    resume: bool = False,
    progress: Callable[[int, float], None] | None = None,
    on_dev: Callable[[DevScore], None] | None = None,
) -> TrainSummary:
    """Train ``config.reader.model`` on ``train`` (contexts: ``retriever``, else each question's own ``ctxs``)."""
    start = time.perf_counter()
    out = Path(out)
    examples, dev_examples = list(train), list(dev or ())
    if not examples:
        raise InputError("no training questions; give a file with at least one question and its answers")
    total = config.total_steps(len(examples))
    if config.reader.precision == "fp16":
        raise ConfigError("precision fp16 is for reading only: T5 overflows in fp16 training; train with bf16")
    fmt = config.reader.reader_format()
    latest = check_out(out, resume)
    if latest is not None:
        reader = FiDReader.load(str(latest), device=config.reader.device, precision=config.reader.precision)
    else:
        reader = load_reader(config.reader)
        torch.manual_seed(config.seed)
        random.seed(config.seed)
    if config.gradient_checkpointing:
        reader.gradient_checkpointing()
    optimizer = torch.optim.AdamW(reader.model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _schedule(config, total))
    step, losses, scores = 0, [], []
    best: DevScore | None = None
    if latest is not None:
        # a checkpoint written on a GPU holds cuda tensors: read them on the CPU (the optimiser moves its state to
        # the parameters' device; RNG states are CPU tensors anyway)
        state = torch.load(latest / TRAINER_STATE, weights_only=False, map_location="cpu")
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        set_rng_state(state["rng"])
        step, losses = state["step"], list(state["losses"])
        scores = [DevScore(**s) for s in state["dev"]]
        best = DevScore(**state["best"]) if state["best"] else None
        _check_same_run(latest, config)
    resumed_from = step if latest is not None else None
    no_context = sum(1 for ex in examples if retriever is None and not ex.ctxs)

    def save_checkpoint(folder: Path) -> None:
        reader.save(folder)
        torch.save({"step": step, "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                    "rng": rng_state(), "losses": losses, "dev": [asdict(s) for s in scores],
                    "best": None if best is None else asdict(best)}, folder / TRAINER_STATE)
        (folder / "train_config.json").write_text(json.dumps(to_dict(config), indent=2) + "\n", encoding="utf-8")

    def save_best(folder: Path) -> None:
        reader.save(folder)
        score = {} if best is None else asdict(best)
        (folder / "dev_score.json").write_text(json.dumps(score, indent=2) + "\n", encoding="utf-8")

    reader.model.train()
    while step < total:
        chunk = [examples[i] for i in batch_indices(step, len(examples), config.reader.batch_size, config.seed)]
        batch = collator_for(reader, fmt, chunk, retriever)(chunk)
        check_encodable(batch, reader.tokenizer, reader.name)
        loss = _train_step(reader, batch, config)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        losses.append(loss)
        if dev_examples and (step % config.eval_every == 0 or step == total):
            score = evaluate_reader(reader, dev_examples, fmt, retriever=retriever, step=step,
                                    batch_size=config.reader.batch_size, num_beams=config.reader.num_beams)
            reader.model.train()
            scores.append(score)
            if best is None or (score.exact, score.f1) > (best.exact, best.f1):
                best = score
                write_folder(out / "best", save_best)
            if on_dev is not None:
                on_dev(score)
        if step % config.checkpoint_every == 0 or step == total:
            write_folder(out / f"{CHECKPOINT}{step:07d}", save_checkpoint)
            prune(out, config.keep_checkpoints)
        if progress is not None:
            progress(step, loss)
    final = out / f"{CHECKPOINT}{step:07d}"  # the last step always writes one (or a resume found it)
    epochs = step / steps_per_epoch(len(examples), config.reader.batch_size)
    return TrainSummary(config, len(examples), epochs, losses, scores, best, final, out / "best" if best else None,
                        resumed_from, no_context, time.perf_counter() - start)


def _train_step(reader: FiDReader, batch: ReaderBatch, config: TrainReaderConfig) -> float:
    """Forward and backward on one batch (gradients clipped); running out of memory says what would fit."""

    def step(b: ReaderBatch) -> float:
        loss = reader.loss(b)
        torch.autograd.backward(loss)
        return float(loss.detach())

    try:
        value = step(batch)
    except Exception as exc:
        if not is_out_of_memory(exc):
            raise
        reader.model.zero_grad(set_to_none=True)
        raise fit_in_memory(step, batch, reader.device, "training") from exc
    if config.clip_norm > 0:
        torch.nn.utils.clip_grad_norm_(reader.model.parameters(), config.clip_norm)
    if not math.isfinite(value):
        raise ConfigError(f"the training loss became {value}; lower --lr, or use bf16 rather than fp16")
    return value


# Settings a resumed run may change without becoming another run.
_FREE = {"epochs", "steps", "checkpoint_every", "keep_checkpoints", "eval_every", "reader.model", "reader.device"}


def _check_same_run(checkpoint: Path, config: TrainReaderConfig) -> None:
    """Refuse to resume with settings that would make the next steps another run's (order, batch, optimiser)."""
    saved = flat(json.loads((checkpoint / "train_config.json").read_text(encoding="utf-8")))
    now = flat(to_dict(config))
    changed = [f"{k} {saved.get(k)} -> {now[k]}" for k in sorted(now) if k not in _FREE and saved.get(k) != now[k]]
    if changed:
        raise ConfigError(f"--resume: settings differ from those of {checkpoint.name}: {', '.join(changed)}; an "
                          "exact resume needs the same settings (only epochs, steps, checkpoint/eval intervals, "
                          "device may change): use them, or start a new run in another --out")


