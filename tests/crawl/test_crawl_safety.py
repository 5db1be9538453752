"""Address safety: non-public addresses are refused before any connection, unless explicitly allowed.

Only 127.0.0.1 ever receives traffic here: the refusals of 10.0.0.1 or 169.254.169.254 happen before
connecting, and a backend that fails the test if it is asked to connect stands behind them.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Callable
from typing import Any

import httpcore
import httpx
import pytest
from fixture_server import FixtureServer, Reply, page_html

from odqa.crawl import CrawlConfig, safety
from odqa.crawl.fetch import Fetcher, FetchFailure
from odqa.crawl.safety import AddressPolicy, BlockedAddressError, PerHostTransport, _GuardedBackend, is_public
from odqa.errors import CrawlError

ARTICLE = page_html("A page", ["Some words of prose that make up an article about nothing in particular."])


class NoConnect(httpcore.AsyncNetworkBackend):
    """Fails the test if anything tries to open a socket."""

    async def connect_tcp(
        self, host: str, port: int, *args: Any, **kwargs: Any
    ) -> httpcore.AsyncNetworkStream:
        raise AssertionError(f"tried to connect to {host}:{port}")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("10.0.0.1", False),
        ("172.16.5.4", False),
        ("192.168.1.1", False),
        ("127.0.0.1", False),
        ("169.254.169.254", False),
        ("100.64.0.1", False),
        ("0.0.0.0", False),
        ("224.0.0.1", False),
        ("240.0.0.1", False),
        ("::1", False),
        ("fe80::1", False),
        ("fc00::1", False),
        ("::ffff:127.0.0.1", False),
        ("::ffff:10.0.0.1", False),
        ("192.0.0.8", False),  # IETF protocol assignments: is_global says True on Python 3.11
        ("198.18.0.1", False),
        ("255.255.255.255", False),
        ("::", False),
        ("ff02::1", False),
        ("fec0::1", False),  # deprecated site-local
        ("2001:db8::1", False),
        ("::a00:1", False),  # IPv4-compatible 10.0.0.1
        ("::ffff:0:a00:1", False),  # IPv4-translated 10.0.0.1
        ("64:ff9b::a9fe:a9fe", False),  # NAT64 of 169.254.169.254
        ("64:ff9b:1::a00:1", False),  # local-use NAT64
        ("2002:7f00:1::1", False),  # 6to4 of 127.0.0.1
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", False),  # Teredo
        ("8.8.8.8", True),
        ("93.184.216.34", True),
        ("2606:4700::1111", True),
        ("64:ff9b::808:808", True),  # NAT64 of 8.8.8.8, as a DNS64 resolver answers on an IPv6-only network
    ],
)
def test_is_public(address: str, public: bool) -> None:
    assert is_public(ipaddress.ip_address(address)) is public


@pytest.mark.parametrize("host", ["10.0.0.1", "169.254.169.254", "127.0.0.1", "localhost", "::1"])
def test_backend_refuses_before_connecting(host: str) -> None:
    backend = _GuardedBackend(AddressPolicy(), inner=NoConnect())
    with pytest.raises(BlockedAddressError, match="allow-private"):
        asyncio.run(backend.connect_tcp(host, 80, timeout=2))


def test_public_errors_are_odqa_errors_and_internals_are_private() -> None:
    """What the CLI's guard prints as ``Type: message`` (it catches OdqaError only, anything else is a traceback)."""
    assert issubclass(BlockedAddressError, CrawlError) and issubclass(FetchFailure, CrawlError)
    assert str(BlockedAddressError("intranet", "10.0.0.1")).endswith("allow it with --allow-private")
    assert set(safety.__all__) == {"TRUSTED", "AddressPolicy", "BlockedAddressError", "PerHostTransport", "is_public"}
    assert not hasattr(safety, "GuardedBackend") and not hasattr(safety, "guarded_transport")


