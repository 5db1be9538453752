"""Fixtures of the crawl tests: a real server on 127.0.0.1 per test, and a fast, test-friendly CrawlConfig."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fixture_server import FixtureServer

from odqa.crawl import CrawlConfig

pytest.importorskip("trafilatura")


@pytest.fixture
def server() -> Iterator[FixtureServer]:
    with FixtureServer() as running:
        yield running


@pytest.fixture
def make_config() -> Callable[..., CrawlConfig]:
    """CrawlConfig with short timeouts, no politeness delay, loopback allowed (the server is on 127.0.0.1)."""

    def make(**overrides: Any) -> CrawlConfig:
        settings: dict[str, Any] = {
            "timeout": 2.0,
            "retries": 1,
            "backoff": 0.05,
            "delay": 0.0,
            "allow_private": True,
            "extract_workers": 0,
            "per_host": 4,
        }
        return CrawlConfig(**(settings | overrides))

    return make
