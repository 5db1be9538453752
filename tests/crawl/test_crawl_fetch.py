"""The fetcher against a real server on 127.0.0.1: every way the web misbehaves becomes a recorded reason."""

from __future__ import annotations

import asyncio
import email.utils
import gzip
import itertools
import time
import tracemalloc
import zlib
from collections.abc import Callable

import pytest
from fixture_server import FixtureServer, Reply, page_html

from odqa.crawl import CrawlConfig
from odqa.crawl.fetch import Fetcher, decode_html
from odqa.crawl.safety import AddressPolicy
from odqa.records import Page

ARTICLE = page_html("A page", ["Some words of prose that make up an article about nothing in particular."])


def fetch(config: CrawlConfig, *urls: str) -> list[Page]:
    async def run() -> list[Page]:
        async with Fetcher(config, AddressPolicy(allow_private=config.allow_private)) as fetcher:
            return list(await asyncio.gather(*(fetcher.fetch_page(u) for u in urls)))

    return asyncio.run(run())


def test_plain_page_comes_back_decoded(
    server: FixtureServer, make_config: Callable[..., CrawlConfig]
) -> None:
    server.route("/a", Reply(body=ARTICLE))
    (page,) = fetch(make_config(contact="me@example.org"), server.url("/a"))
    assert page.status == "ok" and page.http_status == 200 and page.content_type == "text/html"
    assert "Some words of prose" in (page.html or "")
    agent = next(s.headers["User-Agent"] for s in server.seen if s.path == "/a")
    assert agent.startswith("odqa-crawl/") and "me@example.org" in agent


def test_query_strings_reach_the_server(server: FixtureServer, make_config: Callable[..., CrawlConfig]) -> None:
    """A page URL keeps its query; an API endpoint's own query is merged with the request's parameters."""
    server.route("/read", Reply(body=ARTICLE))
    server.route("/api", Reply(body="{}", content_type="application/json"))
    (page,) = fetch(make_config(), server.url("/read?id=42&lang=en"))

    async def call_api() -> object:
        async with Fetcher(make_config(), AddressPolicy(allow_private=True)) as fetcher:
            return await fetcher.get_json(server.url("/api?language=en"), params={"q": "x"})

    assert page.status == "ok" and asyncio.run(call_api()) == {}
    assert [s.query for s in server.seen if s.path == "/read"] == [{"id": ["42"], "lang": ["en"]}]
    assert [s.query for s in server.seen if s.path == "/api"] == [{"language": ["en"], "q": ["x"]}]


def test_robots_disallow_is_honoured_and_cached(
    server: FixtureServer, make_config: Callable[..., CrawlConfig]
) -> None:
    server.route("/robots.txt", Reply(body="User-agent: *\nDisallow: /private/\n", content_type="text/plain"))
    server.route("/private/x", Reply(body=ARTICLE))
    server.route("/public/x", Reply(body=ARTICLE))
    blocked, allowed, again = fetch(
        make_config(), server.url("/private/x"), server.url("/public/x"), server.url("/public/x?b=1")
    )
    assert blocked.status == "error" and (blocked.error or "").startswith("robots")
    assert allowed.status == "ok" and again.status == "ok"
    assert server.hits("/private/x") == 0
    assert server.hits("/robots.txt") == 1


def test_robots_server_error_means_disallow_all(
    server: FixtureServer, make_config: Callable[..., CrawlConfig]
) -> None:
    server.route("/robots.txt", Reply(500, "oops"))
    server.route("/a", Reply(body=ARTICLE))
    (page,) = fetch(make_config(retries=0), server.url("/a"))
    assert (page.error or "").startswith("robots") and server.hits("/a") == 0


@pytest.mark.parametrize("send_length", [True, False], ids=["content-length", "streamed"])
def test_robots_over_500_kib_is_parsed_up_to_the_cap(
    server: FixtureServer, make_config: Callable[..., CrawlConfig], send_length: bool
) -> None:
    """RFC 9309 2.5: a robots.txt over the size cap is read up to 500 KiB, not ignored as if it allowed all."""
    rules = "User-agent: *\nDisallow: /private/\n"
    padding = "".join(f"# comment line {i:07d} that pads the file past the limit\n" for i in range(12_000))
    late = "User-agent: *\nDisallow: /late/\n"  # after 500 KiB: not read, so not applied
    server.route("/robots.txt", Reply(body=rules + padding + late, content_type="text/plain", send_length=send_length))
    for path in ("/private/a", "/late/b"):
        server.route(path, Reply(body=ARTICLE))
    private, late_page = fetch(make_config(), server.url("/private/a"), server.url("/late/b"))
    assert len((rules + padding).encode()) > 500 * 1024
    assert (private.error or "").startswith("robots") and server.hits("/private/a") == 0
    assert late_page.status == "ok"


