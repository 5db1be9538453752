"""Metrics: answer EM/F1 and retrieval recall here; dataset-specific metrics in submodules."""

from __future__ import annotations

from odqa.evaluate.answers import exact_match, has_answer, normalize_answer, recall_at_k, token_f1

__all__ = ["exact_match", "has_answer", "normalize_answer", "recall_at_k", "token_f1"]
