"""Data generators from the papers: HieraDate probing questions and Complex-TR pseudo-instruction data."""

from __future__ import annotations

from odqa.generate.hieradate import DatePair, Person, hieradate_probes, read_date_pairs

__all__ = ["DatePair", "Person", "hieradate_probes", "read_date_pairs"]
