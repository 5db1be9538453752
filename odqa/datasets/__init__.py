"""Dataset loaders (to :class:`~odqa.records.Example`) and generators."""

from __future__ import annotations

from odqa.datasets.complex_tr import load_complex_tr, parse_complex_tr_id
from odqa.datasets.fid import to_fid, write_examples_fid
from odqa.datasets.hieradate import load_hieradate, probe_examples
from odqa.datasets.hybridqa import load_hybridqa, load_table, table_passages
from odqa.datasets.jemhopqa import load_jemhopqa
from odqa.datasets.timeqa import load_timeqa

__all__ = [
    "load_complex_tr",
    "load_hieradate",
    "load_hybridqa",
    "load_jemhopqa",
    "load_table",
    "load_timeqa",
    "parse_complex_tr_id",
    "probe_examples",
    "table_passages",
    "to_fid",
    "write_examples_fid",
]
