"""Search providers (pure request building and parsing), Wikipedia URLs, and the offline sources."""

from __future__ import annotations

import bz2
import gzip
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path

import pytest
import yaml
from fixture_server import export_xml, wikitext

from odqa.config import load_config
from odqa.crawl import CrawlConfig
from odqa.crawl.fetch import FetchFailure
from odqa.crawl.search import BingSearch, BraveSearch, GoogleSearch, SearxngSearch, make_provider
from odqa.crawl.sources import html_files_for, read_dump, read_html_file, wikitext_to_text
from odqa.crawl.wikipedia import Wikipedia, normalise_title
from odqa.errors import ConfigError, InputError
from odqa.records import Example


def test_google_requests_page_by_ten_and_parse() -> None:
    google = GoogleSearch("k", "cx", endpoint="http://127.0.0.1:1/cs")
    requests = list(google.requests("who?", 25))
    assert [(r.params["start"], r.params["num"]) for r in requests] == [(1, 10), (11, 10), (21, 5)]
    assert requests[0].headers["X-Goog-Api-Key"] == "k" and "key" not in requests[0].params
    assert requests[0].url == "http://127.0.0.1:1/cs"
    last = list(google.requests("who?", 500))[-1]  # the API answers 400 to start + num > 100
    assert (last.params["start"], last.params["num"]) == (91, 9)
    payload = {"items": [{"link": "https://a.org/x", "title": "A", "snippet": "s"}, {"title": "no link"}]}
    assert [(r.url, r.title) for r in google.parse(payload)] == [("https://a.org/x", "A")]
    assert google.parse({}) == []  # Google omits "items" when nothing matched


def test_other_providers_page_and_parse_their_shapes() -> None:
    brave = BraveSearch("b")
    pages = list(brave.requests("q", 50))
    assert [(r.params["count"], r.params["offset"]) for r in pages] == [(20, 0), (20, 1), (20, 2)]
    assert pages[0].headers["X-Subscription-Token"] == "b" and len(list(brave.requests("q", 900))) == 10
    assert (
        brave.parse({"web": {"results": [{"url": "https://b.org", "title": "B"}]}})[0].url == "https://b.org"
    )
    bing = BingSearch("g")
    assert [(r.params["count"], r.params["offset"]) for r in bing.requests("q", 120)] == [(50, 0), (50, 50), (50, 100)]
    assert next(iter(bing.requests("q", 5))).headers["Ocp-Apim-Subscription-Key"] == "g"
    assert bing.parse({"webPages": {"value": [{"url": "https://c.org", "name": "C"}]}})[0].title == "C"
    assert bing.parse({"_type": "SearchResponse"}) == []  # no webPages when nothing matched
    searx = SearxngSearch("http://127.0.0.1:1")
    (first, second) = searx.requests("q", 15)
    assert (
        first.url == "http://127.0.0.1:1/search"
        and first.params["format"] == "json"
        and second.params["pageno"] == 2
    )
    assert (
        searx.parse({"results": [{"url": "https://d.org", "title": "D", "content": "x"}]})[0].snippet == "x"
    )


def test_keys_are_hidden_from_reprs() -> None:
    google = GoogleSearch("s3cret", "cx-s3cret")
    assert "s3cret" not in repr(google)
    assert "s3cret" not in repr(next(iter(google.requests("q", 1))))


def test_missing_keys_name_the_variables_and_the_way_out() -> None:
    with pytest.raises(ConfigError, match=r"GOOGLE_API_KEY, GOOGLE_CSE_ID.*--search none"):
        make_provider(CrawlConfig(search="google"), {})
    with pytest.raises(ConfigError, match="BRAVE_API_KEY"):
        make_provider(CrawlConfig(search="brave"), {"GOOGLE_API_KEY": "x"})
    provider = make_provider(
        CrawlConfig(search="bing", search_endpoint="http://127.0.0.1:1/b"), {"BING_API_KEY": "k"}
    )
    assert provider is not None and provider.name == "bing"
    assert make_provider(CrawlConfig(), {}) is None


def test_config_errors_say_what_is_valid() -> None:
    with pytest.raises(ConfigError, match="choose one of: google, brave, bing, searxng, none"):
        CrawlConfig(search="yahoo")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="--search-endpoint"):
        CrawlConfig(search="searxng")
    with pytest.raises(ConfigError, match="concurrency must be > 0"):
        CrawlConfig(concurrency=0)


def test_shipped_crawl_yaml_spells_out_the_defaults() -> None:
    shipped = Path(__file__).resolve().parents[2] / "configs" / "crawl.yaml"
    assert load_config(CrawlConfig, shipped) == CrawlConfig()
    assert set(yaml.safe_load(shipped.read_text("utf-8"))) == {f.name for f in fields(CrawlConfig)}


