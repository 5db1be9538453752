"""Wikipedia through its public APIs: find an article title with the MediaWiki search API, get its HTML from
the REST API or the action API (``action=parse``, which every MediaWiki has, mirrors included). The endpoint is
any MediaWiki site root (another language, a mirror, a test server)."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from odqa.crawl.config import WikipediaApi
from odqa.crawl.fetch import FetchFailure
from odqa.crawl.search import ApiRequest

__all__ = ["Wikipedia", "normalise_title"]


def normalise_title(title: str) -> str:
    """MediaWiki's canonical form: underscores as spaces, single spaces, first letter upper-case."""
    title = " ".join(title.replace("_", " ").split())
    return title[:1].upper() + title[1:]


def _path_key(title: str) -> str:
    """An article title as a URL path segment: normalised, underscores for spaces, percent-encoded."""
    return quote(normalise_title(title).replace(" ", "_"), safe="")


@dataclass(frozen=True)
class Wikipedia:
    """URLs of one MediaWiki site: ``endpoint`` is its root, e.g. ``https://ja.wikipedia.org``; ``api`` says
    where article HTML comes from."""

    endpoint: str = "https://en.wikipedia.org"
    api: WikipediaApi = "rest"

    @property
    def root(self) -> str:
        return self.endpoint.rstrip("/")

    def search_request(self, query: str) -> ApiRequest:
        """The action-API request for the best-matching article (main namespace only)."""
        return ApiRequest(
            f"{self.root}/w/api.php",
            {
                "action": "query",
                "list": "search",
                "srsearch": query,
                "srnamespace": 0,
                "srlimit": 1,
                "format": "json",
                "formatversion": 2,
            },
        )

    @staticmethod
    def parse_search(payload: Any) -> str | None:
        """The first title of a ``list=search`` answer, or None when nothing matched."""
        hits = payload.get("query", {}).get("search", []) if isinstance(payload, dict) else []
        title = hits[0].get("title") if hits and isinstance(hits[0], dict) else None
        return title if isinstance(title, str) and title else None

    def article_url(self, title: str) -> str:
        """The reader-facing URL of an article, ``ROOT/wiki/Title``."""
        return f"{self.root}/wiki/{_path_key(title)}"

    def html_url(self, title: str) -> str:
        """Where an article's HTML is fetched: the REST API (a redirect page answers with an HTTP redirect to its
        target), or the action API's ``action=parse`` (``redirects=1`` follows redirect pages)."""
        if self.api == "rest":
            return f"{self.root}/api/rest_v1/page/html/{_path_key(title)}"
        query = urlencode(
            {"action": "parse", "page": normalise_title(title), "prop": "text", "redirects": 1, "format": "json",
             "formatversion": 2}
        )
        return f"{self.root}/w/api.php?{query}"

    @staticmethod
    def is_parse_url(url: str) -> bool:
        """True for an action-API ``action=parse`` URL: it answers JSON, read with :meth:`parse_page`."""
        parts = urlsplit(url)
        return parts.path.endswith("/api.php") and ("action", "parse") in parse_qsl(parts.query)

    @staticmethod
    def parse_page(payload: Any) -> tuple[str, str]:
        """(title, HTML document) of an ``action=parse`` answer; an API error (``missingtitle``) raises
        :class:`FetchFailure` with reason ``api_error``."""
        if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
            error = payload["error"]
            raise FetchFailure("api_error", f"{error.get('code', '?')}: {error.get('info', '')}".strip())
        parsed = payload.get("parse") if isinstance(payload, dict) else None
        text = parsed.get("text") if isinstance(parsed, dict) else None
        if isinstance(text, dict):  # formatversion=1 nests it as {"*": html}
            text = text.get("*")
        if not isinstance(text, str) or not isinstance(parsed, dict):
            raise FetchFailure("bad_response", "no parse.text in the action=parse answer")
        title = str(parsed.get("title") or "")
        head = f"<!DOCTYPE html><html><head><title>{escape(title)}</title></head>"
        return title, f"{head}<body><article>{text}</article></body></html>"  # <article>: it is all main text
