"""Passages to index, streamed from whatever a user points ``odqa index build`` at.

- JSON Lines (or a JSON array) of passages ``{id, doc_id?, title?, text}``;
- DPR TSV ``id\\ttext\\ttitle`` (``.tsv``, optionally gzipped), with or without the header row;
- any question file odqa loads, or an ``odqa crawl`` folder: each question's candidates chunked as refine chunks
  them, each passage id and each passage text once (questions about one subject share their articles);
- a HybridQA ``WikiTables-WithLinks`` folder (it has ``tables_tok/``): every table, by sorted id, as its row
  passages then its linked-page passages (:func:`odqa.datasets.hybridqa.table_passages`, unchunked, as refine
  ``--tables`` scores them). A page linked from several tables is indexed once per table, so that each hit
  names the table it belongs to (its id, ``<table_id>#row=<r>`` or ``<table_id>#<link>``).
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from odqa.chunk import chunk
from odqa.config import ChunkConfig
from odqa.datasets.hybridqa import is_tables_dir, iter_tables, table_passages
from odqa.errors import FormatError, InputError
from odqa.io import read_dpr_tsv, read_json_or_jsonl
from odqa.records import Passage

__all__ = ["open_passages", "read_passages"]


def _is_tsv(path: Path) -> bool:
    suffixes = [s.lower() for s in path.suffixes]
    return bool(suffixes) and (suffixes[-1] == ".tsv" or (len(suffixes) > 1 and suffixes[-2] == ".tsv"))


def _passage(obj: Mapping[str, Any], path: Path, line: int | None) -> Passage:
    pid, text = obj.get("id"), obj.get("text")
    if pid in (None, "") or not isinstance(text, str):
        raise FormatError("a passage needs an 'id' and a 'text' string ({id, doc_id?, title?, text})", path=path,
                          line=line)
    doc_id = obj.get("doc_id")
    return Passage(id=str(pid), doc_id=str(pid) if doc_id in (None, "") else str(doc_id),
                   title=str(obj.get("title") or ""), text=text)


def _from_questions(path: Path, config: ChunkConfig) -> Iterator[Passage]:
    from odqa.inputs import load_examples

    # Questions repeat their articles (and a crawl may hold one page under two URLs): each passage id, and each
    # passage text (refine's rule, odqa.refine.distinct_passages), is indexed once. Such corpora are small.
    seen_ids: set[str] = set()
    seen_texts: set[bytes] = set()
    for example in load_examples(path):
        for passage in chunk(example.ctxs or (), config):
            text = hashlib.blake2b(passage.text.encode(), digest_size=16).digest()
            if passage.id not in seen_ids and text not in seen_texts:
                seen_ids.add(passage.id)
                seen_texts.add(text)
                yield passage


def _from_tables(path: Path) -> Iterator[Passage]:
    for table in iter_tables(path):  # one table in memory at a time
        yield from table_passages(table)


def read_passages(path: str | Path, config: ChunkConfig | None = None) -> Iterator[Passage]:
    """The passages of ``path`` in a stable order (see the module docstring for the accepted inputs)."""
    path = Path(path)
    config = config or ChunkConfig()
    if path.is_dir():
        yield from (_from_tables(path) if is_tables_dir(path) else _from_questions(path, config))
        return
    if _is_tsv(path):
        yield from read_dpr_tsv(path)
        return
    records = read_json_or_jsonl(path)
    first = next(records, None)
    if first is None:
        return
    if "question" in first[1]:
        yield from _from_questions(path, config)
        return
    yield _passage(first[1], path, first[0])
    for line, obj in records:
        yield _passage(obj, path, line)


def open_passages(path: str | Path, config: ChunkConfig | None = None) -> Iterator[Passage]:
    """:func:`read_passages`, with the first passage read before this returns: a missing, unreadable or empty
    input fails here, before any slow work (a model load) or any output starts; the rest is read lazily."""
    passages = read_passages(path, config)
    first = next(passages, None)
    if first is None:
        raise InputError(f"{path} holds no passages; expected JSON Lines {{id, title, text}}, DPR TSV, a question "
                         "file, a crawl folder or a HybridQA WikiTables-WithLinks folder (tables_tok/*.json)")
    return itertools.chain([first], passages)
