"""Who may call, from where, and how often: the access rules of the façade (D1, D15, D16, D18).

The edges (REST, MCP) only pull a Bearer token and a client address out of their protocol
and call :meth:`AccessMixin.authorize`; the checks and their order live here, once:

1. 401 ``UNAUTHORIZED``: the key is missing, malformed, unknown, revoked or expired;
2. 403 ``IP_NOT_ALLOWED``: the workspace has an allowlist and the address is not on it;
3. 429 ``RATE_LIMITED``: the key's token bucket is empty.

A refused request takes no token: a caller outside the allowlist cannot drain the bucket of
a key it holds. This module also owns the shape of an allowlist entry (an IPv4/IPv6 address
or network, IPv4-mapped IPv6 read as IPv4) so that admin writes and request checks agree.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeAlias

from .._domain import ApiKey
from .._errors import IpNotAllowed, RateLimited, RequestInvalid
from .._observability.log_context import bind_log_context
from ..store.base import Store
from .principal import Principal
from .ratelimit import RateLimitDecision, RateLimiter, RateLimitPolicy

if TYPE_CHECKING:
    from .._observability.metrics import Metrics

__all__ = [
    "Access",
    "IpAddress",
    "IpNetwork",
    "RateLimitRefused",
    "admits",
    "normalize_allowlist_entry",
    "parse_ip",
]

IpAddress: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address
IpNetwork: TypeAlias = ipaddress.IPv4Network | ipaddress.IPv6Network


class RateLimitRefused(RateLimited):
    """A 429 ``RATE_LIMITED`` that carries the limiter's decision.

    The edge needs the decision to send the ``RateLimit`` fields and ``Retry-After`` on the
    refusal as on every other answer to the key.
    """

    def __init__(self, decision: RateLimitDecision) -> None:
        super().__init__(retry_after=decision.retry_after)
        self.decision = decision


def parse_ip(value: str | None) -> IpAddress | None:
    """An address from text, or ``None`` for anything else (a Unix socket, ``"testclient"``).

    IPv4-mapped IPv6 (``::ffff:192.0.2.1``, what a dual-stack socket reports for an IPv4
    peer) is read as the IPv4 address, so one allowlist entry covers both spellings. A zone
    (``fe80::1%eth0``) is dropped: it names an interface of ours, not the caller.
    """
    if not value:
        return None
    try:
        address = ipaddress.ip_address(value.partition("%")[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _mapped_to_ipv4(network: IpNetwork) -> IpNetwork:
    mapped = ipaddress.IPv6Network("::ffff:0:0/96")
    if isinstance(network, ipaddress.IPv6Network) and network.subnet_of(mapped):
        base = network.network_address.ipv4_mapped
        assert base is not None
        return ipaddress.IPv4Network((base, network.prefixlen - 96))
    return network


def normalize_allowlist_entry(entry: str) -> str:
    """The canonical text of an allowlist entry, or :class:`RequestInvalid`.

    ``"10.0.0.0/8"`` and ``"2001:db8::/32"`` stay networks; a ``/32`` or ``/128`` becomes the
    bare address; IPv4-mapped IPv6 becomes IPv4. Host bits set (``10.0.0.1/8``) is refused
    rather than widened silently: it is nearly always a typo for a single address.
    """
    text = entry.strip() if isinstance(entry, str) else ""
    try:
        network = ipaddress.ip_network(text, strict=True)
    except ValueError as exc:
        if "has host bits set" in str(exc):
            loose = ipaddress.ip_network(text, strict=False)
            raise RequestInvalid.for_field(
                "cidr", f"has host bits set; did you mean {loose} or a single address?"
            ) from None
        raise RequestInvalid.for_field("cidr", "must be an IPv4 or IPv6 address or CIDR") from None
    network = _mapped_to_ipv4(network)
    if network.num_addresses == 1:
        return str(network.network_address)
    return str(network)


@functools.lru_cache(maxsize=4096)
def _network(entry: str) -> IpNetwork | None:
    # Entries are parsed once per process, not once per request. One that does not parse
    # (written to the store by other means) matches nothing rather than everything.
    try:
        return _mapped_to_ipv4(ipaddress.ip_network(entry.strip(), strict=False))
    except ValueError:
        return None


def admits(entries: list[str], client_ip: str | None) -> bool:
    """D18: whether an allowlist of ``entries`` lets ``client_ip`` call (empty: everyone).
    ``check_client_ip`` enforces it; the dashboard asks it before a change would shut out
    the address its user is on."""
    return not entries or _allowed(parse_ip(client_ip), entries)


def _allowed(address: IpAddress | None, entries: list[str]) -> bool:
    if address is None:
        return False
    for entry in entries:
        network = _network(entry)
        if network is not None and network.version == address.version and address in network:
            return True
    return False


class Access:
    """``messenger.access``: the access checks of one request, in the order of D15's first
    three (who, from where, how often). The REST edge and MCP call :meth:`authorize`."""

    def __init__(
        self,
        store: Store,
        rate_limiter: RateLimiter,
        default_rate_policy: RateLimitPolicy,
        metrics: Metrics,
        authenticate: Callable[[str | None], Awaitable[Principal]],
    ) -> None:
        self._store = store
        self._rate_limiter = rate_limiter
        self._default_rate_policy = default_rate_policy
        self._metrics = metrics
        self._authenticate = authenticate

    def __repr__(self) -> str:
        return "<messenger.access>"

    async def authorize(
        self, api_key: str | None, client_ip: str | None
    ) -> tuple[Principal, RateLimitDecision]:
        """401 → 403 → 429 for one request; the caller and the decision to render.

        ``client_ip`` is the address the edge believes (the peer, or the forwarded client
        behind a trusted proxy); ``None`` or text that is not an address passes only a
        workspace without an allowlist. Raises :class:`~unified_messaging.Unauthorized`,
        :class:`~unified_messaging.IpNotAllowed` or :class:`RateLimitRefused`.
        """
        principal = await self._authenticate(api_key)
        bind_log_context(workspace_id=principal.workspace_id)  # for this request's log lines
        await self.check_client_ip(principal.workspace_id, client_ip)
        assert principal.key is not None  # authenticate always names the key it resolved
        decision = await self.hit_rate_limit(principal.key)
        return principal, decision

    async def check_client_ip(self, workspace_id: str, client_ip: str | None) -> None:
        """Raise :class:`~unified_messaging.IpNotAllowed` unless the workspace admits it."""
        if not admits(await self._store.list_allowlist(workspace_id), client_ip):
            raise IpNotAllowed

    def rate_policy(self, key: ApiKey) -> RateLimitPolicy:
        """The key's own rate and burst where it has them, the messenger's default otherwise."""
        default = self._default_rate_policy
        if key.rate_limit is None and key.rate_burst is None:
            return default
        return _policy(key.rate_limit or default.rate, key.rate_burst or default.burst)

    async def hit_rate_limit(self, key: ApiKey) -> RateLimitDecision:
        """Take one token from the key's bucket (a bulk request is one request, D16)."""
        decision = await self._rate_limiter.hit(f"key:{key.id}", self.rate_policy(key))
        if not decision.allowed:
            self._metrics.rate_limited(code=RateLimitRefused.code)  # D30
            raise RateLimitRefused(decision)
        return decision


@functools.lru_cache(maxsize=1024)
def _policy(rate: float, burst: int) -> RateLimitPolicy:
    return RateLimitPolicy(rate=rate, burst=burst)
