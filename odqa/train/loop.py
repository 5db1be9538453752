"""The training loop both rankers share: seeded batches, checkpoints, exact resume, dev recall, the best kept.

It mirrors ``odqa train-reader`` (:mod:`odqa.read.train`), whose checkpoint helpers it uses: ``checkpoint-NNNNNNN/``
every ``checkpoint_every`` steps, written atomically, holding the model and ``trainer.pt`` (optimiser, schedule,
step, RNG state, history), so ``resume=True`` takes exactly the step the uninterrupted run would have taken next.
The dev questions are ranked before the first step and after every epoch; the best model so far is in ``best/``
with its config and figures. Mined negatives are written once to ``mined.json``, so a resumed run uses the same.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from odqa.checkpoints import (
    CHECKPOINT,
    TRAINER_STATE,
    batch_indices,
    check_out,
    flat,
    prune,
    rng_state,
    set_rng_state,
    write_folder,
)
from odqa.config import EmbedConfig, to_dict
from odqa.errors import ConfigError, DependencyError, InputError
from odqa.io import atomic_write
from odqa.records import Example, Passage
from odqa.train.config import TrainRankerConfig
from odqa.train.data import (
    Group,
    GroupStats,
    build_groups,
    check_disjoint,
    dev_recall,
    mine_negatives,
    split_by_article,
)

try:
    import torch
except ImportError as exc:  # training needs torch; the rest of odqa does not
    raise DependencyError("torch", "embed") from exc

__all__ = ["DevRecall", "Item", "Ranker", "TrainRankerSummary", "fit"]

Kind = Literal["retriever", "reranker"]
MINED = "mined.json"


@dataclass(frozen=True)
class Item:
    """What one question brings to a step: a positive, its hard negatives, and the texts of all its positives
    (another question's passage holding this answer is not a negative for it)."""

    question: str
    positive: Passage
    negatives: tuple[Passage, ...]
    golds: frozenset[str]


class Ranker(Protocol):
    """A trainable model: a loss over a batch of items, scores of each group's candidates, a saved folder."""

    model: Any

    def loss(self, items: Sequence[Item]) -> torch.Tensor: ...

    def score(self, groups: Sequence[Group]) -> list[np.ndarray]: ...

    def save(self, folder: Path) -> None: ...


@dataclass(frozen=True, slots=True)
class DevRecall:
    """Answer recall@k of the dev questions at one step (epoch 0: before training)."""

    step: int
    epoch: int
    recall: dict[int, float]
    questions: int


@dataclass(frozen=True)
class TrainRankerSummary:
    """What a run did: losses (a resumed run's included), dev recall per epoch, the best, folders and counts."""

    kind: Kind
    config: TrainRankerConfig
    losses: list[float]
    dev: list[DevRecall]
    best: DevRecall | None
    best_dir: Path | None
    checkpoint: Path
    resumed_from: int | None
    data: GroupStats
    train_questions: int
    train_articles: int
    dev_questions: int
    dev_articles: int
    seconds: float
    usage: str  # the options that load the best model

    def figures(self) -> dict[str, Any]:
        """The summary as JSON-ready data (written beside the best model as ``training.json``)."""
        return {"kind": self.kind, "config": to_dict(self.config), "steps": len(self.losses),
                "loss_first": self.losses[0] if self.losses else None,
                "loss_last_50": float(np.mean(self.losses[-50:])) if self.losses else None,
                "dev": [asdict(d) for d in self.dev], "best": None if self.best is None else asdict(self.best),
                "data": asdict(self.data), "train_questions": self.train_questions,
                "train_articles": self.train_articles, "dev_questions": self.dev_questions,
                "dev_articles": self.dev_articles, "seconds": self.seconds, "resumed_from": self.resumed_from,
                "usage": self.usage}


def _item(group: Group, seed: int, step: int, n: int) -> Item:
    """The positive and negatives ``group`` brings to ``step``: drawn from the step alone (no RNG state), mined
    negatives first, other non-positive candidates when too few were mined."""
    rng = random.Random(f"{seed}\0{step}\0{group.id}")
    positive = group.candidates[rng.choice(group.positives)]
    chosen = rng.sample(group.negatives, min(n, len(group.negatives)))
    if len(chosen) < n:
        rest = [j for j in range(len(group.candidates)) if j not in group.positives and j not in chosen]
        chosen += rng.sample(rest, min(n - len(chosen), len(rest)))
    golds = frozenset(group.candidates[j].text for j in group.positives)
    return Item(group.question, positive, tuple(group.candidates[j] for j in chosen), golds)


def _schedule(warmup: int, total: int) -> Callable[[int], float]:
    """Linear warm-up, then linear decay to 0 at the last step."""
    def scale(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total - step) / max(1, total - warmup))

    return scale


