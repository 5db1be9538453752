"""Address safety: a search result must never make the crawler reach an internal service.

The check runs inside httpcore's network backend, on the addresses the socket actually connects to, so a DNS
answer that changes between a check and the connection (DNS rebinding) cannot slip through.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field

import anyio
import httpcore
import httpx

__all__ = ["AddressPolicy", "BlockedAddressError", "GuardedBackend", "guarded_transport", "is_public"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class BlockedAddressError(Exception):
    """A connection refused by the address policy; the fetcher records it as the page's reason."""

    def __init__(self, host: str, address: str) -> None:
        self.host = host
        self.address = address
        super().__init__(f"{host} resolves to non-public address {address}; allow it with --allow-private")


def is_public(address: IPAddress) -> bool:
    """True for a globally routable unicast address: not private, loopback, link-local, reserved."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast


@dataclass(frozen=True)
class AddressPolicy:
    """Which addresses may be connected to: public ones, plus the explicitly configured endpoints."""

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
                trusted.add((parsed.host.lower(), port))
        return cls(allow_private=allow_private, trusted=frozenset(trusted))


async def resolve(host: str, port: int) -> list[IPAddress]:
    """All addresses ``host`` resolves to, in resolver order, without duplicates."""
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses: list[IPAddress] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])  # drop an IPv6 zone id
        if address not in addresses:
            addresses.append(address)
    return addresses


class GuardedBackend(httpcore.AsyncNetworkBackend):
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


def guarded_transport(policy: AddressPolicy, *, max_connections: int) -> httpx.AsyncHTTPTransport:
    """An httpx transport whose every new connection goes through :class:`GuardedBackend`.

    Environment proxies are ignored (``trust_env=False``): through a proxy the check could not see the real
    destination. httpx has no public hook for the network backend, so its connection pool is replaced.
    """
    transport = httpx.AsyncHTTPTransport(trust_env=False)
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=httpx.create_ssl_context(),
        max_connections=max_connections,
        max_keepalive_connections=max_connections,
        network_backend=GuardedBackend(policy),
    )
    return transport
