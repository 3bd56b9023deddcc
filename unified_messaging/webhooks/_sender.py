"""Outbound webhook HTTP (D19): one POST per attempt, its outcome, and the SSRF guard.

:class:`WebhookSender` posts a signed body and classifies the answer. It never raises for
anything the receiver or the network did; the worker stores the :class:`DeliveryResult` and
asks ``_webhook_schedule`` when to try again.

    2xx within the time-out         success
    3xx                             retry (redirects are never followed: update the URL)
    410 Gone                        disable the endpoint
    429, 502, 503, 504              retry, honouring Retry-After (see ``_webhook_schedule``)
    any other status                retry
    time-out, connection failure    retry
    target refused by this process's
    policy (private address), at
    connect time or in the URL      refused: retried on the schedule, but the endpoint's
                                    health is untouched (see below)
    URL refused before any I/O      disable (it cannot succeed until the URL is edited)

A refusal that depends on this process's policy (``UM_WEBHOOK_ALLOW_PRIVATE``, the allowed
networks) says nothing about the endpoint: another process, started with private targets
allowed, created it and may deliver to it. So it never disables the endpoint; this process
just does not send.

The SSRF guard. Endpoint URLs come from customers, and the worker runs inside the operator's
network, so a URL naming ``169.254.169.254`` or ``10.0.0.5`` (or a name that resolves there)
would let a customer make requests into it. Checking the URL when it is added is not enough:
DNS answers change, so a name can resolve to a public address at the check and to a private
one a second later when the request is made (DNS rebinding). The check therefore lives in the
connection itself: :class:`GuardedNetworkBackend` replaces httpcore's network backend, resolves
the host once, refuses the connection if any resolved address is not a global unicast address,
and then dials that same checked IP literal, so nothing is resolved twice. TLS still verifies
the certificate against the URL's host name (httpcore passes it as ``server_hostname``).
Redirects are not followed, so a receiver cannot bounce us elsewhere either; environment
proxies and ``.netrc`` are ignored (``trust_env=False``), since a proxy would do the dialling.

The guard and the POST itself live in ``webhooks._transport`` (httpx and httpcore), which a
sender imports on its first delivery: a process that builds a Messenger and never delivers
(a one-shot admin command) does not pay for them. Their names are importable from here too.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, Self
from urllib.parse import urlsplit

from .._clock import Clock, SystemClock
from .._errors import RequestInvalid
from .._observability.tracing import webhook_span
from .._version import __version__
from ._signing import signature_headers

if TYPE_CHECKING:
    import httpx

    from ._transport import (
        GuardedNetworkBackend,
        GuardedTransport,
        TargetRefused,
        guarded_client,
    )

__all__ = [
    "DEFAULT_TIMEOUT",
    "USER_AGENT",
    "DeliveryOutcome",
    "DeliveryResult",
    "EndpointSlots",
    "GuardedNetworkBackend",
    "GuardedTransport",
    "IPAddress",
    "IPNetwork",
    "Resolver",
    "TargetPolicy",
    "TargetRefused",
    "WebhookSender",
    "address_problem",
    "guarded_client",
    "url_problem",
    "validate_endpoint_url",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
#: ``(host, port) -> addresses``; the default asks the system resolver (``getaddrinfo``).
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
DeliveryOutcome = Literal["success", "retry", "disable", "refused"]

#: Names that live in ``webhooks._transport`` (httpx), importable from here as they always were.
_TRANSPORT_NAMES: Final = frozenset(
    {"GuardedNetworkBackend", "GuardedTransport", "TargetRefused", "guarded_client"}
)


def __getattr__(name: str) -> Any:
    # PEP 562: only a caller that asks for the transport pays for importing httpx.
    if name in _TRANSPORT_NAMES:
        from . import _transport

        return getattr(_transport, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: The whole attempt (resolve, connect, send, answer) must finish within this many seconds.
DEFAULT_TIMEOUT: Final = 15.0
USER_AGENT: Final = f"unified-messaging/{__version__}"
MAX_URL_LENGTH: Final = 2048
#: How much of a failed answer's body is kept for the delivery log.
EXCERPT_BYTES: Final = 200
#: An answer's body is read to its end, up to this much, so its connection can be used again
#: (an unread body leaves the HTTP/1.1 connection mid-message: it must be closed). A longer
#: answer is abandoned, and its connection with it.
DRAIN_BYTES: Final = 64 * 1024
#: Requests in flight to one endpoint (its URL) from one sender at most.
DEFAULT_PER_ENDPOINT: Final = 8
_ERROR_CHARS: Final = 300
_THROTTLE_STATUSES: Final = frozenset({429, 502, 503, 504})

_CGNAT: Final = ipaddress.IPv4Network("100.64.0.0/10")
_BROADCAST: Final = ipaddress.IPv4Address("255.255.255.255")
_ULA: Final = ipaddress.IPv6Network("fc00::/7")
_NAT64: Final = ipaddress.IPv6Network("64:ff9b::/96")
_IPV4_COMPATIBLE: Final = ipaddress.IPv6Network("::/96")
#: Never a sensible webhook target, even when private targets are allowed: "0.0.0.0" dials
#: the local host on Linux, and the others are not unicast.
_ALWAYS_REFUSED: Final = frozenset({"unspecified", "multicast", "broadcast"})
_LOCAL_NAMES: Final = frozenset({"localhost", "ip6-localhost", "ip6-loopback"})


# --------------------------------------------------------------------------- address policy


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, bool] | None:
    """The IPv4 address an IPv6 address carries, and whether packets really go to it alone."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped, True
    if ip in _NAT64 or (ip in _IPV4_COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF), True
    if ip.sixtofour is not None:
        return ip.sixtofour, False
    if ip.teredo is not None:
        return ip.teredo[1], False
    return None


