"""The crawl stage's configuration: one frozen dataclass built once at the CLI boundary (flags or YAML).

Build it with ``odqa.config.load_config(CrawlConfig, yaml_path, top=5, allow_private=True)``: unknown keys and
wrong types are rejected there, ranges and combinations here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from odqa._version import __version__
from odqa.errors import ConfigError

__all__ = ["CrawlConfig", "SearchName", "WikipediaApi"]

SearchName = Literal["google", "brave", "bing", "searxng", "none"]
WikipediaApi = Literal["rest", "action"]


@dataclass(frozen=True)
class CrawlConfig:
    """How to gather, fetch and extract candidate documents for each question."""

    search: SearchName = "none"  # web-search provider; "none" = Wikipedia / offline sources only
    top: int = 10  # search results kept per question
    search_endpoint: str | None = None  # None = the provider's public endpoint (required for searxng)
    wikipedia: bool = True  # add the subject's Wikipedia article (from the API, or from `dump`)
    wikipedia_endpoint: str = "https://en.wikipedia.org"
    wikipedia_api: WikipediaApi = "rest"  # article HTML from the REST API, or the action API (any MediaWiki)
    dump: str | None = None  # MediaWiki XML dump used instead of the Wikipedia API
    html_dir: str | None = None  # folder of HTML files: <question id>/*.html, or <Subject>.html
    also_wikipedia: bool = False  # with html_dir: fetch the article of a subject whose page is in the folder too
    concurrency: int = 16  # requests in flight, all hosts together
    per_host: int = 2  # requests in flight to one host
    delay: float = 0.5  # seconds between two request starts on one host (robots Crawl-delay can raise it)
    timeout: float = 20.0  # seconds for one whole request: connect, headers and body
    retries: int = 2  # further attempts after a timeout, a connection error, 429 or 5xx
    backoff: float = 1.0  # first retry waits this long, doubling each time (Retry-After wins when given)
    max_retry_after: float = 120.0  # a longer Retry-After fails the page now (retry later with --retry-failed)
    max_bytes: int = 5_000_000  # cap on a decoded body, enforced while streaming
    max_redirects: int = 5
    content_types: tuple[str, ...] = ("text/html", "application/xhtml+xml")
    robots: bool = True  # honour robots.txt (never for the configured API endpoints)
    allow_private: bool = False  # allow private, loopback, link-local and reserved addresses
    contact: str | None = None  # put in the User-Agent so site owners can reach you (an email or URL)
    extract_workers: int = 2  # extraction processes; 0 = extract in the crawl process itself
    extract_timeout: float = 30.0  # seconds trafilatura may spend on one page before its worker is replaced
    retry_failed: bool = False  # fetch again the pages and lookups that failed in an earlier run

    def __post_init__(self) -> None:
        if isinstance(self.content_types, str):
            raise ConfigError(f"content_types must be a list of media types, got the string {self.content_types!r}")
        object.__setattr__(self, "content_types", tuple(self.content_types))  # YAML gives a list
        if self.search not in get_args(SearchName):
            raise ConfigError(
                f"search provider {self.search!r} is not valid; "
                f"choose one of: {', '.join(get_args(SearchName))}"
            )
        if self.wikipedia_api not in get_args(WikipediaApi):
            raise ConfigError(f"wikipedia_api {self.wikipedia_api!r} is not valid; choose one of: rest, action")
        if self.search == "searxng" and not self.search_endpoint:
            raise ConfigError("search 'searxng' needs --search-endpoint URL (your SearXNG instance)")
        positive = {
            "top": self.top,
            "concurrency": self.concurrency,
            "per_host": self.per_host,
            "max_bytes": self.max_bytes,
            "timeout": self.timeout,
            "extract_timeout": self.extract_timeout,
        }
        for name, value in positive.items():
            if value <= 0:
                raise ConfigError(f"{name} must be > 0, got {value}")
        non_negative = {
            "delay": self.delay,
            "retries": self.retries,
            "backoff": self.backoff,
            "max_retry_after": self.max_retry_after,
            "max_redirects": self.max_redirects,
            "extract_workers": self.extract_workers,
        }
        for name, value in non_negative.items():
            if value < 0:
                raise ConfigError(f"{name} must be >= 0, got {value}")
        if not self.content_types:
            raise ConfigError("content_types must name at least one media type, e.g. ['text/html']")
        for url in (self.wikipedia_endpoint, self.search_endpoint):
            if url is not None and not url.startswith(("http://", "https://")):
                raise ConfigError(f"endpoint {url!r} must be an http:// or https:// URL")

    @property
    def user_agent(self) -> str:
        """The User-Agent sent with every request: names the tool and, when given, how to reach its user."""
        contact = f"; {self.contact}" if self.contact else ""
        return f"odqa-crawl/{__version__} (+https://github.com/odqa/odqa{contact})"
