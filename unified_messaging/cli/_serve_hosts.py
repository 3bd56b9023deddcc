"""The ``Host`` names and browser ``Origin`` values ``/mcp`` answers under ``serve`` (D25).

The MCP SDK's DNS-rebinding protection refuses a request whose ``Host`` it was not told
about (421) or whose ``Origin`` is foreign (403). A library mounting the app may not know its
host names and leaves it off (``create_app(mcp_allowed_hosts=None)``); ``serve`` knows where
it listens, so it always names them: the ``--allowed-host`` names when given, else the names
the bind address is reached by. The origins are those hosts' own pages (``http`` and
``https``, any port) and any ``--allowed-origin``.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence
from urllib.parse import urlsplit

__all__ = ["allowed_hosts", "allowed_origins"]

_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_WILDCARDS = frozenset({"", "0.0.0.0", "::"})  # noqa: S104 - names, not a bind


def allowed_hosts(bind: str, named: Sequence[str], public_url: str | None = None) -> list[str]:
    """The ``Host`` names (each also with any port) ``/mcp`` answers to.

    ``named`` (``--allowed-host``) when given. Else the bind address's own: a loopback bind
    is reached as ``127.0.0.1``, ``localhost`` or ``[::1]``; a wildcard bind (``0.0.0.0``,
    ``::``) by those and by this machine's host name (a proxy or a DNS name in front needs
    ``--allowed-host``); any other address by itself. The host of ``public_url``
    (``--public-url``: where users reach the server) is always one of them.
    """
    public = urlsplit(public_url).hostname if public_url else None
    if named:
        return list(dict.fromkeys([*named, *([public] if public else [])]))
    if public:
        return list(dict.fromkeys([*allowed_hosts(bind, ()), public]))
    if bind in _WILDCARDS:
        return [*_LOOPBACK_NAMES, socket.gethostname()]
    if bind == "localhost" or _is_loopback(bind):
        return list(dict.fromkeys([*_LOOPBACK_NAMES, _as_host(bind)]))
    return [_as_host(bind)]


def allowed_origins(hosts: Sequence[str], named: Sequence[str]) -> list[str]:
    """The browser ``Origin`` values ``/mcp`` accepts: the pages of ``hosts`` themselves
    (``http``/``https``, any port) and ``named`` (``--allowed-origin``). A request without
    ``Origin`` (every client that is not a browser) is not checked."""
    origins: list[str] = list(named)
    for host in hosts:
        for scheme in ("http", "https"):
            origins.append(f"{scheme}://{host}")
            if not _has_port(host):
                origins.append(f"{scheme}://{host}:*")
    return list(dict.fromkeys(origins))


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def _as_host(address: str) -> str:
    # An IPv6 address is written in brackets in a Host header (RFC 9110 §7.2, RFC 3986).
    return f"[{address}]" if ":" in address and not address.startswith("[") else address


def _has_port(host: str) -> bool:
    if host.startswith("["):
        return "]:" in host
    return ":" in host
