"""The crawl store: one SQLite database (WAL mode) per run folder, ``crawl.sqlite``.

Tables: ``questions`` (the input records), ``lookups`` (one per question and source: Wikipedia, a search
engine, the dump, the HTML folder, with its outcome), ``results`` (the ranked URLs a lookup gave), ``pages``
(one row per normalised URL, fetched once however many questions share it, with its status and reason).
Every write is one transaction, so a killed process loses at most the work in flight and never leaves a
half-written row. One writer at a time: a writable store holds an exclusive lock on ``crawl.sqlite.lock`` beside
it (two crawls into one folder would fetch the same pending pages twice); readers need no lock.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from odqa._optional import require
from odqa.errors import CrawlError
from odqa.io import ID_KEYS, example_from_dict
from odqa.records import Example

__all__ = ["STORE_NAME", "CrawlStore", "PageRow", "ResultRow", "Summary", "normalise_url", "split_reason"]

STORE_NAME = "crawl.sqlite"
SCHEMA_VERSION = "1"
API_SOURCES = frozenset({"wikipedia"})  # fetched from an API: robots.txt does not apply

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS questions (
    id TEXT PRIMARY KEY,
    position INTEGER NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS questions_by_position ON questions (position);
CREATE TABLE IF NOT EXISTS lookups (
    question_id TEXT NOT NULL REFERENCES questions(id),
    source TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    reason TEXT,
    detail TEXT,
    finished_at REAL NOT NULL,
    PRIMARY KEY (question_id, source)
);
CREATE TABLE IF NOT EXISTS results (
    question_id TEXT NOT NULL REFERENCES questions(id),
    source TEXT NOT NULL,
    rank INTEGER NOT NULL,
    url TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (question_id, source, rank)
);
CREATE INDEX IF NOT EXISTS results_by_url ON results (url);
CREATE TABLE IF NOT EXISTS pages (
    url TEXT PRIMARY KEY,
    final_url TEXT,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    reason TEXT,
    detail TEXT,
    http_status INTEGER,
    content_type TEXT,
    title TEXT,
    date TEXT,
    text TEXT,
    finished_at REAL NOT NULL
);
"""


def normalise_url(url: str) -> str:
    """The key of a web page: courlan's normal form (lower-case host, sorted query, no default port), without
    the fragment, which never changes what the server sends."""
    if not url.lower().startswith(("http://", "https://")):
        return url
    courlan = require("courlan", "crawl")
    try:
        return str(courlan.normalize_url(url)).split("#", 1)[0]
    except ValueError:
        return url


def split_reason(error: str | None) -> tuple[str | None, str | None]:
    """``"http_404: detail"`` -> ``("http_404", "detail")``: the short reason is what summaries count."""
    if not error:
        return None, None
    reason, _, detail = error.partition(": ")
    return reason, detail or None


@dataclass(frozen=True)
class ResultRow:
    """One ranked URL a lookup gave for a question."""

    url: str
    rank: int
    title: str = ""


@dataclass(frozen=True)
class PageRow:
    """The stored outcome of one page: its text when ``status == "ok"``, else its reason."""

    url: str
    status: str
    reason: str | None = None
    detail: str | None = None
    final_url: str | None = None
    http_status: int | None = None
    content_type: str | None = None
    title: str | None = None
    date: str | None = None
    text: str | None = None


@dataclass(frozen=True)
class Summary:
    """What a run folder holds: counts for the end-of-run table and for tests."""

    questions: int
    lookups_failed: dict[str, int]
    pages: int
    fetched: int
    extracted: int
    failed: dict[str, int]
    pending: int


