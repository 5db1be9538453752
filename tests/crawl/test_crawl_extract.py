"""Extraction of real Wikipedia pages, and the worker pool's time limit."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest

from odqa.crawl.extract import Extraction, ExtractorPool, _Worker, extract_html
from odqa.errors import CrawlError

WEB = Path(__file__).resolve().parent.parent / "data" / "web"


def test_tsne_page_matches_trafilatura_expectations() -> None:
    html = (WEB / "trafilatura" / "en.wikipedia.org.tsne.html").read_text(encoding="utf-8")
    result = extract_html(html, "https://en.wikipedia.org/wiki/T-distributed_stochastic_neighbor_embedding")
    assert result.reason is None
    assert result.title == "T-distributed stochastic neighbor embedding"
    assert "Given a set of high-dimensional objects" in result.text
    assert "Herein a heavy-tailed Student t-distribution" in result.text
    assert "Categories:" not in result.text
    assert "Conditional random field" not in result.text


def test_mozilla_page_keeps_title_and_lead() -> None:
    html = (WEB / "readability" / "wikipedia" / "source.html").read_text(encoding="utf-8")
    expected = json.loads((WEB / "readability" / "wikipedia" / "expected-metadata.json").read_text("utf-8"))
    result = extract_html(html)
    assert result.reason is None
    assert result.title.startswith("Mozilla")
    lead = expected["excerpt"].split(".[1]")[0]  # "Mozilla is a free-software community, ... exceptions"
    assert lead in " ".join(result.text.split())


def test_empty_extraction_is_an_outcome() -> None:
    assert extract_html("<html><head><script>var x = 1;</script></head><body></body></html>").reason == (
        "extraction_empty"
    )
    assert extract_html("").reason == "extraction_empty"


def test_pool_replaces_a_worker_that_overruns() -> None:
    html = (WEB / "trafilatura" / "en.wikipedia.org.tsne.html").read_text(encoding="utf-8")
    with ExtractorPool(workers=1, timeout=0.002) as strict:
        late = strict.extract(html)
    assert (late.reason or "").startswith("extraction_timeout")
    with ExtractorPool(workers=1, timeout=30) as pool:
        first, second = pool.extract(html), pool.extract("<html><body></body></html>")
    assert first.reason is None and "Given a set of high-dimensional objects" in first.text
    assert second.reason == "extraction_empty"


def test_closing_does_not_wait_for_a_slow_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C must not hang on extraction: closing kills the workers even mid-page, and the page interrupted that
    way gets an error, not an outcome (a stored ``extraction_error`` would never be fetched again on resume).

    Checked by order, not by a clock: the worker is killed while the page is still being extracted."""
    slow = "<html><body><article>" + "".join(
        f"<p>Paragraph {i} has words and <a href='/x{i}'>links</a>.</p><div><span>{i}</span></div>"
        for i in range(20_000)
    ) + "</article></body></html>"  # trafilatura needs many seconds for this one
    extracting = threading.Event()
    killed_mid_page: list[bool] = []
    real_run, real_kill = _Worker.run, _Worker.kill

    def run(self: _Worker, html: str, url: str | None, limit: float) -> Extraction:
        if html == slow:
            extracting.set()
        try:
            return real_run(self, html, url, limit)
        finally:
            extracting.clear()

    def kill(self: _Worker) -> None:
        killed_mid_page.append(extracting.is_set())
        real_kill(self)

    monkeypatch.setattr(_Worker, "run", run)
    monkeypatch.setattr(_Worker, "kill", kill)

    async def start_then_close() -> None:
        pool = ExtractorPool(workers=1, timeout=120)
        await pool.aextract("<html><body><p>warm up</p></body></html>")
        pending = asyncio.ensure_future(pool.aextract(slow))
        while not extracting.is_set():
            await asyncio.sleep(0.01)
        pool.close()
        with pytest.raises(CrawlError, match="extractor pool was closed"):
            await pending

    asyncio.run(start_then_close())
    assert killed_mid_page[0] is True  # close() killed the worker while it was on the slow page