def address_problem(ip: IPAddress) -> str | None:
    """Why ``ip`` is not a global unicast address (``"loopback"``, ``"private"`` …), or None."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            inner, exclusive = embedded
            problem = address_problem(inner)
            if problem is not None or exclusive:
                return problem
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_multicast:
        return "multicast"
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    if isinstance(ip, ipaddress.IPv4Address):
        if ip == _BROADCAST:
            return "broadcast"
        if ip in _CGNAT:
            return "shared (CGNAT)"
    elif ip in _ULA or ip.is_site_local:
        return "unique local"
    if ip.is_private:
        return "private"
    if ip.is_reserved or not ip.is_global:
        return "reserved"
    return None


class TargetPolicy:
    """Which addresses webhooks may reach: global unicast only, unless the operator says more.

    ``allow_private`` admits loopback, private, link-local, CGNAT and unique-local addresses
    (a single-host deployment, or tests); ``allowed_networks`` admits just the CIDRs listed.
    Unspecified, multicast and broadcast addresses are refused unless listed explicitly.
    """

    __slots__ = ("allow_private", "allowed_networks")

    def __init__(
        self, *, allow_private: bool = False, allowed_networks: Iterable[str | IPNetwork] = ()
    ) -> None:
        self.allow_private = allow_private
        self.allowed_networks: tuple[IPNetwork, ...] = tuple(
            ipaddress.ip_network(net, strict=False) if isinstance(net, str) else net
            for net in allowed_networks
        )

    def __repr__(self) -> str:
        nets = [str(net) for net in self.allowed_networks]
        return f"TargetPolicy(allow_private={self.allow_private}, allowed_networks={nets})"

    def _listed(self, ip: IPAddress) -> bool:
        forms: list[IPAddress] = [ip]
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            forms.append(ip.ipv4_mapped)
        return any(form in net for form in forms for net in self.allowed_networks)

    def refusal(self, ip: IPAddress) -> str | None:
        """Why the policy refuses ``ip``, or None when webhooks may go there."""
        problem = address_problem(ip)
        if problem is None or self._listed(ip):
            return None
        if self.allow_private and problem not in _ALWAYS_REFUSED:
            return None
        return problem


def _literal_ip(host: str) -> IPAddress | None:
    """The address ``host`` spells, including the legacy IPv4 forms resolvers still accept
    (``127.1``, ``0x7f000001``, ``2130706433``), which would otherwise pass as host names."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if host[:1].isdigit() and all(c in "0123456789abcdefxABCDEFX." for c in host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def url_problem(url: str, policy: TargetPolicy) -> str | None:
    """What is wrong with ``url`` as a webhook target, judged without any I/O; None if fine.

    Only the URL's own text is judged here. A host name is judged when it is dialled.
    """
    if not isinstance(url, str) or not url:
        return "must be a URL"
    if len(url) > MAX_URL_LENGTH:
        return f"must be at most {MAX_URL_LENGTH} characters"
    import httpx  # its URL parser is the one that dials; loaded once, at the first check

    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return "is not a valid URL"
    if parsed.scheme not in ("http", "https"):
        return "must use http or https"
    if parsed.userinfo or "@" in urlsplit(url).netloc:
        return "must not contain credentials"
    host = parsed.host.rstrip(".").lower()
    if not host:
        return "must name a host"
    ip = _literal_ip(host)
    if ip is not None:
        refusal = policy.refusal(ip)
        return None if refusal is None else f"points to a {refusal} address"
    if "%" in host or any(ch.isspace() for ch in host):
        return "has an invalid host"
    is_local = host in _LOCAL_NAMES or host.endswith(".localhost")
    loopbacks = (ipaddress.IPv4Address("127.0.0.1"), ipaddress.IPv6Address("::1"))
    # RFC 6761: these names are the local host; no resolver is needed to know where they go.
    if is_local and all(policy.refusal(addr) for addr in loopbacks):
        return "points to the local host"
    return None


