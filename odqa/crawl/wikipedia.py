"""Wikipedia through its public APIs: find an article title with the MediaWiki search API, get its HTML from
the REST API or the action API (``action=parse``, which every MediaWiki has, mirrors included). The endpoint is
any MediaWiki site root (another language, a mirror, a test server)."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any
from urllib.parse import SplitResult, parse_qs, parse_qsl, quote, unquote, urlencode, urlsplit

from odqa.crawl.config import WikipediaApi
from odqa.crawl.fetch import FetchFailure
from odqa.crawl.search import ApiRequest

__all__ = ["Wikipedia", "normalise_title"]


def normalise_title(title: str) -> str:
    """MediaWiki's canonical form: underscores as spaces, single spaces, first letter upper-case."""
    title = " ".join(title.replace("_", " ").split())
    return title[:1].upper() + title[1:]


_REST_HTML = "/api/rest_v1/page/html/"
_NOT_THE_ARTICLE = frozenset({"oldid", "diff", "curid"})  # an old revision or a diff is not the article as it is


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


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

    def title_of(self, url: str) -> str | None:
        """The (normalised) title of the article of this site that ``url`` names, in any of its forms: the reader
        URL ``/wiki/Title`` (also on the mobile host ``en.m.wikipedia.org``, over http or https), ``/w/index.php?
        title=Title``, the REST and ``action=parse`` URLs odqa fetches; percent-encoded, with underscores or
        spaces. None for another site, a special page, an old revision or a diff."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            return None
        site = urlsplit(self.root)
        if parts.scheme not in {"http", "https"} or (parts.hostname or "").lower() not in self._hosts(site):
            return None
        if site.port is not None and port != site.port:
            return None
        if site.port is None and port not in {None, 80, 443}:
            return None
        query = parse_qs(parts.query)
        if _NOT_THE_ARTICLE & query.keys():
            return None
        viewed = query.get("action", ["view"]) == ["view"]  # not ?action=edit, history, raw, ...
        path = parts.path[len(site.path.rstrip("/")):] if parts.path.startswith(site.path.rstrip("/")) else ""
        if path.startswith("/wiki/") and viewed:
            title = unquote(path[len("/wiki/"):])
        elif path == "/w/index.php" and viewed:
            title = query.get("title", [""])[0]
        elif path.startswith(_REST_HTML) and "/" not in path[len(_REST_HTML):] and not query:
            title = unquote(path[len(_REST_HTML):])
        elif path == "/w/api.php" and query.get("action") == ["parse"]:
            title = query.get("page", [""])[0]
        else:
            return None
        title = normalise_title(title)
        return title if title and not title.lower().startswith("special:") else None

    @staticmethod
    def _hosts(site: SplitResult) -> frozenset[str]:
        """The site's host, and its mobile host where Wikimedia has one (``en.m.wikipedia.org``)."""
        host = (site.hostname or "").lower()
        first, _, rest = host.partition(".")
        if rest.count(".") < 1 or rest.startswith("m.") or host.replace(".", "").isdigit():  # no mobile site
            return frozenset({host})
        return frozenset({host, f"{first}.m.{rest}"})

    def is_api_url(self, url: str) -> bool:
        """True for a URL of this site's article API (REST page HTML or ``action=parse``): what odqa asks the
        configured endpoint for, so robots.txt does not apply and the endpoint is trusted."""
        try:
            path = urlsplit(url).path
        except ValueError:
            return False
        return self.title_of(url) is not None and (path.endswith("/api.php") or _REST_HTML in path)

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