def test_dns_rebinding_any_private_answer_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A name answering with a public and a private address is refused: every answer is checked."""

    async def rebinding(host: str, port: int) -> list[Any]:
        return [ipaddress.ip_address("93.184.216.34"), ipaddress.ip_address("10.0.0.7")]

    monkeypatch.setattr(safety, "resolve", rebinding)
    backend = _GuardedBackend(AddressPolicy(), inner=NoConnect())
    with pytest.raises(BlockedAddressError, match=r"10\.0\.0\.7"):
        asyncio.run(backend.connect_tcp("attacker.example", 80, timeout=2))


def test_dns_rebinding_cannot_swap_the_address_after_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """The name is resolved once; the socket is opened to the very address that was checked, never to the name
    (whose next answer, from an attacker's DNS, could be 127.0.0.1)."""
    answers = iter([["93.184.216.34"], ["127.0.0.1"]])
    asked: list[str] = []

    async def rebinding(host: str, port: int) -> list[Any]:
        return [ipaddress.ip_address(a) for a in next(answers)]

    class Recorder(NoConnect):
        async def connect_tcp(self, host: str, port: int, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
            asked.append(host)
            raise httpcore.ConnectError("recorded, not connected")

    monkeypatch.setattr(safety, "resolve", rebinding)
    backend = _GuardedBackend(AddressPolicy(), inner=Recorder())
    with pytest.raises(httpcore.ConnectError, match="recorded"):
        asyncio.run(backend.connect_tcp("rebind.example", 80, timeout=2))
    assert asked == ["93.184.216.34"] and next(answers) == ["127.0.0.1"]  # resolved once, connected by address


def test_trusted_endpoint_is_allowed_only_on_its_port() -> None:
    policy = AddressPolicy.trusting(["http://127.0.0.1:8888/search"], allow_private=False)
    loopback = ipaddress.ip_address("127.0.0.1")
    assert policy.permits("127.0.0.1", 8888, loopback)
    assert not policy.permits("127.0.0.1", 8889, loopback)
    assert AddressPolicy(allow_private=True).permits("10.0.0.1", 80, ipaddress.ip_address("10.0.0.1"))


def _fetch(config: CrawlConfig, policy: AddressPolicy, url: str) -> Any:
    async def run() -> Any:
        async with Fetcher(config, policy) as fetcher:
            return await fetcher.fetch_page(url)

    return asyncio.run(run())


def test_private_target_is_refused_by_default(
    server: FixtureServer, make_config: Callable[..., CrawlConfig]
) -> None:
    server.route("/a", Reply(body=ARTICLE))
    page = _fetch(make_config(allow_private=False), AddressPolicy(), server.url("/a"))
    assert (page.error or "").startswith("blocked_address")
    assert server.seen == []  # not even robots.txt was asked for
    allowed = _fetch(make_config(), AddressPolicy(allow_private=True), server.url("/a"))
    assert allowed.status == "ok"


def test_metadata_address_is_refused_without_traffic(make_config: Callable[..., CrawlConfig]) -> None:
    page = _fetch(
        make_config(allow_private=False), AddressPolicy(), "http://169.254.169.254/latest/meta-data/"
    )
    assert (page.error or "").startswith("blocked_address")


def test_redirect_from_trusted_endpoint_to_private_host_is_refused(
    server: FixtureServer, make_config: Callable[..., CrawlConfig]
) -> None:
    server.route("/a", Reply(302, headers={"Location": f"http://localhost:{server.port}/internal"}))
    policy = AddressPolicy.trusting([server.base], allow_private=False)
    page = _fetch(make_config(allow_private=False, robots=False), policy, server.url("/a"))
    assert (page.error or "").startswith("blocked_address")
    assert server.hits("/internal") == 0


def test_api_headers_are_dropped_on_a_cross_origin_redirect(make_config: Callable[..., CrawlConfig]) -> None:
    with FixtureServer() as api, FixtureServer() as elsewhere:
        api.route("/search", Reply(302, headers={"Location": elsewhere.url("/landing")}))
        elsewhere.route("/landing", Reply(body="{}", content_type="application/json"))

        async def run() -> Any:
            async with Fetcher(make_config(), AddressPolicy(allow_private=True)) as fetcher:
                return await fetcher.get_json(api.url("/search"), headers={"X-Subscription-Token": "s3cret"})

        assert asyncio.run(run()) == {}
        assert api.seen[0].headers.get("X-Subscription-Token") == "s3cret"
        assert "X-Subscription-Token" not in elsewhere.seen[0].headers


def test_api_failure_message_does_not_carry_the_key(
    server: FixtureServer, make_config: Callable[..., CrawlConfig]
) -> None:
    server.route("/customsearch/v1", Reply(403, "denied", "text/plain"))

    async def run() -> None:
        async with Fetcher(make_config(), AddressPolicy(allow_private=True)) as fetcher:
            await fetcher.get_json(server.url("/customsearch/v1"), params={"key": "s3cret-key", "q": "x"})

    with pytest.raises(FetchFailure) as failure:
        asyncio.run(run())
    assert failure.value.reason == "http_403" and "s3cret" not in str(failure.value)


def test_per_host_pools_are_evicted_when_idle() -> None:
    """Each host gets its own guarded pool; past ``max_hosts`` the idle ones are closed, and work goes on."""
    with FixtureServer() as one, FixtureServer() as two:
        for server in (one, two):
            server.route("/a", Reply(body=ARTICLE))

        async def run() -> list[int]:
            transport = PerHostTransport(AddressPolicy(allow_private=True), per_host=2, max_hosts=1)
            async with httpx.AsyncClient(transport=transport) as client:
                codes = []
                for url in (one.url("/a"), two.url("/a"), one.url("/a")):
                    codes.append((await client.get(url)).status_code)
                    assert len(transport._pools) == 1
                return codes

        assert asyncio.run(run()) == [200, 200, 200]


def test_a_pool_is_not_evicted_while_its_body_is_downloading() -> None:
    """Headers have arrived but the body is still coming: a request to a new host past ``max_hosts`` must not
    close the pool the body is read from (a pool is idle only once its bodies are read)."""
    with FixtureServer() as slow, FixtureServer() as other, FixtureServer() as third_host:
        slow.route("/a", Reply(body=ARTICLE, trickle=0.02))
        other.route("/a", Reply(body=ARTICLE))

        async def run() -> tuple[bytes, int]:
            transport = PerHostTransport(AddressPolicy(allow_private=True), per_host=2, max_hosts=1)
            async with httpx.AsyncClient(transport=transport) as client:
                async with client.stream("GET", slow.url("/a")) as streaming:
                    second = (await client.get(other.url("/a"))).status_code
                    body = await streaming.aread()
                third = (await client.get(third_host.url("/b"))).status_code  # both idle now: evicted
                assert len(transport._pools) == 1 and third == 404
                return body, second

        body, second = asyncio.run(run())
        assert body == ARTICLE.encode("utf-8") and second == 200


def test_a_search_result_on_a_configured_endpoint_is_not_trusted(
    server: FixtureServer, make_config: Callable[..., CrawlConfig]
) -> None:
    """The configured endpoints are trusted for odqa's own API requests only: a page URL that points at the
    same host and port (a search result naming the self-hosted SearXNG) passes the address policy like any other."""
    server.route("/search", Reply(body="{}", content_type="application/json"))
    server.route("/a", Reply(body=ARTICLE))
    policy = AddressPolicy.trusting([server.url("/search")], allow_private=False)
    config = make_config(allow_private=False, robots=False)

    async def run() -> tuple[Any, Any, Any]:
        async with Fetcher(config, policy) as fetcher:
            api = await fetcher.get_json(server.url("/search"))
            page = await fetcher.fetch_page(server.url("/a"))
            api_page = await fetcher.fetch_page(server.url("/a"), api=True)
            return api, page, api_page

    api, page, api_page = asyncio.run(run())
    assert api == {} and api_page.status == "ok"
    assert (page.error or "").startswith("blocked_address") and server.hits("/a") == 1
