"""Calendar dates that may lack a month or a day, and exact age arithmetic in years, months and days.

Wikidata and Wikipedia give dates at year, month or day precision. A :class:`PartialDate` keeps the precision
for display and, for arithmetic, fills a missing month or day with 1 (HieraDate, paper 000, appendix B.2).
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dateutil.relativedelta import relativedelta

__all__ = ["Age", "PartialDate", "age_between", "parse_date"]

_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): number for number, name in enumerate(calendar.month_abbr) if name}
_MONTHS["sept"] = 9
_MONTH = r"(?P<month>[A-Za-z]{3,9})\.?"
_PATTERNS = (
    # 1910-09-03, 1910-09, 1910
    re.compile(r"(?P<year>\d{1,4})(?:-(?P<mnum>\d{1,2})(?:-(?P<day>\d{1,2}))?)?"),
    re.compile(_MONTH + r"\s+(?P<day>\d{1,2}),?\s+(?P<year>\d{1,4})"),  # September 3, 1910
    re.compile(r"(?P<day>\d{1,2})\s+" + _MONTH + r",?\s+(?P<year>\d{1,4})"),  # 3 September 1910
    re.compile(_MONTH + r",?\s+(?P<year>\d{1,4})"),  # September 1910
)
_FORMATS = "'1910-09-03', '1910-09', '1910', 'September 3, 1910', '3 September 1910', 'September 1910'"


@dataclass(frozen=True, slots=True)
class PartialDate:
    """A date known to the year, the month or the day; ``None`` marks the missing parts."""

    year: int
    month: int | None = None
    day: int | None = None

    def __post_init__(self) -> None:
        if self.day is not None and self.month is None:
            raise ValueError(f"a day ({self.day}) needs a month; got year {self.year} with no month")
        if not 1 <= self.year <= 9999:
            raise ValueError(f"year {self.year} is outside 1..9999")
        if self.month is not None and not 1 <= self.month <= 12:
            raise ValueError(f"month {self.month} is outside 1..12")
        if self.day is not None and self.month is not None:
            last = calendar.monthrange(self.year, self.month)[1]
            if not 1 <= self.day <= last:
                raise ValueError(f"day {self.day} is outside 1..{last} for {calendar.month_name[self.month]} "
                                 f"{self.year}")

    def filled(self) -> dt.date:
        """The calendar date used for arithmetic: a missing month or day counts as 1."""
        return dt.date(self.year, self.month or 1, self.day or 1)

    def text(self) -> str:
        """The date as written at its own precision: 'September 3, 1910', 'May 1992' or '1718'."""
        if self.month is None:
            return str(self.year)
        month = calendar.month_name[self.month]
        return f"{month} {self.year}" if self.day is None else f"{month} {self.day}, {self.year}"

    def as_dict(self) -> dict[str, int]:
        """``{"year", "month", "day"}`` with missing parts filled with 1, as HieraDate stores answers."""
        filled = self.filled()
        return {"year": filled.year, "month": filled.month, "day": filled.day}


def parse_date(value: Any) -> PartialDate:
    """Read a date from text (several common forms) or from ``{"year", "month"?, "day"?}`` (0 = unknown).

    Raises :class:`ValueError` saying what was received and which forms are valid.
    """
    if isinstance(value, Mapping):
        return _from_mapping(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return PartialDate(value)
    if not isinstance(value, str):
        raise ValueError(f"expected a date string or a {{year, month, day}} object, got {value!r}")
    text = value.strip()
    for pattern in _PATTERNS:
        match = pattern.fullmatch(text)
        if match is None:
            continue
        parts = match.groupdict()
        if parts.get("month") is not None:
            month = _MONTHS.get(parts["month"].lower())
            if month is None:
                break
        else:
            month = int(parts["mnum"]) if parts.get("mnum") else None
        day = int(parts["day"]) if parts.get("day") else None
        return PartialDate(int(parts["year"]), month, day)
    raise ValueError(f"cannot read the date {value!r}; valid forms: {_FORMATS}")


def _from_mapping(value: Mapping[str, Any]) -> PartialDate:
    try:
        year, month, day = (int(value.get(key) or 0) for key in ("year", "month", "day"))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"date object {dict(value)!r} must hold integers for year, month, day") from exc
    if year == 0:
        raise ValueError(f"date object {dict(value)!r} has no year")
    return PartialDate(year, month or None, (day or None) if month else None)


@dataclass(frozen=True, slots=True, order=True)
class Age:
    """A span in whole years, months and days; orders as the tuple (years, months, days)."""

    years: int
    months: int
    days: int

    def text(self, *, year_only: bool = False) -> str:
        """'90-year-10-month-1-day-old' (paper 000, Figure 1) or '90-year-old' for the year-only version."""
        if year_only:
            return f"{self.years}-year-old"
        return f"{self.years}-year-{self.months}-month-{self.days}-day-old"


def age_between(start: dt.date, end: dt.date) -> Age:
    """Whole years, then months, then days from ``start`` to ``end``, by calendar (dateutil's relativedelta: a
    month added to the 31st ends on the target month's last day)."""
    if end < start:
        raise ValueError(f"end {end.isoformat()} is before start {start.isoformat()}")
    span = relativedelta(end, start)
    return Age(span.years, span.months, span.days)
