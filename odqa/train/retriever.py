"""``train_retriever``: contrastive fine-tuning of a bi-encoder (``odqa train-retriever``).

The loss is sentence-transformers' MultipleNegativesRankingLoss with hard negatives, written over its model so
the loop can checkpoint and resume exactly: each question's positive against its own hard negatives and every
other passage of the batch (a passage holding the question's own answer is masked, not a negative). The model
is built exactly as :class:`~odqa.embed.Encoder` builds it (transformer, pooling, normalisation from the preset
or flags) and saved as a sentence-transformers folder, which ``--model DIR --pooling P --normalize`` loads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from odqa.config import EmbedConfig
from odqa.embed.encoder import model_parts, quiet_weight_loading, resolve_model
from odqa.embed.presets import Preset, passage_text, query_text
from odqa.records import Example
from odqa.train.config import TrainRankerConfig
from odqa.train.data import Group
from odqa.train.loop import DevRecall, Item, TrainRankerSummary, fit

if TYPE_CHECKING:
    import torch

__all__ = ["BiEncoder", "load_flags", "train_retriever"]


class BiEncoder:
    """A sentence-transformers bi-encoder in training: MNRL loss, dev scores, a saved folder."""

    def __init__(self, source: str, preset: Preset, config: TrainRankerConfig) -> None:
        from sentence_transformers import SentenceTransformer

        transformer_cls, pooling_cls, normalize_cls = model_parts()
        with quiet_weight_loading():
            transformer = transformer_cls(source, max_seq_length=config.max_length)
        dim_of = getattr(transformer, "get_embedding_dimension", None) or transformer.get_word_embedding_dimension
        modules = [transformer, pooling_cls(dim_of(), pooling_mode=preset.pooling)]
        if preset.normalize:
            modules.append(normalize_cls())
        self.model: Any = SentenceTransformer(modules=modules, device=config.device or _device())
        self.preset, self.scale = preset, config.scale

    def _embed(self, texts: Sequence[str]) -> torch.Tensor:
        tokenize = getattr(self.model, "preprocess", None) or self.model.tokenize
        features = {k: v.to(self.model.device) if hasattr(v, "to") else v
                    for k, v in tokenize(list(texts)).items()}
        embeddings: torch.Tensor = self.model(features)["sentence_embedding"]
        return embeddings

    def loss(self, items: Sequence[Item]) -> torch.Tensor:
        queries = self._embed([query_text(it.question, self.preset.query_prefix) for it in items])
        passages = [p for it in items for p in (it.positive, *it.negatives)]
        vectors = self._embed([passage_text(p, self.preset.passage_prefix) for p in passages])
        scores = queries @ vectors.T
        if self.preset.normalize:  # cosine similarities in [-1, 1]: sharpened as MNRL does
            scores = scores * self.scale
        targets, offset = [], 0
        for it in items:
            targets.append(offset)
            offset += 1 + len(it.negatives)
        import torch

        mask = torch.tensor([[j != target and p.text in it.golds for j, p in enumerate(passages)]
                             for it, target in zip(items, targets, strict=True)], device=scores.device)
        scores = scores.masked_fill(mask, float("-inf"))
        return torch.nn.functional.cross_entropy(scores, torch.tensor(targets, device=scores.device))

    def score(self, groups: Sequence[Group]) -> list[np.ndarray]:
        texts = list(dict.fromkeys(passage_text(p, self.preset.passage_prefix) for g in groups
                                   for p in g.candidates))
        encode = self.model.encode
        vectors = dict(zip(texts, encode(texts, batch_size=32, convert_to_numpy=True, show_progress_bar=False),
                           strict=True))
        queries = encode([query_text(g.question, self.preset.query_prefix) for g in groups], batch_size=32,
                         convert_to_numpy=True, show_progress_bar=False)
        return [np.stack([vectors[passage_text(p, self.preset.passage_prefix)] for p in g.candidates]) @ q
                for g, q in zip(groups, queries, strict=True)]

    def save(self, folder: Path) -> None:
        with quiet_weight_loading():  # also hides the "Writing model shards" bar
            self.model.save(str(folder))


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def load_flags(preset: Preset) -> str:
    """The options that load a trained folder as the model it was trained as (pooling, normalisation, prompts)."""
    flags = f"--pooling {preset.pooling} {'--normalize' if preset.normalize else '--no-normalize'}"
    if preset.query_prefix:
        flags += f" --query-prompt {preset.query_prefix!r}"
    return flags


def train_retriever(
    train: Iterable[Example],
    out: str | Path,
    config: TrainRankerConfig,
    *,
    dev: Iterable[Example] | None = None,
    resume: bool = False,
    progress: Callable[[int, int, float], None] | None = None,
    on_dev: Callable[[DevRecall], None] | None = None,
) -> TrainRankerSummary:
    """Fine-tune the bi-encoder ``config.model`` on ``train``; the best model lands in ``out/best``, loaded by
    ``--model out/best`` plus :func:`load_flags` (its pooling and normalisation), as written in training.json."""
    embed = EmbedConfig(model=config.model, pooling=config.pooling, normalize=config.normalize, cache_dir="",
                        device=config.device)
    preset = resolve_model(embed)

    def load(source: str) -> BiEncoder:
        return BiEncoder(preset.source() if source == config.model else source, preset, config)

    return fit("retriever", load, train, out, config, embed, usage=f"--model {{best}} {load_flags(preset)}",
               dev=dev, resume=resume, progress=progress, on_dev=on_dev)
