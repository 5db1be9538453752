"""Search providers (pure request building and parsing), Wikipedia URLs, and the offline sources."""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import escape

import pytest

from odqa.crawl import CrawlConfig
from odqa.crawl.search import BingSearch, BraveSearch, GoogleSearch, SearxngSearch, make_provider
from odqa.crawl.sources import html_files_for, read_dump, read_html_file, wikitext_to_text
from odqa.crawl.wikipedia import Wikipedia, normalise_title
from odqa.errors import ConfigError, InputError
from odqa.records import Example

WIKITEXT = Path(__file__).resolve().parent.parent / "data" / "web" / "wikitext"


def test_google_requests_page_by_ten_and_parse() -> None:
    google = GoogleSearch("k", "cx", endpoint="http://127.0.0.1:1/cs")
    requests = list(google.requests("who?", 25))
    assert [(r.params["start"], r.params["num"]) for r in requests] == [(1, 10), (11, 10), (21, 5)]
    assert requests[0].headers["X-Goog-Api-Key"] == "k" and "key" not in requests[0].params
    assert requests[0].url == "http://127.0.0.1:1/cs"
    payload = {"items": [{"link": "https://a.org/x", "title": "A", "snippet": "s"}, {"title": "no link"}]}
    assert [(r.url, r.title) for r in google.parse(payload)] == [("https://a.org/x", "A")]
    assert google.parse({}) == []  # Google omits "items" when nothing matched


def test_other_providers_parse_their_shapes() -> None:
    brave = BraveSearch("b")
    (request,) = brave.requests("q", 50)
    assert request.params["count"] == 20 and request.headers["X-Subscription-Token"] == "b"
    assert (
        brave.parse({"web": {"results": [{"url": "https://b.org", "title": "B"}]}})[0].url == "https://b.org"
    )
    bing = BingSearch("g")
    assert next(iter(bing.requests("q", 5))).headers["Ocp-Apim-Subscription-Key"] == "g"
    assert bing.parse({"webPages": {"value": [{"url": "https://c.org", "name": "C"}]}})[0].title == "C"
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


def test_wikitext_to_text_keeps_prose_only() -> None:
    text = wikitext_to_text((WIKITEXT / "Jerry-Mumphrey.txt").read_text(encoding="utf-8"))
    assert text.startswith("Jerry Wayne Mumphrey (born September 9, 1952) is a former Major League Baseball")
    assert "St. Louis Cardinals (1974–79)" in text
    for junk in ("{{", "}}", "[[", "Category:", "<ref", "obituaries.tylerpaper", "Infobox"):
        assert junk not in text


def _dump(tmp_path: Path, pages: dict[str, str], namespaces: dict[int, str] | None = None) -> Path:
    ns = "".join(
        f'<namespace key="{k}" case="first-letter">{v}</namespace>'
        for k, v in (namespaces or {6: "File", 14: "Category"}).items()
    )
    body: list[str] = []
    for title, wikitext in pages.items():
        redirect = ""
        if wikitext.upper().startswith("#REDIRECT"):
            target = wikitext.split("[[", 1)[1].split("]]", 1)[0]
            redirect = f'<redirect title="{escape(target)}" />'
        body.append(
            f"<page><title>{escape(title)}</title><ns>0</ns><id>{len(body) + 1}</id>{redirect}"
            f'<revision><id>1</id><text xml:space="preserve">{escape(wikitext)}</text></revision></page>'
        )
    xml = (
        '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10" xml:lang="en">'
        f"<siteinfo><sitename>Wikipedia</sitename><base>https://en.wikipedia.org/wiki/Main_Page</base>"
        f"<namespaces>{ns}</namespaces></siteinfo>{''.join(body)}</mediawiki>"
    )
    path = tmp_path / "dump.xml"
    path.write_text(xml, encoding="utf-8")
    return path


def test_dump_finds_articles_and_follows_redirects(tmp_path: Path) -> None:
    pages = {
        "Toronto Redirect": (WIKITEXT / "redirect.txt").read_text(
            encoding="utf-8"
        ),  # -> Toronto, not in dump
        "Mumphrey": "#REDIRECT [[Jerry Mumphrey]]",  # redirect before its target
        "Jerry Mumphrey": (WIKITEXT / "Jerry-Mumphrey.txt").read_text(encoding="utf-8"),
        "Bodmin": (WIKITEXT / "Bodmin.txt").read_text(encoding="utf-8"),
        "Senate of Pakistan": (WIKITEXT / "Senate_of_Pakistan.txt").read_text(encoding="utf-8"),
        "Raith Rovers F.C.": (WIKITEXT / "raith_rovers.txt").read_text(encoding="utf-8"),
    }
    dump = _dump(tmp_path, pages)
    found = read_dump(dump, ["bodmin", "Mumphrey", "Toronto Redirect", "Nowhere", "Raith_Rovers_F.C."])
    assert set(found) == {"Bodmin", "Mumphrey", "Raith Rovers F.C."}
    assert found["Mumphrey"].title == "Jerry Mumphrey"
    assert found["Mumphrey"].url == "https://en.wikipedia.org/wiki/Jerry_Mumphrey"
    assert "Bodmin is a civil parish and historic town" in found["Bodmin"].text
    assert "Kirkcaldy" in found["Raith Rovers F.C."].text and "[[" not in found["Raith Rovers F.C."].text


def test_dump_drops_localised_category_links(tmp_path: Path) -> None:
    wikitext = (WIKITEXT / "Mark-Behr.txt").read_text(encoding="utf-8")
    dump = _dump(tmp_path, {"Mark Behr": wikitext}, {6: "Lêer", 14: "Kategorie"})
    text = read_dump(dump, ["Mark Behr"])["Mark Behr"].text
    assert "Mark Behr" in text and "Kategorie" not in text


def test_bad_dump_is_an_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.xml"
    bad.write_text("<mediawiki><page>", encoding="utf-8")
    with pytest.raises(InputError, match="not a valid MediaWiki XML dump"):
        read_dump(bad, ["X"])
    with pytest.raises(InputError, match="no such dump"):
        read_dump(tmp_path / "missing.xml", ["X"])


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
