"""The SQLite store: URL keys, all-or-nothing writes, pending work, summaries."""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from odqa.crawl.export import iter_examples
from odqa.crawl.store import CrawlStore, PageRow, ResultRow, normalise_url, split_reason
from odqa.errors import CrawlError, InputError
from odqa.inputs import load_examples
from odqa.records import Example


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("HTTP://Example.COM:80/a?b=2&a=1#frag", "http://example.com/a?a=1&b=2"),
        ("https://example.com:443/x#y", "https://example.com/x"),
        ("file:///tmp/a.html", "file:///tmp/a.html"),
    ],
)
def test_normalise_url(url: str, key: str) -> None:
    assert normalise_url(url) == key


def test_split_reason() -> None:
    assert split_reason("http_404") == ("http_404", None)
    assert split_reason("not_html: Content-Type 'image/png'") == ("not_html", "Content-Type 'image/png'")
    assert split_reason(None) == (None, None)


def _store(tmp_path: Path) -> CrawlStore:
    store = CrawlStore(tmp_path / "crawl.sqlite")
    store.add_questions(
        [
            (Example(id="a", question="A?"), {"id": "a", "question": "A?"}),
            (Example(id="b", question="B?"), {"id": "b", "question": "B?"}),
        ]
    )
    return store


def test_store_is_in_wal_mode_with_a_schema_version(tmp_path: Path) -> None:
    """WAL: a reader (``odqa refine`` on a running crawl) never blocks the writer, and a kill loses no commit."""
    _store(tmp_path).close()
    with closing(sqlite3.connect(tmp_path / "crawl.sqlite")) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("1",)
        db.execute("UPDATE meta SET value = '0' WHERE key = 'schema'")
        db.commit()
    with pytest.raises(CrawlError, match="schema 0, this odqa reads schema 1"):
        CrawlStore(tmp_path / "crawl.sqlite")


