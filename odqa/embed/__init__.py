"""Sentence-embedding presets and the encoder over sentence-transformers (with a persistent cache)."""

from __future__ import annotations

from odqa.embed.encoder import Encoder, check_device, resolve_backend, resolve_model, resolve_precision
from odqa.embed.presets import PRESETS, Preset, get_preset, passage_text, query_text

__all__ = [
    "PRESETS", "Encoder", "Preset", "check_device", "get_preset", "passage_text", "query_text", "resolve_backend",
    "resolve_model", "resolve_precision",
]
