"""Randomly initialised BERT encoders over a tokenizer's vocabulary: no embedding or cross-encoder weights can be had
offline, so tests and benchmarks build one from a config and load it by path, as a user's model folder is loaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["save_random_bert"]


def save_random_bert(
    folder: str | Path,
    tokenizer_from: str | Path,
    *,
    seed: int = 0,
    layers: int = 1,
    max_positions: int = 512,
    num_labels: int | None = None,
    **overrides: Any,
) -> Path:
    """Save a BERT of width 32 with random weights (drawn from ``seed``) and the tokenizer of ``tokenizer_from``.

    ``num_labels`` makes it a sequence classifier (a cross-encoder); otherwise it is a plain encoder.
    """
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification, BertModel

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_from))
    torch.manual_seed(seed)
    settings: dict[str, Any] = {"vocab_size": tokenizer.vocab_size, "hidden_size": 32, "num_hidden_layers": layers,
                                "num_attention_heads": 2, "intermediate_size": 64,
                                "max_position_embeddings": max_positions, **overrides}
    if num_labels is not None:
        settings["num_labels"] = num_labels
    config = BertConfig(**settings)
    model: Any = BertModel(config) if num_labels is None else BertForSequenceClassification(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return Path(folder)
