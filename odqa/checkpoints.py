"""A training run's folder, shared by the reader's and the rankers' training: atomic checkpoints named by step,
the newest found for a resume, the data order and random state that make a resume exact, old checkpoints pruned.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from odqa.errors import ConfigError, InputError, OutputError
from odqa.read.config import steps_per_epoch

__all__ = ["CHECKPOINT", "TRAINER_STATE", "batch_indices", "check_out", "data_order", "flat", "latest_checkpoint",
           "prune", "rng_state", "set_rng_state", "write_folder"]

CHECKPOINT = "checkpoint-"
TRAINER_STATE = "trainer.pt"


def latest_checkpoint(out: str | Path) -> Path | None:
    """The checkpoint of the highest step in ``out`` (half-written ones are hidden, never picked)."""
    found = [p for p in Path(out).glob(f"{CHECKPOINT}*") if p.is_dir() and p.name[len(CHECKPOINT):].isdigit()]
    return max(found, key=lambda p: int(p.name[len(CHECKPOINT):]), default=None)


def data_order(n: int, seed: int, epoch: int) -> list[int]:
    """Epoch ``epoch``'s order of ``n`` examples, fixed by the seed and the epoch alone."""
    import torch

    generator = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
    return [int(i) for i in torch.randperm(n, generator=generator)]


def batch_indices(step: int, n: int, batch_size: int, seed: int) -> list[int]:
    """The examples of step ``step`` (0-based): the data position follows from the step alone."""
    epoch, index = divmod(step, steps_per_epoch(n, batch_size))
    return data_order(n, seed, epoch)[index * batch_size:(index + 1) * batch_size]


def rng_state() -> dict[str, Any]:
    """Every random generator's state (torch, CUDA where present, Python), for an exact resume."""
    import torch

    state: dict[str, Any] = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` saved."""
    import torch

    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _replace_dir(tmp: Path, final: Path) -> None:
    """Move a finished folder into place; an older one of the same name is removed only after."""
    old = final.with_name(f".{final.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        os.replace(final, old)
    os.replace(tmp, final)
    shutil.rmtree(old, ignore_errors=True)


def write_folder(final: Path, write: Callable[[Path], None]) -> None:
    """Write a folder atomically: ``write`` fills a hidden temporary one, which then replaces ``final``."""
    tmp = final.with_name(f".{final.name}.tmp")
    try:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        write(tmp)
        _replace_dir(tmp, final)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise OutputError(f"cannot write {final}: {exc.strerror or exc}; choose another --out") from exc


def check_out(out: Path, resume: bool) -> Path | None:
    """The checkpoint to resume from (None for a new run); a resume with nothing to resume, or a new run over an
    old one, is refused."""
    latest = latest_checkpoint(out) if out.is_dir() else None
    if resume and latest is None:
        raise InputError(f"--resume: {out} holds no {CHECKPOINT}* folder to resume from; run without --resume to "
                         "start training")
    if not resume and latest is not None:
        raise ConfigError(f"{out} already holds {latest.name}; pass --resume to continue that run, or choose "
                          "another --out")
    return latest


def flat(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested config as ``{"a.b": value}``, to compare two runs' settings key by key."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        out |= flat(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}": value}
    return out


def prune(out: Path, keep: int) -> None:
    """Keep the ``keep`` newest checkpoints of ``out``."""
    found = sorted((p for p in out.glob(f"{CHECKPOINT}*") if p.name[len(CHECKPOINT):].isdigit()),
                   key=lambda p: int(p.name[len(CHECKPOINT):]))
    for old in found[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
