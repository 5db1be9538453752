"""Address safety: a search result must never make the crawler reach an internal service.

The check runs inside httpcore's network backend, on the addresses the socket actually connects to, so a DNS
answer that changes between a check and the connection (DNS rebinding) cannot slip through.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import cast

import anyio
import httpcore
import httpx

from odqa.errors import CrawlError

__all__ = ["TRUSTED", "AddressPolicy", "BlockedAddressError", "PerHostTransport", "is_public"]

# The request extension that marks one of odqa's own API requests: only those may use the trusted endpoints.
TRUSTED = "odqa.trusted"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class BlockedAddressError(CrawlError):
    """A connection refused by the address policy; the fetcher records it as the page's reason."""

    def __init__(self, host: str, address: str) -> None:
        self.host = host
        self.address = address
        super().__init__(f"{host} resolves to non-public address {address}; allow it with --allow-private")


# Not globally reachable, yet ``is_global`` on Python 3.10/3.11 says they are (IANA special-purpose registry).
_NOT_GLOBAL = tuple(
    ipaddress.ip_network(net)
    for net in ("192.0.0.0/24", "192.88.99.0/24", "64:ff9b:1::/48", "2001::/23", "2002::/16", "fec0::/10")
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # the well-known NAT64 prefix: an IPv4 address in the last 32 bits


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries, where a router or the kernel may deliver to it: IPv4-mapped,
    IPv4-compatible or -translated (``::/96``, ``::ffff:0:0/96``), NAT64 and 6to4."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    value = int(address)
    if address in _NAT64 or (value >> 32 in {0, 0xFFFF0000} and value > 1):
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    return None


def is_public(address: IPAddress) -> bool:
    """True for a globally routable unicast address: not private, loopback, link-local, reserved, multicast,
    nor an IPv6 address wrapping a non-public IPv4 one (``::ffff:10.0.0.1``, ``64:ff9b::7f00:1``, 6to4)."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.teredo is not None:  # a tunnel whose far end the address names: refuse outright
            return False
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            return is_public(embedded)
    return (
        address.is_global
        and not (address.is_multicast or address.is_reserved or address.is_link_local or address.is_loopback)
        and not any(address in net for net in _NOT_GLOBAL)
    )


@dataclass(frozen=True)
class AddressPolicy:
    """Which addresses may be connected to: public ones, plus the explicitly configured endpoints.

    The endpoints are trusted for the API requests odqa makes to them (marked with the :data:`TRUSTED` request
    extension), never for a URL that came out of a search result, even one naming the same host and port.
    """

    allow_private: bool = False
    trusted: frozenset[tuple[str, int]] = field(default_factory=frozenset)  # (host, port) the user configured

    def permits(self, host: str, port: int, address: IPAddress) -> bool:
        """True when connecting to ``address`` for ``host:port`` is allowed."""
        return self.allow_private or (host.lower(), port) in self.trusted or is_public(address)

    @classmethod
    def trusting(cls, urls: Iterable[str | None], *, allow_private: bool) -> AddressPolicy:
        """A policy that trusts the hosts of the endpoint URLs the user configured (a self-hosted SearXNG)."""
        trusted = set()
        for url in urls:
            if url:
                parsed = httpx.URL(url)
                port = parsed.port or (443 if parsed.scheme == "https" else 80)
                trusted.add((parsed.raw_host.decode("ascii").lower(), port))  # as httpcore connects to it
        return cls(allow_private=allow_private, trusted=frozenset(trusted))

    def untrusted(self) -> AddressPolicy:
        """The same policy without the configured endpoints: for every request that is not odqa's own API call."""
        return replace(self, trusted=frozenset())


async def resolve(host: str, port: int) -> list[IPAddress]:
    """All addresses ``host`` resolves to, in resolver order, without duplicates."""
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses: list[IPAddress] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])  # drop an IPv6 zone id
        if address not in addresses:
            addresses.append(address)
    return addresses


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    """An httpcore network backend that resolves the host itself and connects only to permitted addresses."""

    def __init__(self, policy: AddressPolicy, inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self._policy = policy
        self._inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            with anyio.fail_after(timeout):
                addresses = await resolve(host, port)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(f"resolving {host} timed out") from exc
        except OSError as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from exc
        for address in addresses:  # every answer must pass, or a round-robin answer could still reach one
            if not self._policy.permits(host, port, address):
                raise BlockedAddressError(host, str(address))
        error: Exception = httpcore.ConnectError(f"{host} resolved to no address")
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                error = exc
        raise error

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise BlockedAddressError(path, "unix socket")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def _guarded_transport(
    policy: AddressPolicy, *, max_connections: int, ssl_context: ssl.SSLContext | None = None
) -> httpx.AsyncHTTPTransport:
    """An httpx transport whose every new connection goes through :class:`_GuardedBackend`.

    Environment proxies are ignored (``trust_env=False``): through a proxy the check could not see the real
    destination. httpx has no public hook for the network backend, so its connection pool is replaced.
    """
    context = ssl_context or httpx.create_ssl_context()
    transport = httpx.AsyncHTTPTransport(verify=context, trust_env=False)
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=context,
        max_connections=max_connections,
        max_keepalive_connections=max_connections,
        network_backend=_GuardedBackend(policy),
    )
    return transport


