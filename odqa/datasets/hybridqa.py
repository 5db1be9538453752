"""HybridQA (Chen et al., 2020; paper 003): questions over a Wikipedia table and the pages its cells link to.

Files, as the HybridQA repository lays them out:

- ``WikiTables-WithLinks/tables_tok/<table_id>.json``: ``{url, title, header, data, section_title,
  section_text, uid}``; ``header`` and every cell of ``data`` are ``[text, [link, ...]]``;
- ``WikiTables-WithLinks/request_tok/<table_id>.json``: ``{link: introduction text of the linked page}``;
- questions (``train.json``, ``dev.json``, ...): a JSON array of ``{question_id, question, table_id,
  answer-text?, ...}``.

A table becomes documents: one per row, ``"header: value"`` pairs (title = table title), and one per linked
page, tied to the cells that link to it; ``meta["kind"]`` says which (``"row"`` or ``"passage"``) and
``meta["cells"]`` which cells (``[[row, column], ...]``: every cell of a row, the linking cells of a page).

A whole ``WikiTables-WithLinks`` folder is read one table at a time, in sorted id order (:func:`iter_tables`),
for corpus indexes over many tables (``odqa index build WikiTables-WithLinks/``); a passage id names its table
(:func:`table_of`), so :class:`TableAnnotator` marks the hits of any index built from such a folder with their
table, kind and cells.

Each question's ``meta["answer_from"]`` says where its answer lies, ``"table"`` (a cell) or ``"passage"`` (a
linked page), as HybridQA splits its evaluation: from the official trace (``answer-node``, in the released
``*.traced.json`` files) when the record has one, else found in the table itself (see :func:`answer_source`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import unquote

from odqa.errors import FormatError, InputError
from odqa.evaluate.answers import has_answer, recall_at_k
from odqa.io import read_json, read_json_or_jsonl
from odqa.records import Document, Example, Passage

__all__ = [
    "AnswerSource",
    "Cell",
    "Table",
    "TableAnnotator",
    "answer_source",
    "is_tables_dir",
    "iter_tables",
    "load_hybridqa",
    "load_table",
    "table_documents",
    "table_ids",
    "table_of",
    "table_passages",
]


@dataclass(frozen=True, slots=True)
class Cell:
    """One table cell: its text and the Wikipedia links it carries (``/wiki/...``)."""

    text: str
    links: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Table:
    """A HybridQA table with the introductions of the pages its cells link to (``passages``: link -> text)."""

    id: str
    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    url: str = ""
    section_title: str = ""
    section_text: str = ""
    passages: Mapping[str, str] = field(default_factory=dict)

    def row_id(self, row: int) -> str:
        """The passage id of a row: ``<table_id>#row=<row>`` (:func:`table_of` reads the table back)."""
        return f"{self.id}#row={row}"

    def link_id(self, link: str) -> str:
        """The passage id of a linked page: ``<table_id>#<link>``."""
        return f"{self.id}#{link}"

    def cells_linking(self) -> dict[str, list[tuple[int, int]]]:
        """Each link that has a passage, with the ``(row, column)`` of every cell that carries it."""
        cells: dict[str, list[tuple[int, int]]] = {}
        for r, row in enumerate(self.rows):
            for c, cell in enumerate(row):
                for link in cell.links:
                    if link in self.passages:
                        cells.setdefault(link, []).append((r, c))
        return cells


def table_of(passage_id: str) -> str:
    """The table id in a row or linked-page passage id (:meth:`Table.row_id`, :meth:`Table.link_id`): the part
    before the first ``#``, which a table id (a Wikipedia title and a number) never holds, though a link may."""
    return passage_id.split("#", 1)[0]


def is_tables_dir(path: str | Path) -> bool:
    """Whether ``path`` is a HybridQA ``WikiTables-WithLinks`` folder (it has ``tables_tok/``)."""
    return (Path(path) / "tables_tok").is_dir()


def table_ids(tables_dir: str | Path) -> list[str]:
    """The ids of the tables in a ``WikiTables-WithLinks`` folder (``tables_tok/<id>.json``), sorted."""
    return sorted(path.stem for path in (Path(tables_dir) / "tables_tok").glob("*.json"))


def iter_tables(tables_dir: str | Path) -> Iterator[Table]:
    """Every table of a ``WikiTables-WithLinks`` folder with its linked passages, one at a time, by sorted id."""
    for table_id in table_ids(tables_dir):
        yield load_table(tables_dir, table_id)


