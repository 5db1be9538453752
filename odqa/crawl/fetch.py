"""The polite, bounded async fetcher: the only code in odqa that talks HTTP.

Every request goes through a per-host slot (concurrency and delay), then a global slot; redirects are
followed by hand so each hop is checked against robots.txt and the address policy; bodies are decompressed and
capped while streaming; failures become a reason (``http_404``, ``timeout``, ``too_large``, ...), not a crash.
"""

from __future__ import annotations

import asyncio
import codecs
import email.utils
import json
import logging
import re
import time
import zlib
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx

from odqa._optional import require
from odqa.crawl.config import CrawlConfig
from odqa.crawl.robots import RobotsCache
from odqa.crawl.safety import TRUSTED, AddressPolicy, BlockedAddressError, PerHostTransport
from odqa.errors import CrawlError
from odqa.records import Page

__all__ = ["FetchFailure", "Fetched", "Fetcher", "decode_html"]

log = logging.getLogger(__name__)

REDIRECTS = frozenset({301, 302, 303, 307, 308})
ROBOTS_MAX_BYTES = 500 * 1024  # RFC 9309 2.5: crawlers must parse at least the first 500 KiB of a robots.txt
RETRYABLE = frozenset({429, 500, 502, 503, 504})
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)  # UTF-16 text is full of NUL bytes, yet not binary
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


