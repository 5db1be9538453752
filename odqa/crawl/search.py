"""Web-search providers behind one small interface: build the API requests, parse the answers.

Providers do no I/O themselves (the fetcher does), so each one is a few pure lines and is tested offline. API
keys are read from the environment only, and only ever travel in the request: never in results, store or logs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from odqa.crawl.config import CrawlConfig
from odqa.errors import ConfigError

__all__ = ["ApiRequest", "SearchProvider", "SearchResult", "make_provider"]


@dataclass(frozen=True)
class SearchResult:
    """One web-search hit: where it points and what the engine called it."""

    url: str
    title: str = ""
    snippet: str = ""


@dataclass(frozen=True)
class ApiRequest:
    """One GET to a search API; ``params`` and ``headers`` may hold the key, so never log them."""

    url: str
    params: Mapping[str, str | int] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:  # keys must not leak through a traceback or a debug print
        return f"ApiRequest(url={self.url!r}, params=<hidden>, headers=<hidden>)"


class SearchProvider(Protocol):
    """A web-search API: the requests that fetch the top ``top`` results, and how to read one answer."""

    @property
    def name(self) -> str: ...

    def requests(self, query: str, top: int) -> Iterator[ApiRequest]: ...

    def parse(self, payload: Any) -> list[SearchResult]: ...


def _items(payload: Any, *path: str) -> list[Mapping[str, Any]]:
    """The list at ``payload[path[0]][path[1]]...``; a missing key means no results (engines omit empties)."""
    node = payload
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return [item for item in node or [] if isinstance(item, Mapping)]


def _results(items: list[Mapping[str, Any]], url: str, title: str, snippet: str) -> list[SearchResult]:
    return [
        SearchResult(
            url=str(item[url]), title=str(item.get(title) or ""), snippet=str(item.get(snippet) or "")
        )
        for item in items
        if isinstance(item.get(url), str)
    ]


@dataclass(frozen=True)
class GoogleSearch:
    """Google Custom Search JSON API: ``cx`` names the engine, at most 10 results a page (``start`` pages on),
    99 in all.

    The key travels in the ``X-Goog-Api-Key`` header, not the ``key`` parameter, so it is never part of a URL
    that a library may log (httpx logs every request URL at INFO level).
    """

    key: str = field(repr=False)
    cx: str = field(repr=False)
    endpoint: str = "https://www.googleapis.com/customsearch/v1"
    name: str = "google"

    def requests(self, query: str, top: int) -> Iterator[ApiRequest]:
        for start in range(1, min(top, 99) + 1, 10):  # the API refuses start + num > 100
            num = min(10, top - start + 1, 100 - start)
            params: dict[str, str | int] = {"cx": self.cx, "q": query, "num": num, "start": start}
            yield ApiRequest(self.endpoint, params, {"X-Goog-Api-Key": self.key})

    def parse(self, payload: Any) -> list[SearchResult]:
        return _results(_items(payload, "items"), "link", "title", "snippet")


@dataclass(frozen=True)
class BraveSearch:
    """Brave Search API: key in the ``X-Subscription-Token`` header, at most 20 results a request; ``offset``
    counts pages of ``count`` results (0 to 9)."""

    key: str = field(repr=False)
    endpoint: str = "https://api.search.brave.com/res/v1/web/search"
    name: str = "brave"

    def requests(self, query: str, top: int) -> Iterator[ApiRequest]:
        count = min(top, 20)
        headers = {"X-Subscription-Token": self.key, "Accept": "application/json"}
        for page in range(min(-(-top // count), 10)):
            yield ApiRequest(self.endpoint, {"q": query, "count": count, "offset": page}, headers)

    def parse(self, payload: Any) -> list[SearchResult]:
        return _results(_items(payload, "web", "results"), "url", "title", "description")


@dataclass(frozen=True)
class BingSearch:
    """Bing Web Search API v7: key in the ``Ocp-Apim-Subscription-Key`` header, up to 50 results a request;
    ``offset`` counts results to skip."""

    key: str = field(repr=False)
    endpoint: str = "https://api.bing.microsoft.com/v7.0/search"
    name: str = "bing"

    def requests(self, query: str, top: int) -> Iterator[ApiRequest]:
        count = min(top, 50)
        for offset in range(0, top, count):
            yield ApiRequest(
                self.endpoint, {"q": query, "count": count, "offset": offset}, {"Ocp-Apim-Subscription-Key": self.key}
            )

    def parse(self, payload: Any) -> list[SearchResult]:
        return _results(_items(payload, "webPages", "value"), "url", "name", "snippet")


@dataclass(frozen=True)
class SearxngSearch:
    """A SearXNG instance's JSON API (``format=json`` must be enabled in its settings); no key."""

    endpoint: str
    name: str = "searxng"

    def requests(self, query: str, top: int) -> Iterator[ApiRequest]:
        url = self.endpoint.rstrip("/")
        url = url if url.endswith("/search") else f"{url}/search"
        for page in range(1, (top + 9) // 10 + 1):  # about 10 results a page; extra ones are cut by the caller
            yield ApiRequest(url, {"q": query, "format": "json", "pageno": page})

    def parse(self, payload: Any) -> list[SearchResult]:
        return _results(_items(payload, "results"), "url", "title", "content")


ENV_KEYS: dict[str, tuple[str, ...]] = {
    "google": ("GOOGLE_API_KEY", "GOOGLE_CSE_ID"),
    "brave": ("BRAVE_API_KEY",),
    "bing": ("BING_API_KEY",),
    "searxng": (),
}


def make_provider(config: CrawlConfig, environ: Mapping[str, str]) -> SearchProvider | None:
    """The provider ``config.search`` names, keys taken from ``environ``; None for ``search: none``."""
    if config.search == "none":
        return None
    missing = [name for name in ENV_KEYS[config.search] if not environ.get(name)]
    if missing:
        raise ConfigError(
            f"search {config.search!r} needs the environment variable(s) {', '.join(missing)}; set them, "
            "or use --search none to crawl Wikipedia and offline sources only"
        )
    endpoint = {"endpoint": config.search_endpoint} if config.search_endpoint else {}
    if config.search == "google":
        return GoogleSearch(environ["GOOGLE_API_KEY"], environ["GOOGLE_CSE_ID"], **endpoint)
    if config.search == "brave":
        return BraveSearch(environ["BRAVE_API_KEY"], **endpoint)
    if config.search == "bing":
        return BingSearch(environ["BING_API_KEY"], **endpoint)
    return SearxngSearch(config.search_endpoint or "")