def _mine(train: list[Group], out: Path, config: TrainRankerConfig, miner: EmbedConfig, resume: bool
          ) -> list[Group]:
    """Each question's hard negatives: mined now (BM25 and ``miner``) and written to ``mined.json``, or, on
    resume, read back from it."""
    path = out / MINED
    if resume:
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"--resume: cannot read {path} ({exc}); start a new run in another --out") from exc
        missing = [g.id for g in train if g.id not in saved]
        if missing:
            raise ConfigError(f"--resume: {len(missing)} training question(s) (first {missing[0]!r}) were not in "
                              "the interrupted run: resume with the same training file")
        return [replace(g, negatives=tuple(saved[g.id])) for g in train]
    from odqa.embed import Encoder

    with Encoder(miner) as encoder:
        flat = [p for g in train for p in g.candidates]
        vectors = encoder.encode_passages(flat)
        queries = encoder.encode_queries([g.question for g in train])
    sims, offset = [], 0
    for i, g in enumerate(train):
        sims.append(vectors[offset:offset + len(g.candidates)] @ queries[i])
        offset += len(g.candidates)
    mined = mine_negatives(train, sims, config.mined)
    out.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as fh:
        json.dump({g.id: list(g.negatives) for g in mined}, fh)
    return mined


def _split(examples: Iterable[Example], dev: Iterable[Example] | None, config: TrainRankerConfig
           ) -> tuple[list[Group], list[Group], GroupStats]:
    groups, stats = build_groups(examples, config.chunk)
    if dev is None:
        train, dev_groups = split_by_article(groups, config.dev_fraction, config.seed)
    else:
        train, (dev_groups, _) = groups, build_groups(dev, config.chunk)
        check_disjoint(train, dev_groups)
    if not train:
        raise ConfigError(f"all {len(groups)} questions' articles were drawn for dev (dev_fraction "
                          f"{config.dev_fraction}); lower --dev-fraction or give more articles")
    ids = [g.id for g in train]
    if len(set(ids)) != len(ids):
        raise InputError("training question ids repeat; each question needs its own id (mined negatives and "
                         "the batch draws are keyed by it)")
    return train, dev_groups, stats


# Settings a resumed run may change without becoming another run.
_FREE = {"checkpoint_every", "keep_checkpoints", "device"}


def _check_same_run(checkpoint: Path, config: TrainRankerConfig) -> None:
    saved = flat(json.loads((checkpoint / "train_config.json").read_text(encoding="utf-8")))
    now = flat(json.loads(json.dumps(to_dict(config))))  # as saved: tuples become lists
    changed = [f"{k} {saved.get(k)} -> {now[k]}" for k in sorted(now) if k not in _FREE and saved.get(k) != now[k]]
    if changed:
        raise ConfigError(f"--resume: settings differ from those of {checkpoint.name}: {', '.join(changed)}; an "
                          "exact resume needs the same settings (only checkpoint intervals and device may change): "
                          "use them, or start a new run in another --out")