class _ReleasingStream(httpx.AsyncByteStream):
    """A response body that calls ``release`` once, when it is closed: until then its pool is in use."""

    def __init__(self, stream: httpx.AsyncByteStream, release: Callable[[], None]) -> None:
        self._stream = stream
        self._release: Callable[[], None] | None = release

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        finally:
            release, self._release = self._release, None
            if release is not None:
                release()


_PoolKey = tuple[bytes, bytes, int | None, bool]  # scheme, host, port, trusted


class PerHostTransport(httpx.AsyncBaseTransport):
    """One guarded connection pool per origin, sized to the per-host limit.

    httpcore's pool does work proportional to (waiting requests x connections) on every event, so one pool for
    a whole crawl slows down as concurrency grows; small per-host pools stay fast. Pools of hosts not used for a
    while are closed once more than ``max_hosts`` exist (never one with a request in flight or a body still
    being read). A request carrying the :data:`TRUSTED` extension gets a pool of its own that may reach the
    configured endpoints; every other request goes through a pool that may not.
    """

    def __init__(self, policy: AddressPolicy, *, per_host: int, max_hosts: int) -> None:
        self._policies = {True: policy, False: policy.untrusted()}
        self._per_host = per_host
        self._max_hosts = max_hosts
        self._ssl_context = httpx.create_ssl_context()  # loading the CA bundle costs ~40 ms: once, not per host
        self._pools: OrderedDict[_PoolKey, httpx.AsyncHTTPTransport] = OrderedDict()
        self._busy: Counter[_PoolKey] = Counter()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        trusted = bool(request.extensions.get(TRUSTED))
        key = (request.url.raw_scheme, request.url.raw_host, request.url.port, trusted)
        self._busy[key] += 1  # before evicting: the pool this request needs is never the one closed
        try:
            pool = self._pools.get(key)
            if pool is None:
                pool = self._pools[key] = _guarded_transport(
                    self._policies[trusted], max_connections=self._per_host, ssl_context=self._ssl_context
                )
                await self._evict()
            self._pools.move_to_end(key)
            response = await pool.handle_async_request(request)
        except BaseException:
            self._busy[key] -= 1
            raise

        def release() -> None:
            self._busy[key] -= 1

        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_ReleasingStream(cast(httpx.AsyncByteStream, response.stream), release),
            extensions=response.extensions,
        )

    async def _evict(self) -> None:
        idle = [key for key in self._pools if not self._busy[key]]
        for key in idle[: max(0, len(self._pools) - self._max_hosts)]:
            await self._pools.pop(key).aclose()
            del self._busy[key]

    async def aclose(self) -> None:
        for pool in self._pools.values():
            await pool.aclose()
        self._pools.clear()
