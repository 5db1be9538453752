"""Whole crawl runs against the fixture server (Wikipedia, Google stand-in): store, resume, export, CLI."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from fixture_server import (
    TSNE_TITLE,
    FixtureServer,
    Gate,
    Reply,
    add_articles,
    add_bing,
    add_brave,
    add_google,
    add_searxng,
    add_wikipedia,
    page_html,
)
from rich.console import Console
from typer.testing import CliRunner

from odqa.chunk import chunk_document
from odqa.cli import app
from odqa.crawl import CrawlConfig, export_jsonl, is_crawl_dir, iter_examples, run_crawl
from odqa.crawl.extract import ExtractorPool
from odqa.crawl.store import STORE_NAME, CrawlStore
from odqa.errors import CrawlError, FormatError
from odqa.inputs import load_examples
from odqa.io import read_dpr_tsv, read_fid
from odqa.records import Document

KEY = "test-google-key"
ENV = {"GOOGLE_API_KEY": KEY, "GOOGLE_CSE_ID": "test-cse-id"}
QUESTIONS = [
    {
        "id": "q1",
        "question": "What is t-distributed stochastic neighbor embedding used for?",
        "answers": ["visualization"],
        "subject": TSNE_TITLE,
    },
    {"id": "q2", "question": "Who founded Mozilla?", "answers": ["Netscape"]},
    {"id": "q3", "question": "A shared question about t-SNE", "answers": [], "subject": "T-SNE"},
]


def write_questions(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def web(server: FixtureServer) -> FixtureServer:
    """Wikipedia routes, 3 articles, a 404, a robots-disallowed page, an image; Google answers by word."""
    add_wikipedia(server)
    articles = add_articles(server, 3)
    server.route("/image.png", Reply(body=b"\x89PNG\r\n\x1a\n\x00\x00", content_type="image/png"))
    add_google(
        server,
        {
            "stochastic": [
                articles[0],
                articles[1],
                server.url(f"/wiki/{TSNE_TITLE.replace(' ', '_')}"),
                server.url("/private/page"),
                server.url("/missing"),
            ],
            "mozilla": [articles[1], server.url("/image.png"), articles[1] + "#fragment"],
            "shared": [articles[0]],
        },
    )
    return server


@pytest.fixture
def google_config(web: FixtureServer, make_config: Callable[..., CrawlConfig]) -> Callable[..., CrawlConfig]:
    def make(**overrides: Any) -> CrawlConfig:
        return make_config(
            **(
                {
                    "search": "google",
                    "top": 10,
                    "search_endpoint": web.url("/customsearch/v1"),
                    "wikipedia_endpoint": web.base,
                }
                | overrides
            )
        )

    return make


def test_full_run_stores_extracts_and_exports(
    tmp_path: Path, web: FixtureServer, google_config: Callable[..., CrawlConfig]
) -> None:
    questions = write_questions(tmp_path / "q.jsonl", QUESTIONS)
    out = tmp_path / "run"
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=100)
    summary = run_crawl(questions, out, google_config(extract_workers=1), environ=ENV, console=console)

    shown = screen.getvalue()  # the progress bars, as a terminal shows them
    assert "lookups" in shown and "6/6" in shown and "pages" in shown and f"{summary.pages}/{summary.pages}" in shown
    assert is_crawl_dir(out) and (out / "crawl.config.json").is_file()
    assert summary.questions == 3 and summary.pending == 0 and summary.lookups_failed == {}
    assert summary.failed == {"robots": 1, "http_404": 1, "not_html": 1}
    assert summary.extracted == summary.pages - 3 == summary.fetched
    assert web.hits("/article/1") == 1  # shared by q1 and q2 (and a #fragment variant): fetched once
    assert web.hits("/private/page") == 0

    examples = {e.id: e for e in iter_examples(out)}
    q1 = examples["q1"]
    assert q1.answers == ("visualization",) and q1.ctxs is not None
    assert q1.ctxs[0].meta["source"] == "wikipedia" and q1.ctxs[0].title == TSNE_TITLE
    assert "Given a set of high-dimensional objects" in q1.ctxs[0].text
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", q1.ctxs[0].meta["date"] or "")  # trafilatura's date, kept
    assert [d.meta["source"] for d in q1.ctxs] == ["wikipedia", "google", "google"]  # the /wiki/ result: the article
    assert [d.meta["rank"] for d in q1.ctxs[1:]] == [0, 1]
    assert q1.ctxs[1].title == "Article 0" and "history of topic number 0" in q1.ctxs[1].text
    mozilla = examples["q2"].ctxs or ()
    assert mozilla[0].title.startswith("Mozilla") and "free-software community" in mozilla[0].text
    assert mozilla[1].id == q1.ctxs[2].id  # the shared page keeps one id
    assert (examples["q3"].ctxs or ())[0].title == TSNE_TITLE  # REST redirect T-SNE -> the article

    exported = tmp_path / "export.jsonl"
    assert export_jsonl(out, exported) == 3
    back = {e.id: e for e in read_fid(exported)}
    assert [d.text for d in back["q1"].ctxs or ()] == [d.text for d in q1.ctxs]
    assert (back["q1"].ctxs or ())[0].url == web.url(f"/api/rest_v1/page/html/{TSNE_TITLE.replace(' ', '_')}")


def test_rerun_resumes_and_retry_failed_retries(
    tmp_path: Path, web: FixtureServer, google_config: Callable[..., CrawlConfig]
) -> None:
    questions = write_questions(tmp_path / "q.jsonl", QUESTIONS)
    out = tmp_path / "run"
    first = run_crawl(questions, out, google_config(), environ=ENV)
    hits = len(web.seen)
    again = run_crawl(questions, out, google_config(), environ=ENV)
    assert again == first and len(web.seen) == hits  # nothing left to do, nothing asked again

    web.route(
        "/missing",
        Reply(
            body="<html><body><article><p>"
            + "Now it exists with real words. " * 5
            + "</p></article></body></html>"
        ),
    )
    run_crawl(questions, out, google_config(), environ=ENV)
    assert web.hits("/missing") == 1  # a plain rerun leaves failures alone
    retried = run_crawl(questions, out, google_config(retry_failed=True), environ=ENV)
    assert web.hits("/missing") == 2 and "http_404" not in retried.failed
    assert retried.extracted == first.extracted + 1
    assert web.hits("/private/page") == 0  # robots still refuses it


# provider -> (fixture, API path, environment, key header, API requests for the top 25 of 30 results)
PROVIDERS: dict[str, tuple[Callable[..., None], str, dict[str, str], str | None, int]] = {
    "google": (add_google, "/customsearch/v1", ENV, "X-Goog-Api-Key", 3),
    "brave": (add_brave, "/res/v1/web/search", {"BRAVE_API_KEY": "test-brave-key"}, "X-Subscription-Token", 2),
    "bing": (add_bing, "/v7.0/search", {"BING_API_KEY": "test-bing-key"}, "Ocp-Apim-Subscription-Key", 1),
    "searxng": (add_searxng, "", {}, None, 3),
}


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_each_search_provider_end_to_end(
    provider: str, tmp_path: Path, server: FixtureServer, make_config: Callable[..., CrawlConfig]
) -> None:
    """Every provider's request and answer shape against a server that checks them as the real API does, paged
    past its first request where the API needs it; its key (from the environment) reaches the API, not the store."""
    add, path, environ, header, calls = PROVIDERS[provider]
    links = add_articles(server, 30)
    add(server, {"paged": links})
    questions = write_questions(tmp_path / "q.jsonl", [{"id": "p", "question": "A paged question"}])
    config = make_config(search=provider, top=25, search_endpoint=server.url(path), wikipedia=False)
    summary = run_crawl(questions, tmp_path / "run", config, environ=environ)
    assert summary.lookups_failed == {} and summary.failed == {} and summary.extracted == 25
    (example,) = iter_examples(tmp_path / "run")
    ctxs = example.ctxs or ()
    assert [d.url for d in ctxs] == links[:25] and [d.meta["rank"] for d in ctxs] == list(range(25))
    assert {d.meta["source"] for d in ctxs} == {provider} and "history of topic number 24" in ctxs[-1].text
    api = [seen for seen in server.seen if seen.path == (path or "/search")]
    assert len(api) == calls and all(seen.query["q"] == ["A paged question"] for seen in api)
    for name, secret in environ.items():
        if name.endswith("_API_KEY"):
            assert header is not None and all(seen.headers.get(header) == secret for seen in api)
        assert [p.name for p in (tmp_path / "run").iterdir() if secret.encode() in p.read_bytes()] == []


def test_wikipedia_action_api(tmp_path: Path, web: FixtureServer, make_config: Callable[..., CrawlConfig]) -> None:
    """``wikipedia_api: action`` reads articles from ``action=parse`` (every MediaWiki has it; REST is Wikimedia's),
    redirect pages followed, a missing article recorded as ``api_error``."""
    rows = [*QUESTIONS, {"id": "q4", "question": "Who is nobody?", "subject": "No such article"}]
    questions = write_questions(tmp_path / "q.jsonl", rows)
    config = make_config(wikipedia_endpoint=web.base, wikipedia_api="action")
    summary = run_crawl(questions, tmp_path / "run", config, environ={})
    assert summary.failed == {"api_error": 1} and summary.extracted == 3 and summary.lookups_failed == {}
    examples = {e.id: e for e in iter_examples(tmp_path / "run")}
    (tsne,) = examples["q1"].ctxs or ()
    assert tsne.title == TSNE_TITLE and tsne.url == web.url(f"/wiki/{TSNE_TITLE.replace(' ', '_')}")
    assert "Given a set of high-dimensional objects" in tsne.text and "Herein a heavy-tailed Student" in tsne.text
    assert "Categories:" not in tsne.text
    (mozilla,) = examples["q2"].ctxs or ()  # no subject: found with list=search
    assert mozilla.url == web.url("/wiki/Mozilla") and "free-software community" in mozilla.text
    (redirected,) = examples["q3"].ctxs or ()  # subject "T-SNE", a redirect page: same article, same id
    assert redirected.id == tsne.id and redirected.text == tsne.text
    assert examples["q4"].ctxs == ()
    assert [s.path for s in web.seen if s.path != "/w/api.php"] == []  # no REST, no robots.txt for the API
    with closing(sqlite3.connect(tmp_path / "run" / STORE_NAME)) as db:
        assert db.execute("SELECT detail FROM pages WHERE reason = 'api_error'").fetchone()[0].startswith(
            "missingtitle"
        )


def test_search_result_at_a_private_address_is_refused_by_default(
    tmp_path: Path, web: FixtureServer, google_config: Callable[..., CrawlConfig]
) -> None:
    """Configured endpoints (on 127.0.0.1) are trusted; a result pointing at another local service is not."""
    with FixtureServer() as internal:
        internal.route("/admin", Reply(body="<p>internal secrets</p>"))
        add_google(web, {"internal": [internal.url("/admin")]})
        questions = write_questions(tmp_path / "q.jsonl", [{"id": "x", "question": "internal admin page?"}])
        summary = run_crawl(
            questions, tmp_path / "run", google_config(allow_private=False, wikipedia=False), environ=ENV
        )
        assert summary.failed == {"blocked_address": 1}
        assert internal.seen == []


def test_search_result_on_a_configured_endpoint_host_is_not_trusted(
    tmp_path: Path, web: FixtureServer, google_config: Callable[..., CrawlConfig]
) -> None:
    """The search API and the Wikipedia mirror run on 127.0.0.1 (trusted for odqa's API requests); a search
    result naming that same host and port is a web page like any other, refused without --allow-private."""
    add_google(web, {"internal": [web.url("/article/0"), web.url("/private/page")]})
    questions = write_questions(tmp_path / "q.jsonl", [{"id": "x", "question": "internal admin page?"}])
    summary = run_crawl(
        questions, tmp_path / "run", google_config(allow_private=False, wikipedia=False), environ=ENV
    )
    assert summary.lookups_failed == {} and summary.failed == {"blocked_address": 2}
    assert web.hits("/article/0") == web.hits("/private/page") == web.hits("/robots.txt") == 0


def test_search_results_that_are_the_subject_article_are_that_article(
    tmp_path: Path, web: FixtureServer, google_config: Callable[..., CrawlConfig]
) -> None:
    """Search engines rank the subject's Wikipedia article first: every form of its URL (/wiki/, index.php?title=,
    percent-encoded, spaces, a fragment, a redirect) is the article fetched through the API, not a second copy."""
    key = TSNE_TITLE.replace(" ", "_")
    forms = [
        web.url(f"/wiki/{key}"),
        web.url(f"/w/index.php?title={quote(TSNE_TITLE)}"),
        web.url(f"/wiki/{quote(TSNE_TITLE)}#Details"),
        web.url("/wiki/T-SNE"),  # a redirect page: the same article once its final URL is known
        web.url("/article/0"),
    ]
    add_google(web, {"stochastic": forms})
    questions = write_questions(tmp_path / "q.jsonl", QUESTIONS[:1])
    summary = run_crawl(questions, tmp_path / "run", google_config(), environ=ENV)
    assert summary.failed == {} and summary.lookups_failed == {}
    (example,) = iter_examples(tmp_path / "run")
    ctxs = example.ctxs or ()
    assert [d.meta["source"] for d in ctxs] == ["wikipedia", "google"] and ctxs[1].title == "Article 0"
    assert [s.path for s in web.seen if s.path.startswith(("/wiki/", "/w/"))] == []  # never as a web page
    assert web.hits(f"/api/rest_v1/page/html/{key}") == 2  # once, and once more behind the T-SNE redirect
    assert summary.pages == 3  # the article, the redirect to it, Article 0


def test_failed_search_is_recorded_and_retried(
    tmp_path: Path, web: FixtureServer, google_config: Callable[..., CrawlConfig]
) -> None:
    questions = write_questions(tmp_path / "q.jsonl", QUESTIONS[:1])
    bad_keys = {"GOOGLE_API_KEY": "wrong-key", "GOOGLE_CSE_ID": "cx"}
    summary = run_crawl(questions, tmp_path / "run", google_config(), environ=bad_keys)
    assert summary.lookups_failed == {"google: http_403": 1}
    fixed = run_crawl(questions, tmp_path / "run", google_config(retry_failed=True), environ=ENV)
    assert fixed.lookups_failed == {} and fixed.extracted == 3  # its /wiki/ result is the article itself


def test_api_key_never_reaches_store_outputs_or_logs(
    tmp_path: Path,
    web: FixtureServer,
    google_config: Callable[..., CrawlConfig],
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    answer = web.handler("/customsearch/v1")
    failing = iter([Reply(500, "boom"), Reply(429, "", headers={"Retry-After": "0"})])
    web.route("/customsearch/v1", lambda seen: next(failing, None) or answer(seen))
    caplog.set_level(logging.DEBUG)
    questions = write_questions(tmp_path / "q.jsonl", QUESTIONS)
    out = tmp_path / "run"
    run_crawl(questions, out, google_config(), environ=ENV)
    export_jsonl(out, out / "export.jsonl")
    assert any(s.headers.get("X-Goog-Api-Key") == KEY for s in web.seen)  # it was used...
    leaked = [p.name for p in out.iterdir() if KEY.encode() in p.read_bytes()]
    assert leaked == []  # ...but is in no file of the run folder (store, WAL, config, export)
    captured = capsys.readouterr()
    assert KEY not in caplog.text and KEY not in captured.out and KEY not in captured.err


def test_offline_sources_dump_and_html_folder(
    tmp_path: Path, server: FixtureServer, make_config: Callable[..., CrawlConfig]
) -> None:
    """A dump saved from Special:Export and a folder of saved pages: the crawl itself touches no network."""
    add_wikipedia(server)
    dump = tmp_path / "dump.xml"
    dump.write_bytes(httpx.get(server.url("/wiki/Special:Export/Jerry_Mumphrey")).content)
    html_dir = tmp_path / "html"
    (html_dir / "m1").mkdir(parents=True)
    tsne = (
        Path(__file__).resolve().parent.parent / "data" / "web" / "trafilatura" / "en.wikipedia.org.tsne.html"
    )
    (html_dir / "m1" / "tsne.html").write_bytes(tsne.read_bytes())
    questions = write_questions(
        tmp_path / "q.jsonl",
        [
            {"id": "m1", "question": "Which teams did Jerry Mumphrey play for?", "subject": "Jerry Mumphrey"},
            {"id": "m2", "question": "No subject, nothing offline"},
        ],
    )
    config = make_config(dump=str(dump), html_dir=str(html_dir), allow_private=False)
    summary = run_crawl(questions, tmp_path / "run", config, environ={})
    assert summary.extracted == 2 and summary.failed == {}
    assert len(server.seen) == 1  # the Special:Export download above, nothing from the crawl
    (m1, m2) = iter_examples(tmp_path / "run")
    assert [d.meta["source"] for d in m1.ctxs or ()] == ["dump", "html"]
    assert (m1.ctxs or ())[0].text.startswith("Jerry Wayne Mumphrey (born September 9, 1952)")
    assert (m1.ctxs or ())[0].url == server.url("/wiki/Jerry_Mumphrey")
    assert "Given a set of high-dimensional objects" in (m1.ctxs or ())[1].text
    assert m2.ctxs == ()
    refine_input = list(load_examples(tmp_path / "run"))  # what `odqa refine crawl/NAME` reads
    assert [len(e.ctxs or ()) for e in refine_input] == [2, 0]


def test_a_subject_page_in_the_html_folder_stands_in_for_its_wikipedia_article(
    tmp_path: Path, server: FixtureServer, make_config: Callable[..., CrawlConfig]
) -> None:
    """Every subject has ``<Subject>.html`` in the folder: Wikipedia is not asked (offline, each would be a failed
    lookup; online, the article twice); a subject without a page still gets its article; --also-wikipedia asks."""
    add_wikipedia(server)
    html_dir = tmp_path / "html"
    html_dir.mkdir()
    tsne = Path(__file__).resolve().parent.parent / "data" / "web" / "trafilatura" / "en.wikipedia.org.tsne.html"
    (html_dir / f"{TSNE_TITLE.replace(' ', '_')}.html").write_bytes(tsne.read_bytes())
    rows = [{"id": "s1", "question": "What is t-SNE used for?", "subject": TSNE_TITLE},
            {"id": "s2", "question": "Who founded Mozilla?", "subject": "Mozilla"}]
    questions = write_questions(tmp_path / "q.jsonl", rows)
    config = make_config(html_dir=str(html_dir), wikipedia_endpoint=server.base)
    summary = run_crawl(questions, tmp_path / "run", config, environ={})
    article = f"/api/rest_v1/page/html/{TSNE_TITLE.replace(' ', '_')}"
    assert server.hits(article) == 0 and server.hits("/api/rest_v1/page/html/Mozilla") == 1
    assert summary.extracted == 2 and summary.failed == {} and summary.lookups_failed == {}
    s1, s2 = iter_examples(tmp_path / "run")
    assert [d.meta["source"] for d in s1.ctxs or ()] == ["html"]
    assert [d.meta["source"] for d in s2.ctxs or ()] == ["wikipedia"]
    run_crawl(questions, tmp_path / "run", config, environ={})  # a resumed run does not ask either
    assert server.hits(article) == 0

    both = run_crawl(questions, tmp_path / "both", replace(config, also_wikipedia=True), environ={})
    assert server.hits(article) == 1 and both.extracted == 3
    assert [d.meta["source"] for d in next(iter(iter_examples(tmp_path / "both"))).ctxs or ()] == ["wikipedia", "html"]


def test_search_result_that_is_the_dump_article_is_not_fetched(
    tmp_path: Path, server: FixtureServer, make_config: Callable[..., CrawlConfig]
) -> None:
    """With a dump of the configured Wikipedia, a search result naming the subject's article (any form) is the
    article the dump gave: not fetched from the web, one document."""
    add_wikipedia(server)
    forms = [server.url("/wiki/Jerry_Mumphrey"), server.url("/w/index.php?title=Jerry+Mumphrey")]
    add_google(server, {"mumphrey": forms})
    dump = tmp_path / "dump.xml"
    dump.write_bytes(httpx.get(server.url("/wiki/Special:Export/Jerry_Mumphrey")).content)
    questions = write_questions(
        tmp_path / "q.jsonl", [{"id": "m1", "question": "Jerry Mumphrey teams?", "subject": "Jerry Mumphrey"}]
    )
    config = make_config(
        dump=str(dump), wikipedia_endpoint=server.base, search="google", search_endpoint=server.url("/customsearch/v1")
    )
    summary = run_crawl(questions, tmp_path / "run", config, environ=ENV)
    assert summary.failed == {} and summary.pages == 1
    (m1,) = iter_examples(tmp_path / "run")
    assert [d.meta["source"] for d in m1.ctxs or ()] == ["dump"]
    assert [s.path for s in server.seen if s.path.startswith("/w")] == ["/wiki/Special:Export/Jerry_Mumphrey"]


def test_bad_inputs_are_clear_errors(tmp_path: Path, make_config: Callable[..., CrawlConfig]) -> None:
    dupes = write_questions(
        tmp_path / "d.jsonl", [{"id": "a", "question": "x?"}, {"id": "a", "question": "y?"}]
    )
    with pytest.raises(FormatError, match=r"d.jsonl:2: duplicate id 'a'"):
        run_crawl(dupes, tmp_path / "run", make_config())
    empty = write_questions(tmp_path / "e.jsonl", [{"id": "a", "question": "  "}])
    with pytest.raises(FormatError, match=r"e\.jsonl:1: empty 'question'"):
        run_crawl(empty, tmp_path / "run", make_config())
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / STORE_NAME).write_text("not a database", encoding="utf-8")
    with pytest.raises(CrawlError, match="not a usable crawl store"):
        list(iter_examples(tmp_path / "junk"))
    with pytest.raises(CrawlError, match="no crawl store here"):
        list(iter_examples(tmp_path))
    (tmp_path / "taken").write_text("a file, not a folder", encoding="utf-8")
    questions = write_questions(tmp_path / "q.jsonl", [{"id": "a", "question": "x?"}])
    with pytest.raises(CrawlError, match="cannot create the run folder"):
        run_crawl(questions, tmp_path / "taken", make_config())


def test_cli_runs_prints_summary_and_exports(tmp_path: Path, web: FixtureServer) -> None:
    questions = write_questions(tmp_path / "q.jsonl", QUESTIONS)
    out, export, tsv = tmp_path / "run", tmp_path / "out.jsonl", tmp_path / "psgs.tsv"
    config = tmp_path / "crawl.yaml"
    config.write_text(
        "timeout: 2\nretries: 0\nextract_workers: 0\ncontent_types: [text/html]\n", encoding="utf-8"
    )
    args = [
        "crawl",
        str(questions),
        "--out",
        str(out),
        "--search",
        "google",
        "--search-endpoint",
        web.url("/customsearch/v1"),
        "--wikipedia-endpoint",
        web.base,
        "--allow-private",
        "--contact",
        "mailto:me@example.org",
        "--delay",
        "0",
        "--config",
        str(config),
        "--export",
        str(export),
        "--export-passages",
        str(tsv),
    ]
    result = CliRunner().invoke(app, args, env=ENV)
    assert result.exit_code == 0, result.output
    assert "failed: robots" in result.output and "exported 3 questions" in result.output
    assert KEY not in result.output and len(export.read_text("utf-8").splitlines()) == 3
    exported = [json.loads(line) for line in export.read_text("utf-8").splitlines()]
    distinct = {c["id"]: c for row in exported for c in row["ctxs"]}
    passages = list(read_dpr_tsv(tsv))
    assert {p.doc_id for p in passages} == {c["title"] for c in distinct.values()}  # DPR TSV keeps titles only
    assert len(passages) == sum(len(chunk_document(Document(i, c["title"], c["text"]))) for i, c in distinct.items())
    assert all(len(p.text.split()) <= 100 for p in passages) and f"exported {len(passages)} passages" in result.output

    refined = tmp_path / "refined.jsonl"  # the next stage reads the crawl folder as it is
    step = CliRunner().invoke(app, ["refine", str(out), "--out", str(refined), "--scorer", "bm25", "--k", "3"])
    assert step.exit_code == 0, step.output
    rows = [json.loads(line) for line in refined.read_text("utf-8").splitlines()]
    assert [r["id"] for r in rows] == [r["id"] for r in exported]
    for row, source in zip(rows, exported, strict=True):
        assert (len(row["ctxs"]) > 0) == (len(source["ctxs"]) > 0) and len(row["ctxs"]) <= 3
        pages = {c["id"] for c in source["ctxs"]}  # passage ids are the page id, or "<page id>:<n>" for chunks
        assert all(c["id"] in pages or c["id"].rsplit(":", 1)[0] in pages for c in row["ctxs"])
    assert all("mailto:me@example.org" in seen.headers["User-Agent"] for seen in web.seen)

    missing = CliRunner().invoke(app, args, env={"GOOGLE_API_KEY": "", "GOOGLE_CSE_ID": ""})
    assert missing.exit_code == 1
    assert "ConfigError: search 'google' needs the environment variable(s) GOOGLE_API_KEY" in flat(
        missing.output
    )
    typo = tmp_path / "typo.yaml"
    typo.write_text("concurency: 3\n", encoding="utf-8")
    bad = CliRunner().invoke(app, ["crawl", str(questions), "--out", str(out), "--config", str(typo)])
    assert bad.exit_code == 1 and "unknown key(s) ['concurency']" in flat(bad.output)
    api = CliRunner().invoke(app, ["crawl", str(questions), "--out", str(out), "--wikipedia-api", "raw"])
    assert api.exit_code == 1 and "wikipedia_api must be 'rest' or 'action', got 'raw'" in flat(api.output)


def flat(text: str) -> str:
    """Console output without rich's line wrapping."""
    return " ".join(text.split())


def _stored(store: Path) -> int:
    try:
        with closing(sqlite3.connect(f"{store.as_uri()}?mode=ro", uri=True)) as db:
            return int(db.execute("SELECT COUNT(*) FROM pages").fetchone()[0])
    except sqlite3.OperationalError:
        return 0  # not created yet


def _interrupt(
    command: list[str], env: dict[str, str], store: Path, after: int, sig: signal.Signals
) -> tuple[int, str]:
    """Start the crawl in its own process group, and once ``after`` pages are stored send ``sig``: SIGINT to the
    whole group, as Ctrl-C in a terminal does (extraction workers included), SIGKILL to the crawl process alone,
    as a crash would. Returns its exit status and what it printed; nothing may print a traceback."""
    with subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    ) as crawler:
        try:
            deadline = time.monotonic() + 60
            while _stored(store) < after and crawler.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
        finally:
            if sig == signal.SIGINT:
                os.killpg(crawler.pid, sig)
            else:
                crawler.send_signal(sig)
        _out, err = crawler.communicate(timeout=60)  # a hang guard, not a speed test
    assert b"Traceback" not in err, err.decode()
    return crawler.returncode, flat(err.decode())