def fit(
    kind: Kind,
    load: Callable[[str], Ranker],
    examples: Iterable[Example],
    out: str | Path,
    config: TrainRankerConfig,
    miner: EmbedConfig,
    *,
    usage: str,
    dev: Iterable[Example] | None = None,
    resume: bool = False,
    progress: Callable[[int, int, float], None] | None = None,
    on_dev: Callable[[DevRecall], None] | None = None,
) -> TrainRankerSummary:
    """Train the ranker ``load(config.model)`` builds on ``examples`` (``dev``: else ``dev_fraction`` of the
    articles), hard negatives mined with BM25 and ``miner``. ``progress(step, total, loss)`` after each step;
    ``usage``: the options that load the best model (``{best}`` stands for its folder), written beside it."""
    started = time.perf_counter()
    out = Path(out)
    train, dev_groups, stats = _split(examples, dev, config)
    latest = check_out(out, resume)
    if latest is not None:
        _check_same_run(latest, config)
    train = _mine(train, out, config, miner, latest is not None)
    ranker = load(str(latest) if latest is not None else config.model)
    if latest is None:
        torch.manual_seed(config.seed)
        random.seed(config.seed)
    optimizer = torch.optim.AdamW(ranker.model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    per_epoch = math.ceil(len(train) / config.batch_size)
    total = config.epochs * per_epoch
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _schedule(config.warmup_steps, total))
    step, losses, history = 0, [], []
    best: DevRecall | None = None
    if latest is not None:
        state = torch.load(latest / TRAINER_STATE, weights_only=False, map_location="cpu")  # GPU-written resumes on CPU
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        set_rng_state(state["rng"])
        step, losses = state["step"], list(state["losses"])
        history = [DevRecall(**_int_keys(d)) for d in state["dev"]]
        best = DevRecall(**_int_keys(state["best"])) if state["best"] else None
    resumed_from = step if latest is not None else None

    def save_checkpoint(folder: Path) -> None:
        ranker.save(folder)
        torch.save({"step": step, "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                    "rng": rng_state(), "losses": losses, "dev": [asdict(d) for d in history],
                    "best": None if best is None else asdict(best)}, folder / TRAINER_STATE)
        _write_json(folder / "train_config.json", to_dict(config))

    def save_best(folder: Path) -> None:
        ranker.save(folder)
        _write_json(folder / "train_config.json", to_dict(config))
        _write_json(folder / "dev_recall.json", {} if best is None else asdict(best))

    def evaluate() -> None:
        nonlocal best
        ranker.model.eval()
        with torch.no_grad():
            scores = ranker.score(dev_groups)
        result = DevRecall(step, step // per_epoch, dev_recall(dev_groups, scores, config.ks), len(dev_groups))
        history.append(result)
        if best is None or _key(result, config.ks) > _key(best, config.ks):
            best = result
            write_folder(out / "best", save_best)
        if on_dev is not None:
            on_dev(result)

    if dev_groups and latest is None:
        evaluate()
    while step < total:
        ranker.model.train()  # every step: evaluating and saving (sentence-transformers' save) leave eval mode
        items = [_item(train[i], config.seed, step, config.negatives)
                 for i in batch_indices(step, len(train), config.batch_size, config.seed)]
        loss = ranker.loss(items)
        torch.autograd.backward(loss)
        torch.nn.utils.clip_grad_norm_(ranker.model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        value = float(loss.detach())
        if not math.isfinite(value):
            raise ConfigError(f"the training loss became {value}; lower --lr")
        losses.append(value)
        if dev_groups and step % per_epoch == 0:
            evaluate()
        if step % config.checkpoint_every == 0 or step == total:
            write_folder(out / f"{CHECKPOINT}{step:07d}", save_checkpoint)
            prune(out, config.keep_checkpoints)
        if progress is not None:
            progress(step, total, value)
    if best is None:  # no dev questions: the last model is the one to use
        write_folder(out / "best", save_best)
    summary = TrainRankerSummary(
        kind, config, losses, history, best, out / "best", out / f"{CHECKPOINT}{step:07d}", resumed_from, stats,
        len(train), len({g.article for g in train}), len(dev_groups), len({g.article for g in dev_groups}),
        time.perf_counter() - started, usage.format(best=out / "best"))
    _write_json(out / "best" / "training.json", summary.figures())
    return summary


def _key(result: DevRecall, ks: Sequence[int]) -> tuple[float, ...]:
    return tuple(result.recall[k] for k in ks)


def _int_keys(data: dict[str, Any]) -> dict[str, Any]:
    return data | {"recall": {int(k): v for k, v in data["recall"].items()}}


def _write_json(path: Path, data: Any) -> None:
    with atomic_write(path) as fh:
        json.dump(data, fh, indent=2)
        fh.write("\n")


def batches(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    """``items`` in consecutive slices of ``size``."""
    for start in range(0, len(items), size):
        yield items[start:start + size]
