"""A crawl folder as questions with their documents (what ``odqa refine crawl/NAME`` reads), as JSON Lines or
passages, and its summary."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from odqa.chunk import chunk_document
from odqa.config import ChunkConfig
from odqa.crawl.store import STORE_NAME, CrawlStore, Summary, normalise_url
from odqa.io import write_dpr_tsv, write_jsonl
from odqa.records import Document, Example, Passage

__all__ = ["document_id", "export_jsonl", "export_passages", "is_crawl_dir", "iter_examples", "read_summary"]


def is_crawl_dir(path: str | Path) -> bool:
    """True for a folder written by ``odqa crawl`` (it holds ``crawl.sqlite``)."""
    return (Path(path) / STORE_NAME).is_file()


def read_summary(run_dir: str | Path) -> Summary:
    """The counts of a crawl folder, finished or not (what ``odqa crawl`` prints at the end)."""
    with CrawlStore(Path(run_dir) / STORE_NAME, readonly=True) as store:
        return store.summary()


def document_id(url: str) -> str:
    """A stable id for a page, the same in every run and for every question that shares it."""
    return "web:" + hashlib.sha1(url.encode("utf-8")).hexdigest()[:16]


_BATCH = 64  # questions read per store visit: bounds memory, and no connection stays open between yields


def iter_examples(run_dir: str | Path) -> Iterator[Example]:
    """One Example per question, in input order, with its extracted pages as ``ctxs`` (Wikipedia first, then
    by rank).

    A page that several lookups of one question returned, or that several of its URLs redirect to, appears once
    (keyed by its final URL, which also makes its id). Failed pages are left out. Questions
    are read in small batches, each with its own short-lived read-only connection, so a consumer that stops
    early (or never closes the iterator) holds no open store.
    """
    path = Path(run_dir) / STORE_NAME
    after = -1
    while True:
        with CrawlStore(path, readonly=True) as store:
            batch = [(at, _with_documents(store, example)) for at, example in store.examples_after(after, _BATCH)]
        if not batch:
            return
        after = batch[-1][0]
        for _at, example in batch:
            yield example


def _with_documents(store: CrawlStore, example: Example) -> Example:
    docs: list[Document] = []
    seen: set[str] = set()
    for source, result, page in store.documents(example.id):
        key = normalise_url(page.final_url or page.url)
        if key in seen:
            continue
        seen.add(key)
        docs.append(
            Document(
                id=document_id(key),
                title=page.title or result.title,
                text=page.text or "",
                url=page.final_url or page.url,
                meta={"source": source, "rank": result.rank, "date": page.date},
            )
        )
    return replace(example, ctxs=tuple(docs))


def _row(example: Example) -> dict[str, Any]:
    ctxs = [
        {"id": d.id, "title": d.title, "text": d.text, "url": d.url, **d.meta} for d in example.ctxs or ()
    ]
    row: dict[str, Any] = {"id": example.id, "question": example.question, "answers": list(example.answers)}
    if example.subject:
        row["subject"] = example.subject
    if example.meta:
        row["meta"] = dict(example.meta)
    row["ctxs"] = ctxs
    return row


def export_jsonl(run_dir: str | Path, path: str | Path) -> int:
    """Write the crawl as question JSON Lines with ``ctxs`` (read by every odqa stage); returns the count."""
    return write_jsonl(path, (_row(example) for example in iter_examples(run_dir)))


def export_passages(run_dir: str | Path, path: str | Path, config: ChunkConfig | None = None) -> int:
    """Write every distinct extracted page, chunked (DPR rule by default), as DPR passages TSV; returns the
    number of passages. Pages shared by several questions are written once."""
    seen: set[str] = set()

    def passages() -> Iterator[Passage]:
        for example in iter_examples(run_dir):
            for doc in example.ctxs or ():
                if doc.id not in seen:
                    seen.add(doc.id)
                    yield from chunk_document(doc, config)

    return write_dpr_tsv(path, passages())