def test_sigkill_then_ctrl_c_mid_crawl_then_resume(tmp_path: Path, server: FixtureServer) -> None:
    """Killed (SIGKILL), resumed and interrupted (Ctrl-C), resumed again: every page once, nothing lost, and
    the pages in flight at Ctrl-C are not recorded as failures (they would never be fetched again).

    The server lets a known number of article requests through per phase and holds the rest, so "mid-way" is
    a count the test sets, not a guess about how fast a busy machine crawls."""
    add_wikipedia(server)
    gate = Gate()
    links = add_articles(server, 60, gate=gate)
    add_google(server, {"question": links})
    rows = [{"id": f"k{n}", "question": f"question number {n}", "subject": TSNE_TITLE} for n in range(3)]
    questions = write_questions(tmp_path / "q.jsonl", rows)
    out = tmp_path / "run"
    store = out / STORE_NAME
    command = [
        sys.executable,
        "-c",
        "from odqa.cli import main; main()",
        "crawl",
        str(questions),
        "--out",
        str(out),
        "--search",
        "google",
        "--top",
        "60",
        "--search-endpoint",
        server.url("/customsearch/v1"),
        "--wikipedia-endpoint",
        server.base,
        "--allow-private",
        "--concurrency",
        "4",
        "--per-host",
        "4",
        "--delay",
        "0",
    ]
    env = os.environ | ENV
    gate.open(10)
    assert _interrupt(command, env, store, 5, signal.SIGKILL)[0] == -signal.SIGKILL
    killed_at = _stored(store)
    assert 5 <= killed_at <= 11, f"the crawl was not caught mid-way ({killed_at} pages stored)"  # 10 + the article
    with closing(sqlite3.connect(store)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    gate.open(10)
    status, printed = _interrupt(command, env, store, killed_at + 5, signal.SIGINT)
    assert status == 130 and "rerun the same command to continue" in printed
    with closing(sqlite3.connect(store)) as db:
        stopped_at = db.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
        assert db.execute("SELECT reason, COUNT(*) FROM pages WHERE status = 'failed' GROUP BY reason").fetchall() == []
    assert killed_at + 5 <= stopped_at <= killed_at + 11, f"Ctrl-C did not come mid-way ({stopped_at} pages stored)"
    assert f"not yet fetched │ {61 - stopped_at} (rerun to continue)" in printed  # the summary, at Ctrl-C too

    gate.open(1000)
    resumed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    with closing(sqlite3.connect(store)) as db:
        urls = [u for (u,) in db.execute("SELECT url FROM pages")]
        wanted = {u for (u,) in db.execute("SELECT DISTINCT url FROM results")}
        statuses = {s for (s,) in db.execute("SELECT status FROM pages")}
        per_question = dict(db.execute("SELECT question_id, COUNT(*) FROM results GROUP BY question_id"))
    assert len(urls) == len(set(urls)) == len(wanted) == 61  # every page once, none missing
    assert statuses == {"ok"} and per_question == {"k0": 61, "k1": 61, "k2": 61}
    refetched = sum(server.hits(f"/article/{n}") for n in range(60)) - 60
    assert 0 <= refetched <= 2 * 4 * 4  # at most the pages in flight, twice (concurrency x 4: fetching or extracting)


def test_page_declaring_a_non_text_codec_is_stored_not_a_crash(
    tmp_path: Path, server: FixtureServer, make_config: Callable[..., CrawlConfig]
) -> None:
    """``charset=rot13`` or ``base64`` (codecs.lookup knows them, bytes.decode refuses them) once aborted the run."""
    html = page_html("Hostile", ["A page whose header names a codec that is not a text encoding at all."])
    links = []
    for codec in ("rot13", "base64", "zlib"):
        server.route(f"/{codec}", Reply(body=html, content_type=f"text/html; charset={codec}"))
        links.append(server.url(f"/{codec}"))
    add_google(server, {"hostile": links})
    questions = write_questions(tmp_path / "q.jsonl", [{"id": "h", "question": "hostile codecs?"}])
    config = make_config(search="google", search_endpoint=server.url("/customsearch/v1"), wikipedia=False)
    summary = run_crawl(questions, tmp_path / "run", config, environ=ENV)
    assert summary.failed == {} and summary.extracted == 3
    (example,) = iter_examples(tmp_path / "run")
    assert all("not a text encoding" in d.text for d in example.ctxs or ())


def test_unexpected_page_or_lookup_error_is_recorded_and_the_run_goes_on(
    tmp_path: Path,
    web: FixtureServer,
    google_config: Callable[..., CrawlConfig],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A bulk stage never aborts on one bad item: the item gets ``error`` with the exception type."""
    real_extract = ExtractorPool.aextract

    async def extract(self: ExtractorPool, html: str, url: str | None = None) -> Any:
        if url and url.endswith("/article/1"):
            raise RuntimeError("a bug in some extractor")
        return await real_extract(self, html, url)

    monkeypatch.setattr(ExtractorPool, "aextract", extract)
    web.route("/w/api.php", Reply(body='{"query": ["not", "a", "mapping"]}', content_type="application/json"))
    questions = write_questions(tmp_path / "q.jsonl", QUESTIONS[:2])  # q2 has no subject: a Wikipedia search
    with caplog.at_level(logging.WARNING, logger="odqa.crawl.runner"):
        summary = run_crawl(questions, tmp_path / "run", google_config(), environ=ENV)
    assert summary.failed["error"] == 1 and summary.extracted == 2
    assert summary.lookups_failed == {"wikipedia: error": 1}
    with closing(sqlite3.connect(tmp_path / "run" / STORE_NAME)) as db:
        assert db.execute("SELECT detail FROM pages WHERE reason = 'error'").fetchall() == [("RuntimeError",)]
        assert db.execute("SELECT detail FROM lookups WHERE reason = 'error'").fetchall() == [("AttributeError",)]
    assert "RuntimeError" in caplog.text and "AttributeError" in caplog.text


def test_keyboard_interrupt_in_a_page_is_not_swallowed(
    tmp_path: Path,
    web: FixtureServer,
    google_config: Callable[..., CrawlConfig],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def extract(self: ExtractorPool, html: str, url: str | None = None) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(ExtractorPool, "aextract", extract)
    questions = write_questions(tmp_path / "q.jsonl", QUESTIONS[:1])
    with pytest.raises(KeyboardInterrupt):
        run_crawl(questions, tmp_path / "run", google_config(wikipedia=False), environ=ENV)
    with closing(sqlite3.connect(tmp_path / "run" / STORE_NAME)) as db:
        assert db.execute("SELECT COUNT(*) FROM pages WHERE status = 'ok' OR reason = 'error'").fetchone() == (0,)


def test_iter_examples_holds_no_open_store_between_examples(
    tmp_path: Path, web: FixtureServer, google_config: Callable[..., CrawlConfig], monkeypatch: pytest.MonkeyPatch
) -> None:
    questions = write_questions(tmp_path / "q.jsonl", QUESTIONS)
    run_crawl(questions, tmp_path / "run", google_config(), environ=ENV)
    open_stores: set[int] = set()
    real_init, real_close = CrawlStore.__init__, CrawlStore.close

    def init(self: CrawlStore, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        open_stores.add(id(self))

    def close(self: CrawlStore) -> None:
        open_stores.discard(id(self))
        real_close(self)

    monkeypatch.setattr(CrawlStore, "__init__", init)
    monkeypatch.setattr(CrawlStore, "close", close)
    examples = iter_examples(tmp_path / "run")
    first = next(examples)  # a consumer that stops here, and never closes the iterator
    assert first.id == "q1" and first.ctxs and open_stores == set()
    assert [e.id for e in examples] == ["q2", "q3"] and open_stores == set()
