"""robots.txt, parsed with protego and fetched once per host (scheme, host and port) for the whole run.

Status handling follows RFC 9309: a 4xx robots.txt means no rules; a 5xx or an unreachable one means the
host is treated as fully disallowed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from odqa._optional import require

__all__ = ["ROBOTS_AGENT", "RobotsCache", "RobotsRules"]

ROBOTS_AGENT = "odqa-crawl"  # the product token robots.txt rules are matched against

# Fetches a robots.txt URL: (HTTP status, body), status None when the host could not be reached.
RobotsFetch = Callable[[str], Awaitable[tuple[int | None, bytes]]]


@dataclass(frozen=True)
class RobotsRules:
    """The rules of one host: a protego parser, or none (everything allowed, or everything refused)."""

    parser: Any = None
    disallow_all: bool = False

    def allowed(self, url: str) -> bool:
        if self.disallow_all:
            return False
        return self.parser is None or bool(self.parser.can_fetch(url, ROBOTS_AGENT))

    @property
    def crawl_delay(self) -> float | None:
        if self.parser is None:
            return None
        delay = self.parser.crawl_delay(ROBOTS_AGENT)
        return None if delay is None else float(delay)


class RobotsCache:
    """One robots.txt load per host, shared by every request to it (concurrent callers await one load)."""

    def __init__(self, fetch: RobotsFetch) -> None:
        self._fetch = fetch
        self._loads: dict[str, asyncio.Task[RobotsRules]] = {}

    async def rules(self, url: httpx.URL) -> RobotsRules:
        key = f"{url.scheme}://{url.netloc.decode('ascii')}"
        load = self._loads.get(key)
        if load is None:
            load = self._loads[key] = asyncio.ensure_future(self._load(f"{key}/robots.txt"))
        return await asyncio.shield(load)

    async def aclose(self) -> None:
        """Cancel the loads still running (their callers were cancelled), before the client they use closes."""
        pending = [load for load in self._loads.values() if not load.done()]
        for load in pending:
            load.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    async def _load(self, robots_url: str) -> RobotsRules:
        status, body = await self._fetch(robots_url)
        if status is None or status >= 500 or status == 429:
            return RobotsRules(disallow_all=True)
        if status >= 400:
            return RobotsRules()
        protego = require("protego", "crawl")
        return RobotsRules(parser=protego.Protego.parse(body.decode("utf-8", errors="replace")))
