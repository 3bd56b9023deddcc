"""What the webhook sender and its transport share: the target policy (the SSRF guard's
rules), the URL checks, the outcome of one attempt, and the limits of an attempt.

No httpx here (the URL check imports it on first use): ``_sender`` and ``_transport`` both
import this module, and neither imports the other at module level, so the two are no import
circle. The guard itself, and why it lives in the connection, is
described in ``_sender``'s module docstring.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal
from urllib.parse import urlsplit

from .._errors import RequestInvalid
from .._retry_after import parse_retry_after
from .._version import __version__

__all__ = [
    "DEFAULT_TIMEOUT",
    "DRAIN_BYTES",
    "EXCERPT_BYTES",
    "HOW_TO_ALLOW",
    "MAX_URL_LENGTH",
    "PERMISSIVE",
    "THROTTLE_STATUSES",
    "USER_AGENT",
    "DeliveryOutcome",
    "DeliveryResult",
    "IPAddress",
    "IPNetwork",
    "Resolver",
    "TargetPolicy",
    "TargetRefusal",
    "address_problem",
    "checked_addresses",
    "judge",
    "short_error",
    "system_resolve",
    "url_problem",
    "validate_endpoint_url",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
#: ``(host, port) -> addresses``; the default asks the system resolver (``getaddrinfo``).
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
DeliveryOutcome = Literal["success", "retry", "disable", "refused"]

#: The whole attempt (resolve, connect, send, answer) must finish within this many seconds.
DEFAULT_TIMEOUT: Final = 15.0
USER_AGENT: Final = f"unified-messaging/{__version__}"
MAX_URL_LENGTH: Final = 2048
#: How much of a failed answer's body is kept for the delivery log.
EXCERPT_BYTES: Final = 2048
#: An answer's body is read to its end, up to this much, so its connection can be used again
#: (an unread body leaves the HTTP/1.1 connection mid-message: it must be closed). A longer
#: answer is abandoned, and its connection with it.
DRAIN_BYTES: Final = 64 * 1024
_ERROR_CHARS: Final = 300
THROTTLE_STATUSES: Final = frozenset({429, 502, 503, 504})

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
    #: The start of the receiver's answer, as text (at most :data:`EXCERPT_BYTES` of it):
    #: what an operator reads beside the status code. ``None``: no answer, or an empty one.
    answer: str | None = None

    @property
    def ok(self) -> bool:
        return self.outcome == "success"


def short_error(text: str) -> str:
    text = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return text if len(text) <= _ERROR_CHARS else text[: _ERROR_CHARS - 1] + "…"


#: The most any process may allow: a URL it refuses is wrong whoever delivers it.
PERMISSIVE: Final = TargetPolicy(allow_private=True)
HOW_TO_ALLOW: Final = " (this process does not allow private targets: UM_WEBHOOK_ALLOW_PRIVATE=1)"


def judge(
    status: int, headers: Mapping[str, str], excerpt: str, *, now: datetime
) -> DeliveryResult:
    """The outcome of an answer (the table in ``_sender``'s docstring): the one rule for both
    transports. ``headers`` are looked up by lower-case name; ``excerpt`` is the start of
    the answer's body as text ("" when it could not be read)."""
    answer = excerpt if excerpt.strip() else None
    if 200 <= status < 300:
        return DeliveryResult("success", status_code=status, answer=answer)
    if 300 <= status < 400:
        location = headers.get("location", "")
        note = f"HTTP {status}: redirect not followed" + (f" (to {location})" if location else "")
        return DeliveryResult("retry", status_code=status, error=short_error(note), answer=answer)
    error = short_error(f"HTTP {status}" + (f": {excerpt}" if excerpt.strip() else ""))
    if status == 410:
        return DeliveryResult("disable", status_code=status, error=error, answer=answer)
    retry_after = None
    if status in THROTTLE_STATUSES:
        retry_after = parse_retry_after(headers.get("retry-after"), now=now)
    return DeliveryResult(
        "retry", status_code=status, error=error, retry_after=retry_after, answer=answer
    )


# --------------------------------------------------------------------------- connect-time guard


class TargetRefusal(Exception):
    """The policy refused an address the target resolved to: nothing may be dialled."""


async def system_resolve(host: str, port: int) -> Sequence[str]:
    """The default :data:`Resolver`: the system's ``getaddrinfo``, off the event loop."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


async def checked_addresses(
    host: str, port: int, policy: TargetPolicy, resolve: Resolver, *, within: float | None
) -> list[IPAddress]:
    """The addresses to dial for ``host``, in the resolver's order, once every one of them
    passed ``policy``: the connect-time half of the SSRF guard, for both transports.

    Refuses (:class:`TargetRefusal`) if *any* address is refused: a name answering both a
    public and a private address is misconfigured or an attack on whichever is tried first.
    A resolver that fails or finds nothing raises ``OSError``; one slower than ``within``
    seconds raises ``TimeoutError``.
    """
    try:
        async with asyncio.timeout(within):
            answers = await resolve(host, port)
    except TimeoutError:
        raise TimeoutError(f"resolving {host} timed out") from None
    except OSError as exc:
        raise OSError(f"cannot resolve {host}: {exc}") from None
    addresses: list[IPAddress] = []
    for answer in answers:
        ip = ipaddress.ip_address(answer)
        if ip not in addresses:
            addresses.append(ip)
    if not addresses:
        raise OSError(f"{host} has no addresses")
    for ip in addresses:
        refusal = policy.refusal(ip)
        if refusal is not None:
            raise TargetRefusal(f"{host} resolves to {ip}, a {refusal} address")
    return addresses