def test_wikipedia_urls() -> None:
    wiki = Wikipedia("https://ja.wikipedia.org/")
    assert (
        wiki.html_url("東京 都")
        == "https://ja.wikipedia.org/api/rest_v1/page/html/%E6%9D%B1%E4%BA%AC_%E9%83%BD"
    )
    assert Wikipedia().html_url("AC/DC") == "https://en.wikipedia.org/api/rest_v1/page/html/AC%2FDC"
    assert wiki.search_request("q").params["list"] == "search"
    assert Wikipedia.parse_search({"query": {"search": [{"title": "Tokyo"}]}}) == "Tokyo"
    assert Wikipedia.parse_search({"query": {"search": []}}) is None
    assert normalise_title("jerry_Mumphrey  ") == "Jerry_Mumphrey".replace("_", " ")


@pytest.mark.parametrize(
    ("url", "title"),
    [
        ("https://en.wikipedia.org/wiki/Jerry_Mumphrey", "Jerry Mumphrey"),
        ("http://en.wikipedia.org/wiki/Jerry%20Mumphrey", "Jerry Mumphrey"),
        ("https://en.m.wikipedia.org/wiki/Jerry_Mumphrey#Career", "Jerry Mumphrey"),
        ("https://en.wikipedia.org/w/index.php?title=Jerry+Mumphrey", "Jerry Mumphrey"),
        ("https://EN.wikipedia.org/wiki/jerry_Mumphrey?useskin=vector", "Jerry Mumphrey"),
        ("https://en.wikipedia.org/wiki/AC/DC", "AC/DC"),
        ("https://en.wikipedia.org/wiki/AC%2FDC", "AC/DC"),
        ("https://en.wikipedia.org/wiki/%E6%9D%B1%E4%BA%AC", "東京"),
        ("https://en.wikipedia.org/api/rest_v1/page/html/AC%2FDC", "AC/DC"),
        (Wikipedia(api="action").html_url("AC/DC"), "AC/DC"),
        ("https://de.wikipedia.org/wiki/Jerry_Mumphrey", None),  # another language
        ("https://en.wikipedia.org:8443/wiki/Jerry_Mumphrey", None),  # another service on the host
        ("https://en.wikipedia.org/w/index.php?title=Jerry_Mumphrey&oldid=5", None),  # an old revision
        ("https://en.wikipedia.org/w/index.php?title=Jerry_Mumphrey&action=history", None),
        ("https://en.wikipedia.org/wiki/Special:Random", None),
        ("https://en.wikipedia.org/wiki/", None),
        ("https://example.org/wiki/Jerry_Mumphrey", None),
    ],
)
def test_wikipedia_article_urls_in_all_their_forms(url: str, title: str | None) -> None:
    assert Wikipedia().title_of(url) == title


def test_wikipedia_mirror_urls_need_its_port() -> None:
    mirror = Wikipedia("http://127.0.0.1:8080")
    assert mirror.title_of("http://127.0.0.1:8080/wiki/Bodmin") == "Bodmin"
    assert mirror.title_of("http://127.0.0.1:9090/wiki/Bodmin") is None
    assert mirror.is_api_url(mirror.html_url("Bodmin")) and not mirror.is_api_url("http://127.0.0.1:8080/wiki/Bodmin")


def test_wikipedia_action_api() -> None:
    action = Wikipedia("https://mirror.example.org/", api="action")
    url = action.html_url("AC/DC & co")
    assert url.startswith("https://mirror.example.org/w/api.php?") and Wikipedia.is_parse_url(url)
    assert "page=AC%2FDC+%26+co" in url and "redirects=1" in url and "format=json" in url
    assert not Wikipedia.is_parse_url(Wikipedia().html_url("X"))
    assert not Wikipedia.is_parse_url(action.search_request("q").url)
    title, html = Wikipedia.parse_page({"parse": {"title": "A <b>", "text": "<p>Body</p>"}})
    assert title == "A <b>" and "<title>A &lt;b&gt;</title>" in html
    assert "<body><article><p>Body</p></article></body>" in html
    assert Wikipedia.parse_page({"parse": {"title": "V1", "text": {"*": "<p>old format</p>"}}})[1].count("old") == 1
    with pytest.raises(FetchFailure) as missing:
        Wikipedia.parse_page({"error": {"code": "missingtitle", "info": "The page you specified doesn't exist."}})
    assert missing.value.reason == "api_error" and str(missing.value).startswith("api_error: missingtitle")
    with pytest.raises(FetchFailure, match="bad_response"):
        Wikipedia.parse_page({"batchcomplete": True})
    with pytest.raises(ConfigError, match="choose one of: rest, action"):
        CrawlConfig(wikipedia_api="raw")  # type: ignore[arg-type]