class CrawlStore:
    """The SQLite store of one run folder. Use as a context manager; every write method is one transaction."""

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        if readonly and not self.path.is_file():
            raise CrawlError(f"{self.path}: no crawl store here; run `odqa crawl QUESTIONS --out DIR` first")
        self._lock: IO[str] | None = None if readonly else self._take_lock()
        try:
            if readonly:
                self._db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
            else:
                self._db = sqlite3.connect(self.path, isolation_level=None)
        except sqlite3.DatabaseError as exc:
            self._release_lock()
            raise CrawlError(f"{self.path}: not a usable crawl store ({exc}); use another --out folder") from exc
        try:
            if not readonly:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")  # WAL: a killed process loses no commit
                self._db.executescript(_SCHEMA)
            self._db.execute("PRAGMA busy_timeout=10000")
            self._check_version(readonly)
        except BaseException as exc:
            self.close()  # a refused store must not leave its connection open, nor the folder locked
            if isinstance(exc, sqlite3.DatabaseError):
                message = f"{self.path}: not a usable crawl store ({exc}); use another --out folder"
                raise CrawlError(message) from exc
            raise

    def _take_lock(self) -> IO[str]:
        """Lock the run folder for this process, or say which process already holds it."""
        lock_path = self.path.with_name(self.path.name + ".lock")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            lock = lock_path.open("a+", encoding="utf-8")
        except OSError as exc:
            raise CrawlError(f"{self.path.parent}: cannot create the run folder ({exc.strerror})") from exc
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "unknown"
            lock.close()
            raise CrawlError(
                f"{self.path.parent}: another crawl (process {holder}) is writing to this run folder; wait for it "
                "to finish or stop it, or use another --out folder"
            ) from None
        lock.seek(0)
        lock.truncate()
        lock.write(str(os.getpid()))
        lock.flush()
        return lock

    def _release_lock(self) -> None:
        if self._lock is not None:
            self._lock.close()  # closing the file releases the lock
            self._lock = None

    def _check_version(self, readonly: bool) -> None:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is None and not readonly:
            self._db.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
        elif row is None or row[0] != SCHEMA_VERSION:
            found = "no schema version" if row is None else f"schema {row[0]}"
            raise CrawlError(f"{self.path}: {found}, this odqa reads schema {SCHEMA_VERSION}; "
                             "use a new --out folder")

    def __enter__(self) -> CrawlStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()
        self._release_lock()

    def _write(self, statements: Iterable[tuple[str, Sequence[Any]]]) -> None:
        """Run ``statements`` as one transaction: all of them, or none."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            for sql, params in statements:
                self._db.execute(sql, params)
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def add_questions(self, examples: Sequence[tuple[Example, dict[str, Any]]]) -> None:
        """Record the input questions (record as given) after the stored ones; ones already stored are kept as
        they are. A question without an id (stored under its input index) that clashes with a different stored
        question is an error: it is another question, which would otherwise be dropped."""
        rows = [(example.id, json.dumps(record, ensure_ascii=False)) for example, record in examples]
        for (qid, text), (_example, record) in zip(rows, examples, strict=True):
            stored = self._db.execute("SELECT record FROM questions WHERE id = ?", (qid,)).fetchone()
            id_less = all(record.get(key) in (None, "") for key in ID_KEYS)
            if stored is not None and stored[0] != text and id_less:
                raise CrawlError(
                    f"{self.path.parent}: a question without an id gets its input index as id, and id {qid!r} is "
                    "already another question of this run folder (from an earlier input file); give each "
                    "question an 'id', or use another --out folder"
                )
        self._write(  # the position is read inside the transaction, by the INSERT itself
            (
                "INSERT OR IGNORE INTO questions (id, position, record) "
                "VALUES (?, (SELECT COALESCE(MAX(position) + 1, 0) FROM questions), ?)",
                row,
            )
            for row in rows
        )

    def _example(self, qid: str, position: int, record: str) -> tuple[Example, dict[str, Any]]:
        """A stored question under its stored id (an id-less one's input index, not its store position)."""
        obj = json.loads(record)
        return replace(example_from_dict(obj, path=self.path, index=position), id=qid), obj

    def examples(self) -> Iterator[tuple[Example, dict[str, Any]]]:
        """Stored questions in input order, with the records they came from."""
        rows = self._db.execute("SELECT id, position, record FROM questions ORDER BY position").fetchall()
        for qid, position, record in rows:
            yield self._example(qid, position, record)

    def examples_after(self, position: int, limit: int) -> list[tuple[int, Example]]:
        """At most ``limit`` stored questions after input position ``position``, as (position, example)."""
        rows = self._db.execute(
            "SELECT id, position, record FROM questions WHERE position > ? ORDER BY position LIMIT ?",
            (position, limit),
        ).fetchall()
        return [(at, self._example(qid, at, record)[0]) for qid, at, record in rows]

    def pending_lookups(self, sources: Sequence[str], *, retry_failed: bool) -> list[tuple[Example, str]]:
        """(question, source) pairs still to look up: never done, or failed when ``retry_failed``."""
        done = {
            (qid, source)
            for qid, source, status in self._db.execute("SELECT question_id, source, status FROM lookups")
            if status == "ok" or not retry_failed
        }
        return [
            (example, source)
            for example, _record in self.examples()
            for source in sources
            if (example.id, source) not in done
        ]

    def save_lookup(
        self,
        question_id: str,
        source: str,
        results: Sequence[ResultRow],
        *,
        error: str | None = None,
        pages: Sequence[PageRow] = (),
    ) -> None:
        """Replace a lookup's results (and store pages it already produced, e.g. from a dump) in one go."""
        reason, detail = split_reason(error)
        statements: list[tuple[str, Sequence[Any]]] = [
            ("DELETE FROM results WHERE question_id = ? AND source = ?", (question_id, source)),
            *(
                (
                    "INSERT INTO results (question_id, source, rank, url, title) VALUES (?, ?, ?, ?, ?)",
                    (question_id, source, r.rank, r.url, r.title),
                )
                for r in results
            ),
            *(self._page_statement(page) for page in pages),
            (
                "INSERT INTO lookups (question_id, source, status, reason, detail, finished_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (question_id, source) DO UPDATE SET "
                "status = excluded.status, reason = excluded.reason, detail = excluded.detail, "
                "finished_at = excluded.finished_at",
                (question_id, source, "failed" if error else "ok", reason, detail, time.time()),
            ),
        ]
        self._write(statements)

    def pending_pages(self, *, retry_failed: bool) -> list[tuple[str, bool]]:
        """(url, check_robots) for each result URL with no stored page (or a failed one, when retrying).

        Ordered by first appearance; robots.txt applies unless every lookup that gave the URL is an API.
        """
        api = ", ".join(f"'{s}'" for s in sorted(API_SOURCES))
        rows = self._db.execute(
            f"SELECT r.url, MAX(r.source NOT IN ({api})) FROM results r LEFT JOIN pages p ON p.url = r.url "
            "WHERE p.url IS NULL OR (? AND p.status = 'failed') GROUP BY r.url ORDER BY MIN(r.rowid)",
            (retry_failed,),
        ).fetchall()
        return [(url, bool(robots)) for url, robots in rows]

    @staticmethod
    def _page_statement(page: PageRow) -> tuple[str, Sequence[Any]]:
        return (
            "INSERT INTO pages (url, final_url, status, reason, detail, http_status, content_type, title, "
            "date, text, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (url) DO UPDATE SET "
            "final_url = excluded.final_url, status = excluded.status, reason = excluded.reason, "
            "detail = excluded.detail, http_status = excluded.http_status, "
            "content_type = excluded.content_type, title = excluded.title, date = excluded.date, "
            "text = excluded.text, finished_at = excluded.finished_at",
            (
                page.url,
                page.final_url,
                page.status,
                page.reason,
                page.detail,
                page.http_status,
                page.content_type,
                page.title,
                page.date,
                page.text,
                time.time(),
            ),
        )

    def save_page(self, page: PageRow) -> None:
        """Store one page's outcome (replacing an earlier failure when retrying)."""
        self._write([self._page_statement(page)])

    def documents(self, question_id: str) -> list[tuple[str, ResultRow, PageRow]]:
        """(source, result, page) for each extracted page of one question, in source then rank order."""
        rows = self._db.execute(
            "SELECT r.source, r.rank, r.url, r.title, p.final_url, p.title, p.date, p.text FROM results r "
            "JOIN pages p ON p.url = r.url WHERE r.question_id = ? AND p.status = 'ok' "
            "ORDER BY CASE r.source WHEN 'wikipedia' THEN 0 WHEN 'dump' THEN 0 WHEN 'html' THEN 1 ELSE 2 END,"
            " r.rank",
            (question_id,),
        ).fetchall()
        return [
            (
                source,
                ResultRow(url, rank, rtitle),
                PageRow(url, "ok", final_url=final, title=ptitle, date=date, text=text),
            )
            for source, rank, url, rtitle, final, ptitle, date, text in rows
        ]

    def summary(self) -> Summary:
        """Counts over the whole store: questions, pages fetched / extracted, failures by reason."""
        one = self._db.execute
        failed = Counter(
            dict(one("SELECT reason, COUNT(*) FROM pages WHERE status = 'failed' GROUP BY reason"))
        )
        lookups = Counter(
            dict(
                one(
                    "SELECT source || ': ' || reason, COUNT(*) FROM lookups "
                    "WHERE status = 'failed' GROUP BY source, reason"
                )
            )
        )
        extracted = one("SELECT COUNT(*) FROM pages WHERE status = 'ok'").fetchone()[0]
        fetched = extracted + sum(n for r, n in failed.items() if r and r.startswith("extraction_"))
        return Summary(
            questions=one("SELECT COUNT(*) FROM questions").fetchone()[0],
            lookups_failed=dict(lookups),
            pages=one("SELECT COUNT(*) FROM pages").fetchone()[0],
            fetched=fetched,
            extracted=extracted,
            failed=dict(failed),
            pending=len(self.pending_pages(retry_failed=False)),
        )
