"""A real HTTP server on 127.0.0.1 for the crawl tests: canned replies per path, a request log, in-flight
peaks, and routes that look like Wikipedia (REST and action API) and the four search APIs (Google Custom Search,
Brave, Bing Web Search, SearXNG), each checking its key and parameters the way the real one does."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit
from xml.sax.saxutils import escape

WEB = Path(__file__).resolve().parent.parent / "data" / "web"
TSNE_TITLE = "T-distributed stochastic neighbor embedding"


@dataclass
class Reply:
    """One canned answer; ``send_length=False`` closes the connection instead of sending Content-Length;
    ``trickle`` sends the body in ten pieces that many seconds apart."""

    status: int = 200
    body: bytes | str = b""
    content_type: str | None = "text/html; charset=utf-8"
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    send_length: bool = True
    trickle: float = 0.0


@dataclass(frozen=True)
class Seen:
    """One request as the server received it."""

    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    at: float


Handler = Callable[[Seen], Reply]


class FixtureServer:
    """Threaded HTTP/1.1 server; ``route(path, *replies)`` answers in turn (the last one repeats)."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self._routes: dict[str, list[Reply] | Handler] = {}
        self._lock = threading.Lock()
        self.seen: list[Seen] = []
        self.in_flight = 0
        self.peak_in_flight = 0
        self._httpd = ThreadingHTTPServer((host, 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return self.base + path

    def route(self, path: str, *replies: Reply | Handler) -> None:
        if len(replies) == 1 and callable(replies[0]):
            self._routes[path] = replies[0]
        else:
            self._routes[path] = [r for r in replies if isinstance(r, Reply)]

    def handler(self, path: str) -> Handler:
        """The function answering ``path`` (to wrap it with extra behaviour in a test)."""
        route = self._routes[path]
        if not callable(route):
            raise TypeError(f"{path} is answered by canned replies, not a function")
        return route

    def hits(self, path: str) -> int:
        return sum(1 for s in self.seen if s.path == path)

    def __enter__(self) -> FixtureServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _reply_for(self, seen: Seen) -> Reply:
        with self._lock:
            self.seen.append(seen)
            route = self._routes.get(seen.path)
            if isinstance(route, list) and route:
                return route.pop(0) if len(route) > 1 else route[0]
        if callable(route):
            return route(seen)
        return Reply(404, "not found", "text/plain")

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

            def handle(self) -> None:
                try:
                    super().handle()
                except ConnectionError:  # the client hung up on purpose (timeout, size cap, killed crawler)
                    self.close_connection = True

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                seen = Seen(
                    unquote(parts.path), parse_qs(parts.query), dict(self.headers.items()), time.monotonic()
                )
                with server._lock:
                    server.in_flight += 1
                    server.peak_in_flight = max(server.peak_in_flight, server.in_flight)
                try:
                    reply = server._reply_for(seen)
                    if reply.delay:
                        time.sleep(reply.delay)
                    body = reply.body.encode("utf-8") if isinstance(reply.body, str) else reply.body
                    self.send_response(reply.status)
                    if reply.content_type:
                        self.send_header("Content-Type", reply.content_type)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    if reply.send_length:
                        self.send_header("Content-Length", str(len(body)))
                    else:
                        self.send_header("Connection", "close")
                        self.close_connection = True
                    self.end_headers()
                    if reply.trickle:
                        step = max(1, len(body) // 10)
                        for at in range(0, len(body), step):
                            self.wfile.write(body[at : at + step])
                            self.wfile.flush()
                            time.sleep(reply.trickle)
                    else:
                        self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the client gave up (timeout, size cap): expected
                finally:
                    with server._lock:
                        server.in_flight -= 1

        return _Handler


def page_html(title: str, paragraphs: list[str]) -> str:
    """A small article page trafilatura extracts: a title and a few paragraphs of prose."""
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title></head><body>"
        f"<nav><a href='/'>Home</a></nav><article><h1>{title}</h1>{body}</article>"
        "<footer>Footer links</footer></body></html>"
    )


WIKITEXT = {  # the real wikitext articles, by title, as Special:Export and a dump hold them
    "Jerry Mumphrey": "Jerry-Mumphrey.txt",
    "Bodmin": "Bodmin.txt",
    "Senate of Pakistan": "Senate_of_Pakistan.txt",
    "Raith Rovers F.C.": "raith_rovers.txt",
    "Mark Behr": "Mark-Behr.txt",
    "Toronto Redirect": "redirect.txt",
}


def wikitext(title: str) -> str:
    return (WEB / "wikitext" / WIKITEXT[title]).read_text(encoding="utf-8")


def export_xml(
    pages: Mapping[str, str], base: str = "https://en.wikipedia.org", namespaces: Mapping[int, str] | None = None
) -> str:
    """A MediaWiki XML export (the format of Special:Export and of pages-articles dumps): title -> wikitext,
    ``#REDIRECT [[Target]]`` pages marked as redirects."""
    ns = "".join(
        f'<namespace key="{k}" case="first-letter">{escape(v)}</namespace>'
        for k, v in (namespaces or {6: "File", 14: "Category"}).items()
    )
    body: list[str] = []
    for title, text in pages.items():
        redirect = ""
        if text.upper().startswith("#REDIRECT"):
            target = text.split("[[", 1)[1].split("]]", 1)[0]
            redirect = f'<redirect title="{escape(target, {chr(34): "&quot;"})}" />'
        body.append(
            f"<page><title>{escape(title)}</title><ns>0</ns><id>{len(body) + 1}</id>{redirect}"
            f'<revision><id>1</id><text xml:space="preserve">{escape(text)}</text></revision></page>'
        )
    return (
        '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11" xml:lang="en">'
        f"<siteinfo><sitename>Wikipedia</sitename><base>{base}/wiki/Main_Page</base>"
        f"<namespaces>{ns}</namespaces></siteinfo>{''.join(body)}</mediawiki>"
    )


def _content_text(html: bytes) -> str:
    """The article body of a Wikipedia page (``#mw-content-text``), as ``action=parse`` returns it."""
    import lxml.html

    (content,) = lxml.html.fromstring(html).xpath('//div[@id="mw-content-text"]')
    return "".join(lxml.html.tostring(child, encoding="unicode") for child in content)


def add_wikipedia(server: FixtureServer) -> None:
    """Wikipedia-like routes: the real t-SNE and Mozilla articles as REST page HTML and /wiki/ pages, the action
    API's ``list=search`` and ``action=parse`` (JSON, errors as MediaWiki sends them) over them, the real
    wikitext articles at /wiki/Special:Export/TITLE, and a robots.txt that disallows /private/."""
    pages = {
        TSNE_TITLE: (WEB / "trafilatura" / "en.wikipedia.org.tsne.html").read_bytes(),
        "Mozilla": (WEB / "readability" / "wikipedia" / "source.html").read_bytes(),
    }
    redirects = {"T-SNE": TSNE_TITLE}
    for title, html in pages.items():
        key = title.replace(" ", "_")
        server.route(f"/api/rest_v1/page/html/{key}", Reply(body=html))
        server.route(f"/wiki/{key}", Reply(body=html))
    server.route(
        "/api/rest_v1/page/html/T-SNE",
        Reply(301, headers={"Location": quote(f"/api/rest_v1/page/html/{TSNE_TITLE.replace(' ', '_')}")}),
    )
    server.route("/robots.txt", Reply(body="User-agent: *\nDisallow: /private/\n", content_type="text/plain"))
    for title in WIKITEXT:  # the wikitext articles, as Special:Export gives them (a one-page dump)
        xml = export_xml({title: wikitext(title)}, server.base)
        path = f"/wiki/Special:Export/{title.replace(' ', '_')}"
        server.route(path, Reply(body=xml, content_type="application/xml; charset=utf-8"))

    def api(seen: Seen) -> Reply:
        ask = {name: values[0] for name, values in seen.query.items()}
        if ask.get("format") != "json":
            return Reply(body="<html>MediaWiki API help</html>")
        if ask.get("action") == "parse":
            page = ask.get("page", "")
            title = redirects.get(page, page) if ask.get("redirects") else page
            if title not in pages:  # MediaWiki answers 200 with an error object, and says so in a header
                missing = _json({"error": {"code": "missingtitle", "info": "The page you specified doesn't exist."}})
                return replace(missing, headers={"MediaWiki-API-Error": "missingtitle"})
            return _json({"parse": {"title": title, "pageid": 1, "text": _content_text(pages[title])}})
        query = ask.get("srsearch", "").lower()
        titles = [t for t in pages if t.lower().split()[0] in query]
        return _json({"query": {"search": [{"ns": 0, "title": t} for t in titles]}})

    server.route("/w/api.php", api)


def _json(payload: Any, status: int = 200) -> Reply:
    return Reply(status, json.dumps(payload), "application/json; charset=UTF-8")


def _links(results: Mapping[str, list[str]], query: str) -> list[str]:
    """The links of every word of ``results`` that the query contains, in order."""
    return [link for word, found in results.items() if word in query.lower() for link in found]


def _int(seen: Seen, name: str, default: int) -> int:
    return int(seen.query.get(name, [str(default)])[0])


def add_google(server: FixtureServer, results: Mapping[str, list[str]], key: str = "test-google-key") -> None:
    """Google Custom Search JSON API at /customsearch/v1: key, ``cx``, ``num`` 1-10, ``start + num <= 100``;
    ``items`` left out when nothing matched. ``results``: query word -> links."""

    def answer(seen: Seen) -> Reply:
        if seen.headers.get("X-Goog-Api-Key") != key or not seen.query.get("cx"):
            return _json({"error": {"code": 403, "message": "bad key"}}, 403)
        start, num = _int(seen, "start", 1), _int(seen, "num", 10)
        if not 1 <= num <= 10 or start < 1 or start + num > 100:
            return _json({"error": {"code": 400, "message": "Request contains an invalid argument."}}, 400)
        links = _links(results, seen.query.get("q", [""])[0])
        items = [
            {"kind": "customsearch#result", "title": f"Result {i}", "link": link, "snippet": "..."}
            for i, link in enumerate(links[start - 1 : start - 1 + num], start=start)
        ]
        return _json({"kind": "customsearch#search", "items": items} if items else {"kind": "customsearch#search"})

    server.route("/customsearch/v1", answer)


def add_brave(server: FixtureServer, results: Mapping[str, list[str]], key: str = "test-brave-key") -> None:
    """Brave Search API at /res/v1/web/search: ``X-Subscription-Token``, ``count`` <= 20, ``offset`` (pages) <= 9."""

    def answer(seen: Seen) -> Reply:
        if seen.headers.get("X-Subscription-Token") != key:
            return _json({"type": "ErrorResponse", "error": {"code": "SUBSCRIPTION_TOKEN_INVALID"}}, 401)
        count, offset = _int(seen, "count", 20), _int(seen, "offset", 0)
        if not 1 <= count <= 20 or not 0 <= offset <= 9:
            return _json({"type": "ErrorResponse", "error": {"code": "VALIDATION"}}, 422)
        links = _links(results, seen.query.get("q", [""])[0])[offset * count : (offset + 1) * count]
        found = [{"type": "search_result", "title": f"Brave {u}", "url": u, "description": "..."} for u in links]
        return _json({"type": "search", "web": {"type": "search", "results": found}})

    server.route("/res/v1/web/search", answer)


def add_bing(server: FixtureServer, results: Mapping[str, list[str]], key: str = "test-bing-key") -> None:
    """Bing Web Search API v7 at /v7.0/search: ``Ocp-Apim-Subscription-Key``, ``count`` <= 50, ``offset``
    (results); ``webPages`` left out when nothing matched."""

    def answer(seen: Seen) -> Reply:
        if seen.headers.get("Ocp-Apim-Subscription-Key") != key:
            return _json({"error": {"code": "401", "message": "Access denied due to invalid subscription key."}}, 401)
        count, offset = _int(seen, "count", 10), _int(seen, "offset", 0)
        if not 1 <= count <= 50 or offset < 0:
            return _json({"_type": "ErrorResponse", "errors": [{"code": "InvalidRequest"}]}, 400)
        links = _links(results, seen.query.get("q", [""])[0])
        value = [{"id": u, "name": f"Bing {u}", "url": u, "snippet": "..."} for u in links[offset : offset + count]]
        pages = {"webPages": {"totalEstimatedMatches": len(links), "value": value}} if value else {}
        return _json({"_type": "SearchResponse", **pages})

    server.route("/v7.0/search", answer)


def add_searxng(server: FixtureServer, results: Mapping[str, list[str]]) -> None:
    """A SearXNG instance at /search: 403 unless ``format=json`` (as when JSON is not enabled), 10 a ``pageno``."""

    def answer(seen: Seen) -> Reply:
        if seen.query.get("format") != ["json"]:
            return Reply(403, "Forbidden", "text/html")
        page = _int(seen, "pageno", 1)
        links = _links(results, seen.query.get("q", [""])[0])[(page - 1) * 10 : page * 10]
        found = [{"url": u, "title": f"SearXNG {u}", "content": "...", "engine": "duckduckgo"} for u in links]
        return _json({"query": seen.query["q"][0], "number_of_results": 0, "results": found})

    server.route("/search", answer)


class Gate:
    """Lets a set number of requests through and holds the rest, so a test stops a crawl after a known amount of
    work instead of after a guessed time. ``flush`` releases the held requests (their client is gone) uncounted."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._allowed = 0
        self._served = 0
        self._waiting = 0
        self._flushing = False

    def enter(self) -> None:
        with self._cond:
            self._waiting += 1
            self._cond.wait_for(lambda: self._flushing or self._served < self._allowed, timeout=120)
            self._waiting -= 1
            if not self._flushing:
                self._served += 1
            self._cond.notify_all()

    def open(self, more: int) -> None:
        """Let ``more`` requests through from now on (after releasing any held ones)."""
        with self._cond:
            self._flushing = True
            self._cond.notify_all()
            self._cond.wait_for(lambda: self._waiting == 0, timeout=120)
            self._flushing = False
            self._allowed = self._served + more
            self._cond.notify_all()


def add_articles(server: FixtureServer, count: int, delay: float = 0.0, gate: Gate | None = None) -> list[str]:
    """``count`` small article pages at /article/N with ``delay`` seconds of latency, each let through ``gate``
    when given; returns their URLs."""
    urls = []
    for n in range(count):
        path = f"/article/{n}"
        text = [
            f"Article {n} is about the history of topic number {n}, told in plain words for a test.",
            f"It has a second paragraph, so the extractor sees real prose about subject {n} and more.",
        ]
        reply = Reply(body=page_html(f"Article {n}", text), delay=delay)
        server.route(path, reply if gate is None else _gated(gate, reply))
        urls.append(server.url(path))
    return urls


def _gated(gate: Gate, reply: Reply) -> Handler:
    def answer(seen: Seen) -> Reply:
        gate.enter()
        return reply

    return answer
