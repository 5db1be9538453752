"""Sentence-embedding presets and the encoder over sentence-transformers (with a persistent cache)."""

from __future__ import annotations

from odqa.embed.encoder import (
    Encoder,
    check_device,
    query_precision,
    resolve_backend,
    resolve_model,
    resolve_precision,
)
from odqa.embed.presets import PRESETS, Preset, get_preset, passage_text, query_text
from odqa.embed.spec import VectorSpec

__all__ = [
    "PRESETS", "Encoder", "Preset", "VectorSpec", "check_device", "get_preset", "passage_text", "query_precision",
    "query_text", "resolve_backend", "resolve_model", "resolve_precision",
]