def test_lookup_and_page_lifecycle(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        assert [(e.id, s) for e, s in store.pending_lookups(["wikipedia", "google"], retry_failed=False)] == [
            ("a", "wikipedia"),
            ("a", "google"),
            ("b", "wikipedia"),
            ("b", "google"),
        ]
        store.save_lookup("a", "wikipedia", [ResultRow("https://w.org/A", 0, "A")])
        store.save_lookup("a", "google", [ResultRow("https://x.org/1", 0), ResultRow("https://w.org/A", 1)])
        store.save_lookup("b", "google", [], error="http_429: quota")
        pending = store.pending_lookups(["wikipedia", "google"], retry_failed=False)
        assert [(e.id, s) for e, s in pending] == [("b", "wikipedia")]
        assert len(store.pending_lookups(["wikipedia", "google"], retry_failed=True)) == 2
        assert store.pending_pages(retry_failed=False) == [
            ("https://w.org/A", True),
            ("https://x.org/1", True),
        ]

        store.save_page(PageRow("https://w.org/A", "ok", title="A", text="text of A"))
        store.save_page(PageRow("https://x.org/1", "failed", reason="timeout"))
        assert store.pending_pages(retry_failed=False) == []
        assert store.pending_pages(retry_failed=True) == [("https://x.org/1", True)]
        docs = store.documents("a")
        assert [(source, result.rank) for source, result, _page in docs] == [("wikipedia", 0), ("google", 1)]
        summary = store.summary()
        assert (summary.questions, summary.pages, summary.extracted) == (2, 2, 1)
        assert summary.failed == {"timeout": 1} and summary.lookups_failed == {"google: http_429": 1}


def test_wikipedia_pages_skip_robots_unless_also_a_search_result(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        store.save_lookup("a", "wikipedia", [ResultRow("https://w.org/api/A", 0)])
        store.save_lookup("b", "wikipedia", [ResultRow("https://w.org/api/B", 0)])
        store.save_lookup("b", "google", [ResultRow("https://w.org/api/B", 0)])
        assert dict(store.pending_pages(retry_failed=False)) == {
            "https://w.org/api/A": False,
            "https://w.org/api/B": True,
        }


def test_a_failing_write_leaves_nothing_behind(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        bad = PageRow("https://x.org/1", "maybe")  # violates the status CHECK constraint
        with pytest.raises(Exception, match="CHECK constraint"):
            store.save_lookup("a", "google", [ResultRow("https://x.org/1", 0)], pages=[bad])
        assert store.pending_pages(retry_failed=False) == []  # the results of that lookup were rolled back
        assert len(store.pending_lookups(["google"], retry_failed=False)) == 2


def test_questions_are_added_once(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        store.add_questions(
            [
                (Example(id="a", question="A changed?"), {"id": "a", "question": "A changed?"}),
                (Example(id="c", question="C?"), {"id": "c", "question": "C?"}),
            ]
        )
        assert [(e.id, e.question) for e, _ in store.examples()] == [("a", "A?"), ("b", "B?"), ("c", "C?")]


def test_iter_examples_reads_in_batches_in_input_order(tmp_path: Path) -> None:
    ids = [f"q{n:03d}" for n in range(150)]  # more than two batches
    with CrawlStore(tmp_path / "crawl.sqlite") as store:
        store.add_questions([(Example(id=i, question=f"{i}?"), {"id": i, "question": f"{i}?"}) for i in ids])
        store.save_lookup("q149", "html", [ResultRow("file:///x.html", 0, "X")],
                          pages=[PageRow("file:///x.html", "ok", title="X", text="words")])
    examples = list(iter_examples(tmp_path))
    assert [e.id for e in examples] == ids
    assert [d.text for d in examples[-1].ctxs or ()] == ["words"] and examples[0].ctxs == ()
    assert [e.id for e in load_examples(tmp_path)] == ids  # detect.py recognises the folder by its store


def test_folder_without_a_crawl_store_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not an `odqa crawl` output folder"):
        list(load_examples(tmp_path))


def test_questions_without_ids_keep_their_ids_when_a_second_file_extends_the_store(tmp_path: Path) -> None:
    """An id-less question is stored under its input index ("0", "1", ...); reading back must give that id, not
    its position in a store that an earlier input file already filled."""
    with _store(tmp_path) as store:  # a, b: positions 0 and 1
        store.add_questions([(Example(id="0", question="No id?"), {"question": "No id?"})])
        assert [e.id for e, _ in store.examples()] == ["a", "b", "0"]
        assert [(at, e.id) for at, e in store.examples_after(-1, 10)] == [(0, "a"), (1, "b"), (2, "0")]
    assert [e.id for e in iter_examples(tmp_path)] == ["a", "b", "0"]


def test_an_id_less_question_clashing_with_a_stored_one_is_an_error(tmp_path: Path) -> None:
    """Two input files without ids both number their questions from 0: the second one's question "0" is another
    question, which must not be dropped silently as "already stored"."""
    with CrawlStore(tmp_path / "crawl.sqlite") as store:
        store.add_questions([(Example(id="0", question="First?"), {"question": "First?"})])
        store.add_questions([(Example(id="0", question="First?"), {"question": "First?"})])  # a resume: fine
        with pytest.raises(CrawlError, match=r"id '0'.*give each question an 'id'"):
            store.add_questions([(Example(id="0", question="Other?"), {"question": "Other?"})])
        assert [e.question for e, _ in store.examples()] == ["First?"]


def test_a_second_writer_on_the_run_folder_is_refused(tmp_path: Path) -> None:
    """Two crawls into one folder at once would fetch the same pending pages twice: the second one is told which
    process holds the folder. Readers (``odqa refine`` on a running crawl) are not affected."""
    with _store(tmp_path):
        with pytest.raises(CrawlError, match=rf"another crawl \(process {os.getpid()}\) is writing"):
            CrawlStore(tmp_path / "crawl.sqlite")
        with CrawlStore(tmp_path / "crawl.sqlite", readonly=True) as reader:
            assert reader.summary().questions == 2
    with CrawlStore(tmp_path / "crawl.sqlite") as again:  # released on close
        assert again.summary().questions == 2


def test_positions_are_read_inside_the_write_transaction(tmp_path: Path) -> None:
    """The next position comes from the INSERT itself: a writer that read MAX(position) before another one
    committed (here: a write slipped in just before the transaction starts) would reuse its positions."""
    with _store(tmp_path) as store, closing(sqlite3.connect(tmp_path / "crawl.sqlite")) as other:
        def race(statement: str) -> None:
            if statement == "BEGIN IMMEDIATE" and not other.in_transaction:
                other.execute("INSERT INTO questions VALUES ('x', 2, '{\"id\": \"x\", \"question\": \"X?\"}')")
                other.commit()

        store._db.set_trace_callback(race)
        store.add_questions([(Example(id="c", question="C?"), {"id": "c", "question": "C?"})])
        store._db.set_trace_callback(None)
        assert [(at, e.id) for at, e in store.examples_after(-1, 10)] == [(0, "a"), (1, "b"), (2, "x"), (3, "c")]