class FetchFailure(CrawlError):
    """Why one request failed, as a short reason (``timeout``, ``http_503``) plus a human detail.

    The crawl records it as the page's (or lookup's) outcome; it only reaches a caller of :class:`Fetcher`.
    """

    def __init__(
        self,
        reason: str,
        detail: str = "",
        *,
        http_status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.reason = reason
        self.detail = detail
        self.http_status = http_status
        self.retry_after = retry_after
        super().__init__(f"{reason}: {detail}" if detail else reason)


class _Retry(Exception):
    """Internal: an attempt that may succeed if tried again (timeout, connection error, 429, 5xx)."""

    def __init__(self, failure: FetchFailure) -> None:
        self.failure = failure


@dataclass(frozen=True)
class Fetched:
    """One successful HTTP response: the URL it finally came from, its status, headers and decoded body."""

    url: str
    status: int
    headers: httpx.Headers
    body: bytes

    @property
    def content_type(self) -> str:
        return str(self.headers.get("content-type", "")).split(";", 1)[0].strip().lower()


@dataclass(frozen=True)
class _Ask:
    """What one request wants besides its URL: extra headers, accepted media types, the body cap (and whether a
    longer body is cut there instead of refused), and whether it is odqa's own API call (trusted endpoints)."""

    headers: Mapping[str, str]
    accept: tuple[str, ...] | None
    max_bytes: int
    truncate: bool
    trusted: bool


class _Host:
    """Politeness for one host: at most ``per_host`` requests in flight, starts ``delay`` seconds apart."""

    def __init__(self, per_host: int, delay: float) -> None:
        self.delay = delay
        self._slots = asyncio.Semaphore(per_host)
        self._next_start = 0.0

    def pause_until(self, when: float) -> None:
        """Hold every request to this host until ``when`` (loop time), e.g. after a 429 with Retry-After."""
        self._next_start = max(self._next_start, when)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        async with self._slots:
            loop = asyncio.get_running_loop()
            now = loop.time()
            start = max(now, self._next_start)
            self._next_start = start + self.delay
            if start > now:
                await asyncio.sleep(start - now)
            yield


class _Decoder:
    """Content-Encoding decoder that never produces more than it is asked for (decompression bombs)."""

    def __init__(self, encoding: str) -> None:
        self._encoding = encoding
        self._zlib: Any = None
        if encoding in {"gzip", "x-gzip", "deflate"}:
            self._zlib = zlib.decompressobj(wbits=47)  # 32 + 15: gzip or zlib header, detected
        elif encoding not in {"", "identity"}:
            raise FetchFailure("bad_encoding", f"unsupported Content-Encoding {encoding!r}")
        self._first = True

    def feed(self, data: bytes, limit: int) -> bytes:
        """Decode ``data``, returning at most ``limit`` bytes (more would exceed the cap anyway)."""
        if self._zlib is None:
            return data[:limit]
        try:
            return bytes(self._zlib.decompress(data, limit))
        except zlib.error as exc:
            if self._first and self._encoding == "deflate":  # some servers send raw deflate, without header
                self._zlib = zlib.decompressobj(wbits=-15)
                self._first = False
                return self.feed(data, limit)
            raise FetchFailure("bad_encoding", f"corrupt {self._encoding} body: {exc}") from exc
        finally:
            self._first = False

    def finish(self, limit: int) -> bytes:
        """Whatever the decompressor still holds at the end of the body, at most ``limit`` bytes."""
        return b"" if self._zlib is None else bytes(self._zlib.flush())[:limit]


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date), or None."""
    value = headers.get("retry-after")
    if not value:
        return None
    if value.strip().isdigit():
        return float(value.strip())
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _codec(name: str | None) -> str | None:
    """The canonical name of the text encoding ``name``, or None when unknown or not a text encoding.

    ``codecs.lookup`` also knows bytes-to-bytes and str-to-str codecs (``base64``, ``hex``, ``zlib``,
    ``rot13``) that ``bytes.decode`` refuses with :class:`LookupError`: a page declaring one is detected.
    """
    if not name:
        return None
    try:
        info = codecs.lookup(name.strip().strip("\"'"))
    except LookupError:
        return None
    return info.name if getattr(info, "_is_text_encoding", True) else None


def _mostly_utf8(body: bytes) -> str | None:
    """UTF-8 with replacement characters for a few damaged bytes; None when the body does not look like UTF-8
    (more bad sequences than a tenth of the good multi-byte ones: a legacy encoding, which detection handles)."""
    text = body.decode("utf-8", errors="replace")
    bad = text.count("\ufffd")
    good = len(text) - len(text.encode("ascii", errors="ignore")) - bad
    return text if good >= 10 * bad else None


def _detect(body: bytes) -> str | None:
    """The body decoded as charset-normalizer guesses, except that windows-1252 (the web's default legacy
    encoding) wins when it is a candidate that reads at least as coherently: for French text the detector's
    first choice is the Baltic cp1257 ("élčves")."""
    matches = list(require("charset_normalizer", "crawl").from_bytes(body))
    if not matches:
        return None
    western = [m for m in matches if m.encoding == "cp1252" and m.percent_coherence >= matches[0].percent_coherence]
    return str((western or matches)[0])


def decode_html(body: bytes, content_type_header: str | None) -> str:
    """Bytes to text: a byte-order mark, else the declared charset (header, then ``<meta>``) when the body really
    is in it, else UTF-8 when the body is (mostly) UTF-8, else the encoding charset-normalizer detects, else UTF-8
    with replacement characters."""
    declared = None
    if content_type_header:
        match = re.search(r"charset\s*=\s*([^;\s]+)", content_type_header, re.IGNORECASE)
        declared = _codec(match.group(1)) if match else None
    if declared is None:
        meta = _META_CHARSET.search(body[:4096])
        declared = _codec(meta.group(1).decode("ascii")) if meta else None
    if body.startswith(codecs.BOM_UTF8):
        declared = "utf-8-sig"
    elif body.startswith(_UTF16_BOMS):
        declared = "utf-16"
    for codec in dict.fromkeys((declared, "utf-8")):  # strict UTF-8 is right for most of the web, and cheap
        if codec is not None:
            try:
                return body.decode(codec)
            except (UnicodeDecodeError, LookupError):  # declared wrongly, damaged, or not a text codec after all
                pass
    if declared in {None, "utf-8"}:  # a UTF-8 page with a few stray bytes keeps its other characters
        text = _mostly_utf8(body)
        if text is not None:
            return text
    detected = _detect(body)
    return detected if detected is not None else body.decode("utf-8", errors="replace")


class Fetcher:
    """An httpx client wrapped with politeness, robots.txt, address safety, caps, retries and redirects."""

    def __init__(
        self, config: CrawlConfig, policy: AddressPolicy, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self._config = config
        self._client = httpx.AsyncClient(
            transport=transport
            or PerHostTransport(policy, per_host=config.per_host, max_hosts=config.concurrency * 4),
            headers={"User-Agent": config.user_agent, "Accept-Encoding": "gzip, deflate"},
            timeout=httpx.Timeout(config.timeout),
            follow_redirects=False,
            trust_env=False,
        )
        self._global = asyncio.Semaphore(config.concurrency)
        self._hosts: dict[str, _Host] = {}
        self._robots = RobotsCache(self._fetch_robots) if config.robots else None

    async def __aenter__(self) -> Fetcher:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._robots is not None:
            await self._robots.aclose()
        await self._client.aclose()

    def _host(self, url: httpx.URL) -> _Host:
        key = f"{url.host}:{url.port or ''}"
        host = self._hosts.get(key)
        if host is None:
            host = self._hosts[key] = _Host(self._config.per_host, self._config.delay)
        return host

    async def fetch_page(self, url: str, *, api: bool = False) -> Page:
        """Fetch one web page for extraction; every failure comes back as a Page with its reason.

        ``api`` marks a page odqa asks a configured endpoint for (a Wikipedia article through its API): robots.txt
        does not apply and the endpoint is trusted. Any other page passes robots.txt and the address policy.
        """
        try:
            fetched = await self.get(
                url, accept=self._config.content_types, check_robots=not api, trusted=api
            )
        except FetchFailure as failure:
            log.debug("page %s failed: %s", url, failure)
            return Page(url=url, status="error", http_status=failure.http_status, error=str(failure))
        if b"\x00" in fetched.body[:2048] and not fetched.body.startswith(_UTF16_BOMS):
            return Page(
                url=url,
                status="error",
                http_status=fetched.status,
                content_type=fetched.content_type,
                error="not_html: binary bytes in a body labelled as text",
                final_url=fetched.url,
            )
        html = decode_html(fetched.body, fetched.headers.get("content-type"))
        return Page(
            url=url,
            status="ok",
            http_status=fetched.status,
            content_type=fetched.content_type,
            html=html,
            final_url=fetched.url,
        )

    async def get_json(
        self,
        url: str,
        *,
        params: Mapping[str, str | int] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """GET an API endpoint and parse its JSON; failures raise :class:`FetchFailure` without the URL (which
        may carry an API key)."""
        fetched = await self.get(url, params=params, headers=headers, secret=True, trusted=True)
        try:
            return json.loads(fetched.body)
        except ValueError as exc:
            raise FetchFailure("bad_response", f"not JSON (Content-Type {fetched.content_type!r})") from exc

    async def get(
        self,
        url: str,
        *,
        params: Mapping[str, str | int] | None = None,
        headers: Mapping[str, str] | None = None,
        accept: tuple[str, ...] | None = None,
        check_robots: bool = False,
        max_bytes: int | None = None,
        truncate: bool = False,
        secret: bool = False,
        trusted: bool = False,
    ) -> Fetched:
        """GET ``url``, following redirects by hand; raises :class:`FetchFailure`.

        A body over ``max_bytes`` fails as ``too_large``, or is cut there with ``truncate``. ``secret`` marks a
        request whose URL or headers hold credentials: they are dropped on a redirect to another host and never
        logged. ``trusted`` marks odqa's own API request: it may reach the configured endpoints.
        """
        try:
            current = httpx.URL(url)  # not URL(url, params=...): that drops the query string of ``url``
            if params:
                current = current.copy_merge_params(params)
        except (httpx.InvalidURL, TypeError, ValueError) as exc:
            raise FetchFailure("bad_url", str(exc)) from exc
        origin = (current.scheme, current.host, current.port)
        extra = dict(headers or {})
        seen = {current}
        for _hop in range(self._config.max_redirects + 1):
            if current.scheme not in {"http", "https"} or not current.host:
                raise FetchFailure(
                    "bad_url", f"only http(s) URLs with a host can be fetched, got {current.scheme!r}"
                )
            if check_robots and self._robots is not None:
                await self._check_robots(self._robots, current)
            ask = _Ask(
                headers=extra if (current.scheme, current.host, current.port) == origin else {},
                accept=accept,
                max_bytes=max_bytes or self._config.max_bytes,
                truncate=truncate,
                trusted=trusted,
            )
            fetched = await self._with_retries(current, ask, secret)
            if fetched.status not in REDIRECTS:
                return fetched
            location = fetched.headers.get("location")
            if not location:
                raise FetchFailure(
                    f"http_{fetched.status}", "redirect without Location", http_status=fetched.status
                )
            try:
                current = current.join(location)
            except (httpx.InvalidURL, ValueError) as exc:
                raise FetchFailure("bad_url", f"bad redirect Location: {exc}") from exc
            if current in seen:
                raise FetchFailure("redirect_loop", f"after {len(seen)} hops", http_status=fetched.status)
            seen.add(current)
        raise FetchFailure("too_many_redirects", f"more than {self._config.max_redirects}")

    async def _check_robots(self, robots: RobotsCache, url: httpx.URL) -> None:
        rules = await robots.rules(url)
        if rules.crawl_delay is not None:
            host = self._host(url)
            host.delay = max(host.delay, min(rules.crawl_delay, 30.0))
        if not rules.allowed(str(url)):
            raise FetchFailure("robots", "disallowed by robots.txt")

    async def _fetch_robots(self, url: str) -> tuple[int | None, bytes]:
        """robots.txt as (status, its first 500 KiB); status None when unreachable, or when an answer came but
        its body could not be read (a 2xx with a broken body says nothing about the rules: RFC 9309 treats the
        file as unavailable, not as empty). A blocked address stays an error."""
        try:
            fetched = await self.get(url, max_bytes=ROBOTS_MAX_BYTES, truncate=True)
        except FetchFailure as failure:
            if failure.reason == "blocked_address":
                raise
            status = failure.http_status
            return (status, b"") if status is not None and 400 <= status < 500 else (None, b"")
        return fetched.status, fetched.body

    async def _with_retries(self, url: httpx.URL, ask: _Ask, secret: bool) -> Fetched:
        host = self._host(url)
        shown = url.copy_with(query=None) if secret else url
        for attempt in range(self._config.retries):
            try:
                return await self._attempt(url, host, ask)
            except _Retry as retry:
                wait = retry.failure.retry_after
                if wait is not None and wait > self._config.max_retry_after:
                    raise FetchFailure(
                        retry.failure.reason,
                        f"Retry-After {wait:.0f}s > max_retry_after",
                        http_status=retry.failure.http_status,
                    ) from None
                log.debug("retrying %s after %s (attempt %d)", shown, retry.failure.reason, attempt + 1)
                if wait is not None:  # the server asked the whole host to slow down
                    host.pause_until(asyncio.get_running_loop().time() + wait)
                else:
                    await asyncio.sleep(self._config.backoff * 2**attempt)
        try:
            return await self._attempt(url, host, ask)
        except _Retry as retry:
            raise retry.failure from None

    async def _attempt(self, url: httpx.URL, host: _Host, ask: _Ask) -> Fetched:
        async with host.slot(), self._global:
            try:
                with anyio.fail_after(self._config.timeout):
                    extensions = {TRUSTED: True} if ask.trusted else None
                    async with self._client.stream("GET", url, headers=ask.headers, extensions=extensions) as response:
                        return await self._receive(response, ask)
            except BlockedAddressError as exc:
                raise FetchFailure("blocked_address", str(exc)) from exc
            except (TimeoutError, httpx.TimeoutException) as exc:
                raise _Retry(
                    FetchFailure("timeout", f"no complete answer within {self._config.timeout}s")
                ) from exc
            except (httpx.ConnectError, httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError) as exc:
                raise _Retry(FetchFailure("connection_error", type(exc).__name__)) from exc
            except httpx.HTTPError as exc:
                raise FetchFailure("error", type(exc).__name__) from exc

    async def _receive(self, response: httpx.Response, ask: _Ask) -> Fetched:
        status = response.status_code
        url = str(response.url)
        if status in REDIRECTS:
            return Fetched(url, status, response.headers, b"")
        if status in RETRYABLE:
            retry_after = _retry_after(response.headers) if status in {429, 503} else None
            raise _Retry(FetchFailure(f"http_{status}", http_status=status, retry_after=retry_after))
        if status >= 400:
            raise FetchFailure(f"http_{status}", http_status=status)
        fetched = Fetched(url, status, response.headers, b"")
        if ask.accept is not None and fetched.content_type not in ask.accept:
            raise FetchFailure(
                "not_html", f"Content-Type {fetched.content_type or 'missing'!r}", http_status=status
            )
        max_bytes = ask.max_bytes
        length = response.headers.get("content-length", "")
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if not ask.truncate and encoding in {"", "identity"} and length.isdigit() and int(length) > max_bytes:
            raise FetchFailure("too_large", f"Content-Length {length} > {max_bytes}", http_status=status)
        decoder = _Decoder(encoding)
        body = bytearray()
        async for chunk in response.aiter_raw():
            body += decoder.feed(chunk, max_bytes - len(body) + 1)
            if len(body) > max_bytes:
                break
        else:
            body += decoder.finish(max_bytes - len(body) + 1)
        if len(body) > max_bytes and not ask.truncate:
            raise FetchFailure("too_large", f"body over {max_bytes} bytes (decoded)", http_status=status)
        return Fetched(url, status, response.headers, bytes(body[:max_bytes]))
