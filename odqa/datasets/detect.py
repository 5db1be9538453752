"""Which dataset a questions file holds, and its examples read by that dataset's own loader.

Detected from the first record (or, for Complex-TR's SQuAD-style evaluation file, the first line), so every
dataset's candidates are read where that dataset keeps them: TimeQA ``paragraphs``/``paras``, HieraDate
``context``, Complex-TR ``passages``/``context``, FiD/Atlas ``ctxs``/``passages``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from odqa.datasets.complex_tr import is_complex_tr, is_squad_style, load_complex_tr
from odqa.datasets.hieradate import is_hieradate, load_hieradate
from odqa.datasets.jemhopqa import is_jemhopqa, load_jemhopqa
from odqa.datasets.timeqa import is_timeqa, load_timeqa
from odqa.errors import InputError
from odqa.io import read_fid, read_json_or_jsonl
from odqa.records import Example

__all__ = ["DatasetFormat", "detect_format", "load_dataset"]

DatasetFormat = Literal["timeqa", "hieradate", "jemhopqa", "hybridqa", "complex-tr", "fid"]

_LOADERS: dict[DatasetFormat, Callable[[Path], Iterator[Example]]] = {
    "timeqa": load_timeqa,
    "hieradate": load_hieradate,
    "jemhopqa": load_jemhopqa,
    "complex-tr": load_complex_tr,
    "fid": read_fid,
}


def _is_hybridqa(obj: Mapping[str, Any]) -> bool:
    return "question_id" in obj and "table_id" in obj


_RECORD_TESTS: tuple[tuple[DatasetFormat, Callable[[Mapping[str, Any]], bool]], ...] = (
    ("timeqa", is_timeqa),
    ("hieradate", is_hieradate),
    ("jemhopqa", is_jemhopqa),
    ("hybridqa", _is_hybridqa),
    ("complex-tr", is_complex_tr),
)


def detect_format(path: str | Path) -> DatasetFormat | None:
    """The dataset ``path`` holds, from its first record; ``fid`` for any other question records, ``None`` for
    a file without records."""
    path = Path(path)
    if is_squad_style(path):
        return "complex-tr"
    first = next(iter(read_json_or_jsonl(path)), None)
    if first is None:
        return None
    return next((name for name, test in _RECORD_TESTS if test(first[1])), "fid")


def load_dataset(path: str | Path) -> Iterator[Example]:
    """The examples of a questions file, read by its dataset's loader (see :func:`detect_format`)."""
    path = Path(path)
    name = detect_format(path)
    if name is None:
        return iter(())
    if name == "hybridqa":
        raise InputError(
            f"{path} holds HybridQA questions, whose candidates are rows and linked passages of their tables: "
            "give the tables folder, `odqa refine QUESTIONS --tables WikiTables-WithLinks/ --out OUT.jsonl` "
            "(odqa.tables.refine_tables_to_file) or `odqa retrieve QUESTIONS --tables WikiTables-WithLinks/ --index "
            "indexes/NAME --out OUT.jsonl`, or read them with odqa.datasets.load_hybridqa(questions, tables_dir)"
        )
    return _LOADERS[name](path)
