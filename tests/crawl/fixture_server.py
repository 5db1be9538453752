"""A real HTTP server on 127.0.0.1 for the crawl tests: canned replies per path, a request log, in-flight
peaks, and routes that look like Wikipedia and Google Custom Search."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

WEB = Path(__file__).resolve().parent.parent / "data" / "web"
TSNE_TITLE = "T-distributed stochastic neighbor embedding"


@dataclass
class Reply:
    """One canned answer; ``send_length=False`` closes the connection instead of sending Content-Length."""

    status: int = 200
    body: bytes | str = b""
    content_type: str | None = "text/html; charset=utf-8"
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    send_length: bool = True


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


def add_wikipedia(server: FixtureServer) -> None:
    """Wikipedia-like routes: REST page HTML and /wiki/ pages of the real t-SNE and Mozilla articles, the
    action API's search, and a robots.txt that disallows /private/."""
    pages = {
        TSNE_TITLE: (WEB / "trafilatura" / "en.wikipedia.org.tsne.html").read_bytes(),
        "Mozilla": (WEB / "readability" / "wikipedia" / "source.html").read_bytes(),
    }
    for title, html in pages.items():
        key = title.replace(" ", "_")
        server.route(f"/api/rest_v1/page/html/{key}", Reply(body=html))
        server.route(f"/wiki/{key}", Reply(body=html))
    server.route(
        "/api/rest_v1/page/html/T-SNE",
        Reply(301, headers={"Location": quote(f"/api/rest_v1/page/html/{TSNE_TITLE.replace(' ', '_')}")}),
    )
    server.route("/robots.txt", Reply(body="User-agent: *\nDisallow: /private/\n", content_type="text/plain"))

    def search(seen: Seen) -> Reply:
        query = seen.query.get("srsearch", [""])[0].lower()
        titles = [t for t in pages if t.lower().split()[0] in query]
        hits = [{"ns": 0, "title": t} for t in titles]
        return Reply(body=json.dumps({"query": {"search": hits}}), content_type="application/json")

    server.route("/w/api.php", search)


def add_google(server: FixtureServer, results: Mapping[str, list[str]], key: str = "test-google-key") -> None:
    """A Google Custom Search JSON API stand-in at /customsearch/v1; ``results``: query word -> links."""

    def answer(seen: Seen) -> Reply:
        if seen.headers.get("X-Goog-Api-Key") != key or not seen.query.get("cx"):
            return Reply(403, json.dumps({"error": {"code": 403, "message": "bad key"}}), "application/json")
        query = seen.query.get("q", [""])[0].lower()
        start = int(seen.query.get("start", ["1"])[0])
        num = int(seen.query.get("num", ["10"])[0])
        links = [link for word, found in results.items() if word in query for link in found]
        items = [
            {"kind": "customsearch#result", "title": f"Result {i}", "link": link, "snippet": "..."}
            for i, link in enumerate(links[start - 1 : start - 1 + num], start=start)
        ]
        payload: dict[str, Any] = {"kind": "customsearch#search", "items": items} if items else {}
        return Reply(body=json.dumps(payload), content_type="application/json; charset=UTF-8")

    server.route("/customsearch/v1", answer)


def add_articles(server: FixtureServer, count: int, delay: float = 0.0) -> list[str]:
    """``count`` small article pages at /article/N with ``delay`` seconds of latency; returns their URLs."""
    urls = []
    for n in range(count):
        path = f"/article/{n}"
        text = [
            f"Article {n} is about the history of topic number {n}, told in plain words for a test.",
            f"It has a second paragraph, so the extractor sees real prose about subject {n} and more.",
        ]
        server.route(path, Reply(body=page_html(f"Article {n}", text), delay=delay))
        urls.append(server.url(path))
    return urls
