"""Data generators from the papers: HieraDate probing questions and Complex-TR pseudo-instruction data."""

from __future__ import annotations

from odqa.generate.hieradate import DatePair, HieraDateConfig, Person, hieradate_probes, read_date_pairs
from odqa.generate.pseudo import PseudoConfig, TemporalFact, pseudo_instruction_data, read_temporal_facts

__all__ = [
    "DatePair",
    "HieraDateConfig",
    "Person",
    "PseudoConfig",
    "TemporalFact",
    "hieradate_probes",
    "pseudo_instruction_data",
    "read_date_pairs",
    "read_temporal_facts",
]