def validate_endpoint_url(
    url: str, *, allow_private: bool = False, allowed_networks: Iterable[str | IPNetwork] = ()
) -> str:
    """Check a webhook endpoint URL when it is added; return it, or raise ``RequestInvalid``.

    This catches what the URL itself says (scheme, credentials, a private IP literal,
    ``localhost``). Where a host name resolves is checked on every delivery, when dialling.
    """
    policy = TargetPolicy(allow_private=allow_private, allowed_networks=allowed_networks)
    problem = url_problem(url, policy)
    if problem is not None:
        raise RequestInvalid.for_field("url", problem)
    return url


# --------------------------------------------------------------------------- delivery


@dataclass(frozen=True, slots=True)
class DeliveryResult:
    """What one attempt came to. ``error`` is short and never holds more than an excerpt of
    the receiver's answer; ``retry_after`` is its ``Retry-After`` in seconds, if it sent one."""

    outcome: DeliveryOutcome
    status_code: int | None = None
    error: str | None = None
    retry_after: float | None = None

    @property
    def ok(self) -> bool:
        return self.outcome == "success"


def _short(text: str) -> str:
    text = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return text if len(text) <= _ERROR_CHARS else text[: _ERROR_CHARS - 1] + "…"


#: The most any process may allow: a URL it refuses is wrong whoever delivers it.
_PERMISSIVE: Final = TargetPolicy(allow_private=True)
_HOW: Final = " (this process does not allow private targets: UM_WEBHOOK_ALLOW_PRIVATE=1)"


class Post(Protocol):
    """``webhooks._transport.post``: one attempt through ``client``."""

    async def __call__(
        self,
        client: httpx.AsyncClient,
        url: str,
        body: bytes,
        headers: Mapping[str, str],
        *,
        timeout: float,  # noqa: ASYNC109 - the attempt's bound, passed on
        clock: Clock,
    ) -> DeliveryResult: ...


class EndpointSlots:
    """At most ``per_endpoint`` requests in flight to each endpoint, one bound per endpoint
    URL (issue 22, item 18).

    The bound was per origin (scheme, host and port): the hanging deliveries of one endpoint
    took every slot of its host and port, and a healthy endpoint on the same host waited up
    to two time-outs behind them. Keyed by the endpoint's URL, one endpoint's slots are its
    own. A bound is dropped when nothing holds or waits for it, so the table stays as small
    as the deliveries in flight.
    """

    __slots__ = ("_bounds", "_per_endpoint")

    def __init__(self, per_endpoint: int) -> None:
        if per_endpoint < 1:
            raise ValueError("per_endpoint must be at least 1")
        self._per_endpoint = per_endpoint
        self._bounds: dict[str, tuple[asyncio.Semaphore, list[int]]] = {}

    def __len__(self) -> int:
        return len(self._bounds)

    @contextlib.asynccontextmanager
    async def slot(self, url: str) -> AsyncIterator[None]:
        """Hold one of ``url``'s slots while inside."""
        entry = self._bounds.get(url)
        if entry is None:
            entry = self._bounds[url] = (asyncio.Semaphore(self._per_endpoint), [0])
        bound, users = entry
        users[0] += 1
        try:
            async with bound:
                yield
        finally:
            users[0] -= 1
            if users[0] == 0:
                del self._bounds[url]


