"""Dataset loaders (to :class:`~odqa.records.Example`) and generators."""

from __future__ import annotations

from odqa.datasets.timeqa import load_timeqa

__all__ = ["load_timeqa"]
