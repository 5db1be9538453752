"""Randomly initialised T5 models over any tokenizer's vocabulary: no weights can be had offline, so tests,
benchmarks and the examples build one from a config (``tiny``: 1 layer of width 32; ``base``: t5-base's shape)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from odqa.errors import ConfigError

__all__ = ["SIZES", "random_t5", "save_random_t5"]

Size = Literal["tiny", "small", "base"]
SIZES: dict[str, dict[str, int]] = {
    "tiny": {"d_model": 32, "d_kv": 16, "d_ff": 64, "num_layers": 1, "num_heads": 2},
    "small": {"d_model": 512, "d_kv": 64, "d_ff": 2048, "num_layers": 6, "num_heads": 8},  # t5-small
    "base": {"d_model": 768, "d_kv": 64, "d_ff": 3072, "num_layers": 12, "num_heads": 12},  # t5-base
}


def random_t5(tokenizer: Any, size: Size = "tiny", *, seed: int = 0, dropout: float = 0.1, **overrides: int) -> Any:
    """A ``T5ForConditionalGeneration`` of ``size`` with random weights, pad/eos taken from ``tokenizer``."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    if size not in SIZES:
        raise ConfigError(f"size {size!r} is not valid; choose one of: {', '.join(SIZES)}")
    pad = tokenizer.pad_token_id
    eos = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else tokenizer.sep_token_id
    settings: dict[str, Any] = {"vocab_size": len(tokenizer), "pad_token_id": pad, "decoder_start_token_id": pad,
                                "eos_token_id": eos, "dropout_rate": dropout, **SIZES[size], **overrides}
    config = T5Config(**settings)
    torch.manual_seed(seed)
    return T5ForConditionalGeneration(config)


def save_random_t5(folder: str | Path, tokenizer: Any, size: Size = "tiny", **kwargs: Any) -> Path:
    """:func:`random_t5` saved with its tokenizer as a folder ``odqa read --model`` loads."""
    model = random_t5(tokenizer, size, **kwargs)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return Path(folder)