def test_robots_with_an_unreadable_body_means_disallow_all(
    server: FixtureServer, make_config: Callable[..., CrawlConfig]
) -> None:
    """A 200 robots.txt whose body cannot be decoded says nothing about the rules: unavailable, not empty."""
    server.route(
        "/robots.txt", Reply(body=b"not gzip at all", content_type="text/plain", headers={"Content-Encoding": "gzip"})
    )
    server.route("/a", Reply(body=ARTICLE))
    (page,) = fetch(make_config(), server.url("/a"))
    assert (page.error or "").startswith("robots") and server.hits("/a") == 0


@pytest.mark.parametrize(("status", "form"), [(429, "seconds"), (503, "http-date")])
def test_retry_after_is_honoured(
    server: FixtureServer, make_config: Callable[..., CrawlConfig], status: int, form: str
) -> None:
    """The wait comes from Retry-After (delta-seconds, or an HTTP date), not from the short backoff."""
    when = "1" if form == "seconds" else email.utils.formatdate(time.time() + 2, usegmt=True)
    server.route("/busy", Reply(status, "slow down", headers={"Retry-After": when}), Reply(body=ARTICLE))
    (page,) = fetch(make_config(backoff=0.01), server.url("/busy"))
    assert page.status == "ok"
    first, second = [s.at for s in server.seen if s.path == "/busy"]
    assert second - first >= 0.9  # an HTTP date has whole seconds: between 1 and 2 s from now