def load_table(tables_dir: str | Path, table_id: str) -> Table:
    """Read one table and its linked passages from a ``WikiTables-WithLinks`` directory."""
    root = Path(tables_dir)
    table_path = root / "tables_tok" / f"{table_id}.json"
    request_path = root / "request_tok" / f"{table_id}.json"
    if not table_path.is_file():
        raise InputError(f"table {table_id!r} not found at {table_path}; point tables_dir at HybridQA's "
                         "WikiTables-WithLinks directory (with tables_tok/ and request_tok/)")
    raw = read_json(table_path)
    passages = read_json(request_path) if request_path.is_file() else {}
    if not isinstance(passages, dict) or not all(isinstance(v, str) for v in passages.values()):
        raise FormatError(f"expected an object {{link: passage text}}, got a JSON {type(passages).__name__}",
                          path=request_path)
    if not isinstance(raw, dict):
        raise FormatError(f"not a HybridQA table: got a JSON {type(raw).__name__}; expected an object with url, "
                          "title, header and data (cells as [text, [link, ...]])", path=table_path)
    try:
        header = tuple(_cell(h).text for h in raw["header"])
        rows = tuple(tuple(_cell(c) for c in row) for row in raw["data"])
        title = str(raw["title"])
    except (KeyError, TypeError, ValueError) as exc:
        raise FormatError(f"not a HybridQA table (bad or missing {exc}); expected url, title, header and "
                          "data with cells as [text, [link, ...]]", path=table_path) from exc
    for number, row in enumerate(rows):
        if len(row) != len(header):
            raise FormatError(f"row {number} has {len(row)} cells, the header {len(header)}", path=table_path)
    return Table(id=str(raw.get("uid") or table_id), title=title, header=header, rows=rows,
                 url=str(raw.get("url") or ""), section_title=str(raw.get("section_title") or ""),
                 section_text=str(raw.get("section_text") or ""), passages=passages)


def _cell(raw: Any) -> Cell:
    text, links = raw
    if not isinstance(text, str) or not isinstance(links, list):
        raise ValueError(f"cell {raw!r}")
    return Cell(text, tuple(str(link) for link in links))


def _page_title(link: str) -> str:
    # "/wiki/Bay,_Somalia" -> "Bay, Somalia"
    return unquote(link.rsplit("/", 1)[-1]).replace("_", " ")


def table_documents(table: Table) -> tuple[Document, ...]:
    """Row documents (``meta["kind"] == "row"``) then linked-page documents (``"passage"``), table order."""
    docs = []
    for r, row in enumerate(table.rows):
        text = "; ".join(f"{name}: {cell.text}" for name, cell in zip(table.header, row, strict=True))
        links = sorted({link for cell in row for link in cell.links if link in table.passages})
        docs.append(Document(id=table.row_id(r), title=table.title, text=text, url=table.url,
                             meta={"kind": "row", "table_id": table.id, "row": r, "links": links,
                                   "cells": [[r, c] for c in range(len(row))]}))
    for link, cells in table.cells_linking().items():
        docs.append(Document(id=table.link_id(link), title=_page_title(link), text=table.passages[link],
                             meta={"kind": "passage", "table_id": table.id, "link": link,
                                   "cells": [list(cell) for cell in cells]}))
    return tuple(docs)


def table_passages(table: Table) -> list[Passage]:
    """:func:`table_documents` as retrievable passages (ids keep the row or the link)."""
    return [Passage(id=d.id, doc_id=table.id, title=d.title, text=d.text) for d in table_documents(table)]


AnswerSource = Literal["table", "passage"]


def answer_source(record: Mapping[str, Any], table: Table) -> AnswerSource | None:
    """Where a question's answer lies: ``"table"`` or ``"passage"``, or None when it cannot be told.

    The official trace decides when the record has one (``answer-node``: ``[text, [row, column], link,
    "table" | "passage"]`` per node; a question with any table node is a table question, as in the official
    ``dev_reference.json`` split). Without it, as the released ``trace_answer.py`` looks, cells first:
    ``"table"`` when a cell contains the answer (DPR has_answer: a whole-token span, so "2015" is in
    "2015-2019"), else ``"passage"`` when a linked page does, else None.
    """
    nodes = record.get("answer-node")
    if isinstance(nodes, list) and nodes:
        kinds = {node[3] for node in nodes if isinstance(node, list) and len(node) == 4}
        if "table" in kinds:
            return "table"
        return "passage" if "passage" in kinds else None
    answer = record.get("answer-text")
    if not isinstance(answer, str):
        return None
    if any(has_answer(cell.text, [answer]) for row in table.rows for cell in row):
        return "table"
    if any(has_answer(table.passages[link], [answer]) for link in table.cells_linking()):
        return "passage"
    return None


