"""Which address a request comes from (D18): the peer's, or the forwarded one behind our proxies;
and whether it came over HTTPS (D31's ``Secure`` cookies and HSTS), by the same trust.

``X-Forwarded-For`` is only believed when the peer is a configured trusted proxy, and then
read from the right: every proxy appends the address it saw, so the right-most hop that is
not one of ours is the first address nobody we trust could have made up. Hops further left
were written by the client and prove nothing.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from starlette.types import Scope

from .._access.authorize import IpAddress, IpNetwork, parse_ip

__all__ = ["ClientAddress"]


class ClientAddress:
    """Resolves a request's client address; ``trusted_proxies`` are addresses or CIDRs."""

    def __init__(self, trusted_proxies: Iterable[str] = ()) -> None:
        networks: list[IpNetwork] = []
        for entry in trusted_proxies:
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                raise ValueError(f"trusted proxy {entry!r} is not an address or CIDR") from None
        self._proxies = tuple(networks)

    def _trusted(self, address: IpAddress) -> bool:
        return any(address.version == net.version and address in net for net in self._proxies)

    def __call__(self, scope: Scope) -> str | None:
        """The client's address as text, or ``None`` if it cannot be known."""
        client = scope.get("client")
        peer_text = str(client[0]) if client else None
        if not self._proxies:
            return peer_text  # no proxy to believe: the peer, as the checks parse it
        peer = parse_ip(peer_text)
        if peer is None or not self._trusted(peer):
            return peer_text
        hops = _forwarded_for(scope)
        if not hops:
            return str(peer)
        for hop in reversed(hops):
            address = _hop_address(hop)
            if address is None:
                # Garbage written by one of our own proxies' clients: nobody to believe.
                return None
            if not self._trusted(address):
                return str(address)
        # Every hop is one of our proxies: the left-most is as close to a client as it gets.
        return str(_hop_address(hops[0]))

    def https(self, scope: Scope) -> bool:
        """Did the client reach us over HTTPS: TLS to this server, or a trusted proxy's
        ``X-Forwarded-Proto: https``? The right-most value counts, as for
        ``X-Forwarded-For``: it is the one our proxy wrote (a client's own goes left)."""
        if scope.get("scheme") == "https":
            return True
        if not self._proxies:
            return False
        client = scope.get("client")
        peer = parse_ip(str(client[0])) if client else None
        if peer is None or not self._trusted(peer):
            return False
        said = _forwarded_proto(scope)
        return bool(said) and said[-1].lower() == "https"


def _forwarded_for(scope: Scope) -> list[str]:
    hops: list[str] = []
    for name, value in scope.get("headers", ()):
        if name.lower() == b"x-forwarded-for":
            hops += [hop.strip() for hop in value.decode("latin-1").split(",")]
    return hops


def _forwarded_proto(scope: Scope) -> list[str]:
    said: list[str] = []
    for name, value in scope.get("headers", ()):
        if name.lower() == b"x-forwarded-proto":
            said += [part.strip() for part in value.decode("latin-1").split(",")]
    return said


def _hop_address(hop: str) -> IpAddress | None:
    """One hop: ``addr``, ``[v6]``, ``[v6]:port`` or ``v4:port`` (some proxies add the port)."""
    if hop.startswith("["):
        return parse_ip(hop[1:].partition("]")[0])
    if hop.count(":") == 1:
        hop = hop.partition(":")[0]
    return parse_ip(hop)