class WebhookSender:
    """POSTs webhook bodies and classifies the answers (see the module docstring).

    Without a ``client`` it makes a guarded one (:func:`guarded_client`) and closes it in
    :meth:`aclose`. An injected client is used as it is: give it a :class:`GuardedTransport`
    (or, in tests, an ``httpx.MockTransport``), since the host-name check lives there. The URL
    checks of :func:`url_problem` run here on every delivery whatever the client.
    """

    def __init__(
        self,
        client: httpx.AsyncClient | None = None,
        *,
        policy: TargetPolicy | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        clock: Clock | None = None,
        per_endpoint: int = DEFAULT_PER_ENDPOINT,
    ) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        # One bound per endpoint, so a slow receiver holds at most per_endpoint connections
        # and never delays another endpoint, on its host or elsewhere.
        self._slots = EndpointSlots(per_endpoint)
        self._policy = policy or TargetPolicy()
        self._timeout = timeout
        self._clock = clock or SystemClock()
        self._owns_client = client is None
        #: Made (guarded_client) with the transport on the first delivery; see _connection.
        self._client: httpx.AsyncClient | None = client
        self._post: Post | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"WebhookSender(policy={self._policy!r}, timeout={self._timeout})"

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        self._closed = True
        if self._owns_client and self._client is not None:
            await self._client.aclose()

    async def deliver_signed(
        self, url: str, body: bytes, *, secrets: Sequence[str], msg_id: str
    ) -> DeliveryResult:
        """Sign ``body`` for this attempt and deliver it.

        The ``webhook-id`` (``msg_id``) stays the same on every retry of an event, while the
        timestamp is the attempt's own, so a retry hours later is not refused as a replay.
        """
        timestamp = int(self._clock.now().timestamp())
        return await self.deliver(url, body, signature_headers(secrets, msg_id, timestamp, body))

    async def deliver(self, url: str, body: bytes, headers: Mapping[str, str]) -> DeliveryResult:
        """Make one attempt; never raises for what the network or the receiver did."""
        with webhook_span(url) as traced:
            result = await self._deliver(url, body, headers)
            traced.result(result.outcome, result.status_code)
            return result

    async def _deliver(self, url: str, body: bytes, headers: Mapping[str, str]) -> DeliveryResult:
        problem = url_problem(url, self._policy)
        if problem is not None:
            if url_problem(url, _PERMISSIVE) is None:
                return DeliveryResult("refused", error=_short(f"refused: URL {problem}{_HOW}"))
            return DeliveryResult("disable", error=f"refused: URL {problem}")
        request_headers = {
            "content-type": "application/json",
            "user-agent": USER_AGENT,
            # Failed answers are excerpted raw; a compressed one would be unreadable.
            "accept-encoding": "identity",
            **headers,
        }
        client, attempt = self._connection()
        async with self._slots.slot(url):
            return await attempt(
                client, url, body, request_headers, timeout=self._timeout, clock=self._clock
            )

    def _connection(self) -> tuple[httpx.AsyncClient, Post]:
        """The client and the transport's attempt, both loaded (with httpx) once, on the
        first delivery; every later delivery reuses them."""
        client, attempt = self._client, self._post
        if client is not None and attempt is not None:
            return client, attempt
        if self._closed:
            raise RuntimeError("Cannot deliver: the webhook sender has been closed.")
        from ._transport import guarded_client, post

        if client is None:
            client = self._client = guarded_client(self._policy, timeout=self._timeout)
        self._post = post
        return client, post
