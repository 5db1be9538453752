"""``train_reranker``: a cross-encoder trained on a dataset's questions (``odqa train-reranker``).

The model is a Hugging Face sequence classifier with one output (a relevance logit), initialised from any
encoder or bi-encoder checkpoint (the bundled MiniLM works: its transformer is kept, the head is new). Each
question's positive competes with its hard negatives in a softmax (listwise cross-entropy, the positive first).
Pairs are (question, title + text), as :class:`~odqa.retrieve.rerank.CrossEncoderReranker` builds them; the saved
folder is what ``--rerank DIR`` loads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from odqa.config import EmbedConfig
from odqa.embed.encoder import quiet_weight_loading, resolve_model
from odqa.embed.presets import PRESETS, passage_text
from odqa.errors import ModelError
from odqa.records import Example
from odqa.train.config import TrainRankerConfig
from odqa.train.data import Group
from odqa.train.loop import DevRecall, Item, TrainRankerSummary, batches, fit

if TYPE_CHECKING:
    import torch

__all__ = ["CrossEncoderModel", "train_reranker"]

_SCORE_BATCH = 32


class CrossEncoderModel:
    """A one-logit sequence classifier in training: listwise loss, dev scores, a saved folder."""

    def __init__(self, source: str, config: TrainRankerConfig) -> None:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer
        from transformers.utils import logging as hf_logging

        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]  # the new head is intended
        try:
            with quiet_weight_loading():
                self.tokenizer: Any = AutoTokenizer.from_pretrained(source)
                self.model: Any = AutoModelForSequenceClassification.from_pretrained(source, num_labels=1)
        except (OSError, ValueError) as exc:
            raise ModelError(f"cannot initialise a cross-encoder from {source!r}: {type(exc).__name__}: "
                             f"{str(exc).splitlines()[0] if str(exc) else ''}; pass a local encoder folder (such "
                             "as the bundled MiniLM's) or a hub id reachable from here") from exc
        finally:
            hf_logging.set_verbosity(verbosity)
        self.tokenizer.model_max_length = config.max_length  # saved with it: inference truncates the same way
        self.max_length = config.max_length
        self.device = config.device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model.to(self.device)

    def _logits(self, questions: Sequence[str], texts: Sequence[str]) -> torch.Tensor:
        encoded = self.tokenizer(list(questions), list(texts), truncation=True, max_length=self.max_length,
                                 padding=True, return_tensors="pt").to(self.device)
        logits: torch.Tensor = self.model(**encoded).logits.squeeze(-1)
        return logits

    def loss(self, items: Sequence[Item]) -> torch.Tensor:
        import torch

        pairs = [(it.question, passage_text(p)) for it in items for p in (it.positive, *it.negatives)]
        logits = self._logits([q for q, _ in pairs], [t for _, t in pairs])
        losses, offset = [], 0
        for it in items:
            group = logits[offset:offset + 1 + len(it.negatives)]
            offset += len(group)
            losses.append(torch.logsumexp(group, dim=0) - group[0])  # the positive is first
        return torch.stack(losses).mean()

    def score(self, groups: Sequence[Group]) -> list[np.ndarray]:
        pairs = [(g.question, passage_text(p)) for g in groups for p in g.candidates]
        flat = [self._logits([q for q, _ in part], [t for _, t in part]).float().cpu().numpy()
                for part in batches(pairs, _SCORE_BATCH)]
        scores = np.concatenate(flat) if flat else np.zeros(0)
        return np.split(scores.astype(np.float64), np.cumsum([len(g.candidates) for g in groups])[:-1])

    def save(self, folder: Path) -> None:
        with quiet_weight_loading():  # also hides the "Writing model shards" bar
            self.model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)


def train_reranker(
    train: Iterable[Example],
    out: str | Path,
    config: TrainRankerConfig,
    *,
    dev: Iterable[Example] | None = None,
    resume: bool = False,
    progress: Callable[[int, int, float], None] | None = None,
    on_dev: Callable[[DevRecall], None] | None = None,
) -> TrainRankerSummary:
    """Train a cross-encoder from ``config.model`` (a preset's weights, a folder or a hub id) on ``train``,
    negatives mined with BM25 and the ``config.miner`` bi-encoder; the best model lands in ``out/best``, which
    ``odqa refine --rerank out/best`` loads."""
    source = PRESETS[config.model].source() if config.model in PRESETS else config.model
    miner = EmbedConfig(model=config.miner, pooling=config.pooling, normalize=config.normalize, cache_dir="",
                        device=config.device)
    resolve_model(miner)  # an unknown miner fails before any work

    def load(model: str) -> CrossEncoderModel:
        return CrossEncoderModel(source if model == config.model else model, config)

    return fit("reranker", load, train, out, config, miner, usage="--rerank {best}", dev=dev, resume=resume,
               progress=progress, on_dev=on_dev)