def test_backoff_doubles_between_retries(
    server: FixtureServer, make_config: Callable[..., CrawlConfig], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The waits asked for are exactly backoff, 2 x backoff (recorded, not timed: a busy machine only adds to
    them); the server sees them as lower bounds."""
    waits: list[float] = []
    real_sleep = asyncio.sleep

    async def recording_sleep(delay: float) -> None:
        waits.append(delay)
        await real_sleep(delay)

    monkeypatch.setattr(asyncio, "sleep", recording_sleep)
    server.route("/flaky", Reply(502, "a"), Reply(504, "b"), Reply(body=ARTICLE))
    (page,) = fetch(make_config(retries=2, backoff=0.2), server.url("/flaky"))
    first, second, third = [s.at for s in server.seen if s.path == "/flaky"]
    assert page.status == "ok" and waits == [0.2, 0.4]
    assert second - first >= 0.2 and third - second >= 0.4


def test_retry_after_longer_than_the_limit_fails_now(
    server: FixtureServer, make_config: Callable[..., CrawlConfig]
) -> None:
    server.route("/busy", Reply(503, "later", headers={"Retry-After": "3600"}))
    (page,) = fetch(make_config(max_retry_after=5), server.url("/busy"))
    assert (page.error or "").startswith("http_503") and server.hits("/busy") == 1


def test_500_then_success_is_retried(server: FixtureServer, make_config: Callable[..., CrawlConfig]) -> None:
    server.route("/flaky", Reply(500, "boom"), Reply(body=ARTICLE))
    (page,) = fetch(make_config(), server.url("/flaky"))
    assert page.status == "ok" and server.hits("/flaky") == 2


def test_404_is_not_retried(server: FixtureServer, make_config: Callable[..., CrawlConfig]) -> None:
    (page,) = fetch(make_config(retries=3), server.url("/missing"))
    assert page.error == "http_404" and page.http_status == 404 and server.hits("/missing") == 1


def test_slow_response_times_out(server: FixtureServer, make_config: Callable[..., CrawlConfig]) -> None:
    server.route("/slow", Reply(body=ARTICLE, delay=1.5))
    (page,) = fetch(make_config(timeout=0.3, retries=0), server.url("/slow"))
    assert (page.error or "").startswith("timeout")  # had it waited for the answer, the page would be "ok"


def test_trickling_body_times_out(server: FixtureServer, make_config: Callable[..., CrawlConfig]) -> None:
    """Headers at once, then a byte now and then: the timeout covers the whole request, not each read."""
    server.route("/drip", Reply(body=ARTICLE, trickle=0.2))  # ten pieces 0.2 s apart: 2 s for the whole body
    (page,) = fetch(make_config(timeout=0.5, retries=0), server.url("/drip"))
    assert (page.error or "").startswith("timeout")  # a per-read timeout would have read it all: "ok"


@pytest.mark.parametrize("send_length", [True, False], ids=["content-length", "streamed"])
def test_body_over_the_cap_is_refused(
    server: FixtureServer, make_config: Callable[..., CrawlConfig], send_length: bool
) -> None:
    server.route("/big", Reply(body=b"<p>" + b"x" * 300_000, send_length=send_length))
    (page,) = fetch(make_config(max_bytes=100_000), server.url("/big"))
    assert (page.error or "").startswith("too_large")


def test_gzip_bomb_is_stopped_at_the_cap(
    server: FixtureServer, make_config: Callable[..., CrawlConfig]
) -> None:
    bomb = gzip.compress(b" " * 50_000_000, compresslevel=9)
    assert len(bomb) < 100_000
    server.route("/bomb", Reply(body=bomb, headers={"Content-Encoding": "gzip"}))
    tracemalloc.start()
    try:
        (page,) = fetch(make_config(max_bytes=1_000_000), server.url("/bomb"))
        _size, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (page.error or "").startswith("too_large")
    assert peak < 8_000_000  # never inflated past the 1 MB cap (all of it would be 50 MB)


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate"])
def test_compressed_bodies_are_decoded(
    server: FixtureServer, make_config: Callable[..., CrawlConfig], encoding: str
) -> None:
    data = ARTICLE.encode()
    if encoding == "gzip":
        body = gzip.compress(data)
    elif encoding == "deflate":
        body = zlib.compress(data)
    else:
        squeezer = zlib.compressobj(wbits=-15)
        body = squeezer.compress(data) + squeezer.flush()
    header = "gzip" if encoding == "gzip" else "deflate"
    server.route("/z", Reply(body=body, headers={"Content-Encoding": header}))
    (page,) = fetch(make_config(), server.url("/z"))
    assert page.status == "ok" and "Some words of prose" in (page.html or "")


def test_binary_content_is_not_html(server: FixtureServer, make_config: Callable[..., CrawlConfig]) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 10
    server.route("/image", Reply(body=png, content_type="image/png"))
    server.route("/liar", Reply(body=png, content_type="text/html"))
    image, liar = fetch(make_config(), server.url("/image"), server.url("/liar"))
    assert (image.error or "").startswith("not_html") and "image/png" in (image.error or "")
    assert (liar.error or "").startswith("not_html")


def test_redirect_loop_is_detected(server: FixtureServer, make_config: Callable[..., CrawlConfig]) -> None:
    server.route("/loop-a", Reply(302, headers={"Location": "/loop-b"}))
    server.route("/loop-b", Reply(302, headers={"Location": "/loop-a"}))
    (page,) = fetch(make_config(), server.url("/loop-a"))
    assert (page.error or "").startswith("redirect_loop")
    assert server.hits("/loop-a") == 1 and server.hits("/loop-b") == 1


def test_redirect_limit(server: FixtureServer, make_config: Callable[..., CrawlConfig]) -> None:
    for n in range(5):
        server.route(f"/hop{n}", Reply(301, headers={"Location": f"/hop{n + 1}"}))
    server.route("/hop5", Reply(body=ARTICLE))
    short, enough = (
        fetch(make_config(max_redirects=3), server.url("/hop0")),
        fetch(make_config(), server.url("/hop0")),
    )
    assert (short[0].error or "").startswith("too_many_redirects")
    assert enough[0].status == "ok" and enough[0].final_url == server.url("/hop5")


def test_redirect_into_robots_disallowed_path(
    server: FixtureServer, make_config: Callable[..., CrawlConfig]
) -> None:
    server.route("/robots.txt", Reply(body="User-agent: *\nDisallow: /private/\n", content_type="text/plain"))
    server.route("/go", Reply(302, headers={"Location": "/private/secret"}))
    (page,) = fetch(make_config(), server.url("/go"))
    assert (page.error or "").startswith("robots") and server.hits("/private/secret") == 0


@pytest.mark.parametrize("content_type", ["text/html; charset=utf-8", "text/html"])
def test_invalid_utf8_still_decodes(
    server: FixtureServer, make_config: Callable[..., CrawlConfig], content_type: str
) -> None:
    """Two stray bytes in a UTF-8 page cost two characters, not the page's other accents (no mojibake)."""
    text = "Café crème, naïve façade, déjà vu: Zürich, Málaga, 東京. " * 4
    html = page_html("Accents", [text]).encode().replace(b"vu:", b"vu\xff\xfe:", 1)
    server.route("/bad", Reply(body=html, content_type=content_type))
    (page,) = fetch(make_config(), server.url("/bad"))
    assert page.status == "ok" and text.strip() in (page.html or "").replace("\ufffd", "")


def test_utf16_page_with_a_bom_is_text_not_binary(
    server: FixtureServer, make_config: Callable[..., CrawlConfig]
) -> None:
    server.route("/u16", Reply(body=ARTICLE.encode("utf-16"), content_type="text/html"))
    (page,) = fetch(make_config(), server.url("/u16"))
    assert page.status == "ok" and "Some words of prose" in (page.html or "")


@pytest.mark.parametrize(
    ("codec", "declared_in"),
    [("shift_jis", "header"), ("shift_jis", "meta"), ("latin-1", "header"), ("cp1252", "meta")],
)
def test_declared_non_utf8_charsets(
    server: FixtureServer, make_config: Callable[..., CrawlConfig], codec: str, declared_in: str
) -> None:
    text = (
        "東京は日本の首都です。人口は約千四百万人です。"
        if codec == "shift_jis"
        else "Café crème, naïve façade, déjà vu."
    )
    meta = f"<meta charset='{codec}'>" if declared_in == "meta" else ""
    html = f"<html><head>{meta}<title>t</title></head><body><p>{text}</p></body></html>"
    content_type = f"text/html; charset={codec}" if declared_in == "header" else "text/html"
    server.route("/enc", Reply(body=html.encode(codec), content_type=content_type))
    (page,) = fetch(make_config(), server.url("/enc"))
    assert text in (page.html or "")


@pytest.mark.parametrize("codec", ["rot13", "base64", "hex", "zlib", "uu", "no-such-codec"])
def test_declared_non_text_codec_falls_back_to_detection(codec: str) -> None:
    """codecs.lookup knows rot13/base64/...; bytes.decode refuses them with LookupError, which once escaped."""
    body = ARTICLE.encode()
    assert "Some words of prose" in decode_html(body, f"text/html; charset={codec}")
    meta = body.replace(b"<head>", f"<head><meta charset='{codec}'>".encode(), 1)
    assert "Some words of prose" in decode_html(meta, "text/html")


@pytest.mark.parametrize(
    ("codec", "text"),
    [
        ("cp1251", "Москва — столица России, крупнейший по численности населения город страны. "),
        ("shift_jis", "東京は日本の首都であり、政治・経済・文化の中心地です。人口は約千四百万人です。"),
        ("cp1252", "Le gouvernement a présenté un projet très attendu : les élèves auront déjà des heures de plus. "),
        ("cp1250", "Rząd przedstawił w środę długo oczekiwany projekt ustawy o edukacji; uczniowie skorzystają. "),
    ],
)
def test_undeclared_charset_is_detected(codec: str, text: str) -> None:
    """No declaration, not UTF-8: detected (French in cp1252 once came back as Baltic cp1257, "élčves")."""
    html = f"<html><body><p>{text * 3}</p></body></html>".encode(codec)
    assert text * 3 in decode_html(html, "text/html")
    assert text * 3 in decode_html(html, "text/html; charset=utf-8")  # declared wrongly: detected all the same


def test_per_host_concurrency_and_delay(
    server: FixtureServer, make_config: Callable[..., CrawlConfig]
) -> None:
    for n in range(6):
        server.route(f"/p{n}", Reply(body=ARTICLE, delay=0.1))
    config = make_config(per_host=2, delay=0.1, concurrency=16, robots=False)
    pages = fetch(config, *(server.url(f"/p{n}") for n in range(6)))
    assert all(p.status == "ok" for p in pages)
    assert server.peak_in_flight <= 2
    starts = sorted(s.at for s in server.seen)
    assert starts[-1] - starts[0] >= 0.45  # five gaps of 0.1 s, measured where the server sees them (jitter)
    assert all(b - a >= 0.05 for a, b in itertools.pairwise(starts))


def test_global_concurrency_limit(server: FixtureServer, make_config: Callable[..., CrawlConfig]) -> None:
    for n in range(8):
        server.route(f"/g{n}", Reply(body=ARTICLE, delay=0.1))
    config = make_config(concurrency=3, per_host=8, robots=False)
    pages = fetch(config, *(server.url(f"/g{n}") for n in range(8)))
    assert all(p.status == "ok" for p in pages) and server.peak_in_flight == 3


def test_robots_crawl_delay_spaces_requests(server: FixtureServer, make_config: Callable[..., CrawlConfig]) -> None:
    server.route("/robots.txt", Reply(body="User-agent: *\nCrawl-delay: 0.3\n", content_type="text/plain"))
    for n in range(3):
        server.route(f"/c{n}", Reply(body=ARTICLE))
    pages = fetch(make_config(delay=0.0, per_host=4), *(server.url(f"/c{n}") for n in range(3)))
    starts = sorted(s.at for s in server.seen if s.path.startswith("/c"))
    assert all(p.status == "ok" for p in pages) and all(b - a >= 0.25 for a, b in itertools.pairwise(starts))
