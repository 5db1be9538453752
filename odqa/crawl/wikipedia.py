"""Wikipedia through its public APIs: find an article title with the MediaWiki search API, get its HTML from
the REST API. The endpoint is any MediaWiki site root (another language, a mirror, a test server)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from odqa.crawl.search import ApiRequest

__all__ = ["Wikipedia", "normalise_title"]


def normalise_title(title: str) -> str:
    """MediaWiki's canonical form: underscores as spaces, single spaces, first letter upper-case."""
    title = " ".join(title.replace("_", " ").split())
    return title[:1].upper() + title[1:]


@dataclass(frozen=True)
class Wikipedia:
    """URLs of one MediaWiki site: ``endpoint`` is its root, e.g. ``https://ja.wikipedia.org``."""

    endpoint: str = "https://en.wikipedia.org"

    def search_request(self, query: str) -> ApiRequest:
        """The action-API request for the best-matching article (main namespace only)."""
        return ApiRequest(
            f"{self.endpoint.rstrip('/')}/w/api.php",
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

    def html_url(self, title: str) -> str:
        """The REST API URL of an article's HTML (it redirects to the target of a redirect page)."""
        key = quote(normalise_title(title).replace(" ", "_"), safe="")
        return f"{self.endpoint.rstrip('/')}/api/rest_v1/page/html/{key}"