def test_wikitext_to_text_keeps_prose_only() -> None:
    text = wikitext_to_text(wikitext("Jerry Mumphrey"))
    assert text.startswith("Jerry Wayne Mumphrey (born September 9, 1952) is a former Major League Baseball")
    assert "St. Louis Cardinals (1974–79)" in text
    for junk in ("{{", "}}", "[[", "Category:", "<ref", "obituaries.tylerpaper", "Infobox"):
        assert junk not in text


def _dump(tmp_path: Path, pages: dict[str, str], namespaces: dict[int, str] | None = None) -> Path:
    path = tmp_path / "dump.xml"
    path.write_text(export_xml(pages, namespaces=namespaces), encoding="utf-8")
    return path


def test_dump_finds_articles_and_follows_redirects(tmp_path: Path) -> None:
    titles = ["Toronto Redirect", "Mumphrey", "Jerry Mumphrey", "Bodmin", "Senate of Pakistan", "Raith Rovers F.C."]
    pages = {t: "#REDIRECT [[Jerry Mumphrey]]" if t == "Mumphrey" else wikitext(t) for t in titles}
    dump = _dump(tmp_path, pages)
    found = read_dump(dump, ["bodmin", "Mumphrey", "Toronto Redirect", "Nowhere", "Raith_Rovers_F.C."])
    assert set(found) == {"Bodmin", "Mumphrey", "Raith Rovers F.C."}
    assert found["Mumphrey"].title == "Jerry Mumphrey"
    assert found["Mumphrey"].url == "https://en.wikipedia.org/wiki/Jerry_Mumphrey"
    assert "Bodmin is a civil parish and historic town" in found["Bodmin"].text
    assert "Kirkcaldy" in found["Raith Rovers F.C."].text and "[[" not in found["Raith Rovers F.C."].text


def test_dump_drops_localised_category_links(tmp_path: Path) -> None:
    dump = _dump(tmp_path, {"Mark Behr": wikitext("Mark Behr")}, {6: "Lêer", 14: "Kategorie"})
    text = read_dump(dump, ["Mark Behr"])["Mark Behr"].text
    assert "Mark Behr" in text and "Kategorie" not in text


def test_bad_dump_is_an_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.xml"
    bad.write_text("<mediawiki><page>", encoding="utf-8")
    with pytest.raises(InputError, match="not a valid MediaWiki XML dump"):
        read_dump(bad, ["X"])
    with pytest.raises(InputError, match="no such dump"):
        read_dump(tmp_path / "missing.xml", ["X"])


@pytest.mark.parametrize(("suffix", "compress"), [(".bz2", bz2.compress), (".gz", gzip.compress)])
def test_truncated_or_corrupt_compressed_dump_is_an_input_error(
    tmp_path: Path, suffix: str, compress: Callable[[bytes], bytes]
) -> None:
    """A download cut short (or damaged) names the file and says what to do, not a raw EOFError / OSError."""
    xml = export_xml({"Bodmin": wikitext("Bodmin"), "Mark Behr": wikitext("Mark Behr")}).encode("utf-8")
    whole = compress(xml)
    truncated = tmp_path / f"cut.xml{suffix}"
    truncated.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(InputError, match=rf"cut\.xml\{suffix}: .*truncated or corrupt .*download it again"):
        read_dump(truncated, ["Mark Behr"])
    corrupt = tmp_path / f"corrupt.xml{suffix}"
    corrupt.write_bytes(whole[:20] + bytes(200) + whole[220:])
    with pytest.raises(InputError, match=rf"corrupt\.xml\{suffix}: "):
        read_dump(corrupt, ["Mark Behr"])


def test_html_folder(tmp_path: Path) -> None:
    (tmp_path / "q1").mkdir()
    (tmp_path / "q1" / "b.html").write_text("<p>b</p>", encoding="utf-8")
    (tmp_path / "q1" / "a.htm").write_text("<p>a</p>", encoding="utf-8")
    (tmp_path / "q1" / "notes.txt").write_text("no", encoding="utf-8")
    (tmp_path / "Jerry_Mumphrey.html").write_text("<p>jm</p>", encoding="utf-8")
    files = html_files_for(tmp_path, Example(id="q1", question="?", subject="Jerry Mumphrey"))
    assert [f.name for f in files] == ["a.htm", "b.html", "Jerry_Mumphrey.html"]
    page = read_html_file(files[0].resolve().as_uri(), tmp_path, 1000)
    assert page.status == "ok" and page.html == "<p>a</p>"
    outside = read_html_file((tmp_path.parent / "x.html").as_uri(), tmp_path, 1000)
    assert (outside.error or "").startswith("blocked_address")
    assert (read_html_file(files[0].resolve().as_uri(), tmp_path, 3).error or "").startswith("too_large")
    assert html_files_for(tmp_path / "q1", Example(id="..", question="?", subject="../Jerry_Mumphrey")) == []