class _Ranked(Protocol):
    """A ranked question, as :class:`odqa.refine.Refined` holds one (loaders do not import the stages)."""

    @property
    def example(self) -> Example: ...


class TableAnnotator:
    """Marks the FiD records of HybridQA questions (the ``annotate`` hook of ``odqa.pipeline.write_results``).

    Each ctx gets its ``kind`` (``row`` or ``passage``), ``cells`` and ``table_id``, looked up by passage id in
    ``tables_dir`` (so the hits of an index over many tables are marked as well as a question's own
    candidates); each record gets its question's ``table_id`` and ``answer_from``. It also notes, per question
    with a table, which ctxs come from that table: :meth:`table_recall`.
    """

    def __init__(self, tables_dir: str | Path, cached: int = 64) -> None:
        self.tables_dir = Path(tables_dir)
        self.own_table: list[list[bool]] = []  # per question with a table: is each ctx (best first) from it
        self._documents = functools.lru_cache(maxsize=cached)(self._load)  # questions of a table come together

    def _load(self, table_id: str) -> dict[str, Mapping[str, Any]]:
        return {doc.id: doc.meta for doc in table_documents(load_table(self.tables_dir, table_id))}

    def ctx_meta(self, passage_id: str) -> Mapping[str, Any]:
        """What a row or linked-page passage is: ``kind``, ``table_id``, ``cells`` (see :func:`table_documents`)."""
        table_id = table_of(passage_id)
        meta = self._documents(table_id).get(passage_id)
        if meta is None:
            raise InputError(f"passage {passage_id!r} is no row or linked page of table {table_id!r} in "
                             f"{self.tables_dir}; pass the WikiTables-WithLinks folder the index was built from")
        return meta

    def __call__(self, item: _Ranked, record: dict[str, Any]) -> None:
        ctxs = record["ctxs" if "ctxs" in record else "passages"]
        for ctx in ctxs:
            meta = self.ctx_meta(ctx["id"])
            ctx["kind"], ctx["cells"], ctx["table_id"] = meta["kind"], meta["cells"], meta["table_id"]
        table_id = item.example.meta.get("table_id")
        record["table_id"] = table_id
        record["answer_from"] = item.example.meta.get("answer_from")
        if table_id is not None:
            self.own_table.append([ctx["table_id"] == table_id for ctx in ctxs])

    def table_recall(self, ks: Sequence[int]) -> dict[int, float]:
        """Share of the questions annotated so far with a ctx of their own table in the top k, for each k."""
        return recall_at_k(self.own_table, ks) if self.own_table else {}


def load_hybridqa(questions: str | Path, tables_dir: str | Path, *, cached: int = 64) -> Iterator[Example]:
    """Yield one example per question, its table as context (rows and linked passages, see module doc).

    The ``cached`` tables used last are kept (questions of a table mostly come together), so memory is bounded
    however many tables the questions name."""
    path = Path(questions)
    table_of_id = functools.lru_cache(maxsize=cached)(functools.partial(load_table, tables_dir))
    for line, obj in read_json_or_jsonl(path):
        try:
            qid, question, table_id = obj["question_id"], obj["question"], obj["table_id"]
        except KeyError as exc:
            raise FormatError(f"not a HybridQA question: missing {exc}; expected question_id, question, "
                              "table_id and, with gold, answer-text", path=path, line=line) from exc
        if not isinstance(table_id, str) or not table_id:
            raise FormatError(f"HybridQA question {qid!r}: table_id must be the name of a table file (a string), "
                              f"got {table_id!r}", path=path, line=line)
        answer = obj.get("answer-text")
        if not isinstance(question, str) or (answer is not None and not isinstance(answer, str)):
            raise FormatError(f"HybridQA question {qid!r}: question and answer-text must be strings, got "
                              f"{question!r} and {answer!r}", path=path, line=line)
        table = table_of_id(table_id)
        known = {"question_id", "question", "table_id", "answer-text"}
        meta = {k: v for k, v in obj.items() if k not in known} | {
            "dataset": "hybridqa", "table_id": table_id, "table_title": table.title,
            "answer_from": answer_source(obj, table)}
        answers = () if answer is None else (answer,)
        yield Example(id=str(qid), question=question, answers=answers, ctxs=table_documents(table),
                      meta=meta)
