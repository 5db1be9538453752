"""A temporal-overlap signal: how close the years a passage mentions are to the time a question asks about.

Temporal questions name a time ("in 1998", "before Mar 1811", "from 1995 to 1998", "in the early 1990s"); the
passage that answers them usually mentions years in or near that window. The question's window is parsed with a
few general rules (no dataset-specific patterns), each passage gets ``exp(-d / scale)`` where ``d`` is the
distance in years from its nearest mentioned year to the window (0 inside it), and 0 when it mentions no year.
Questions without a time get no signal at all, so scoring falls back to the other scorers unchanged.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["TimeWindow", "parse_window", "passage_years", "temporal_scores"]

_YEAR = r"(1[0-9]{3}|20[0-9]{2})"
_YEAR_RE = re.compile(rf"(?<![\d.,]){_YEAR}(?:s)?(?![\d])")
_DECADE_RE = re.compile(r"(?:\b(early|mid|late)[- ])?\b(1[0-9]{2}|20[0-9])0s\b", re.IGNORECASE)
_RANGE_RE = re.compile(
    rf"(?:from|between)\s+(?:\w+\s+){{0,2}}?{_YEAR}\s*(?:to|and|until|till|-|–)\s*(?:\w+\s+){{0,2}}?{_YEAR}",
                       re.IGNORECASE)
_BEFORE_RE = re.compile(rf"\b(?:before|prior to|until|till|by)\s+(?:\w+\.?\s+){{0,2}}?{_YEAR}", re.IGNORECASE)
_AFTER_RE = re.compile(rf"\b(?:after|since|following)\s+(?:\w+\.?\s+){{0,2}}?{_YEAR}", re.IGNORECASE)

# How far a "before X" / "after X" question looks from X, and how fast the signal decays outside the window.
_OPEN_SPAN = 10
_SCALE = 5.0


@dataclass(frozen=True)
class TimeWindow:
    """The years a question asks about, inclusive."""

    start: int
    end: int

    def distance(self, year: int) -> int:
        """Years from ``year`` to the window (0 inside it)."""
        if year < self.start:
            return self.start - year
        return max(0, year - self.end)


def parse_window(question: str) -> TimeWindow | None:
    """The time window a question names, or ``None`` when it names no year."""
    if m := _RANGE_RE.search(question):
        a, b = sorted((int(m.group(1)), int(m.group(2))))
        return TimeWindow(a, b)
    if m := _DECADE_RE.search(question):
        base = int(m.group(2)) * 10
        part = (m.group(1) or "").lower()
        offsets = {"early": (0, 3), "mid": (3, 6), "late": (6, 9)}.get(part, (0, 9))
        return TimeWindow(base + offsets[0], base + offsets[1])
    if m := _BEFORE_RE.search(question):
        year = int(m.group(1))
        return TimeWindow(year - _OPEN_SPAN, year)
    if m := _AFTER_RE.search(question):
        year = int(m.group(1))
        return TimeWindow(year, year + _OPEN_SPAN)
    years = [int(y) for y in _YEAR_RE.findall(question)]
    if not years:
        return None
    return TimeWindow(min(years), max(years))


def passage_years(text: str) -> list[int]:
    """Four-digit years (1000-2099) mentioned in ``text``."""
    return [int(y) for y in _YEAR_RE.findall(text)]


def temporal_scores(question: str, texts: Sequence[str], scale: float = _SCALE) -> np.ndarray | None:
    """Per-passage closeness in [0, 1] to the question's window; ``None`` if the question names no time."""
    window = parse_window(question)
    if window is None:
        return None
    scores = np.zeros(len(texts), dtype=np.float64)
    for i, text in enumerate(texts):
        years = passage_years(text)
        if years:
            scores[i] = math.exp(-min(window.distance(y) for y in years) / scale)
    return scores
