"""The listening socket of ``serve`` and of ``--metrics-bind``, and the address to print.

Its own module so that ``_serve`` and ``_metrics_options`` both use it without importing
each other (they were an import circle).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

from ._args import CommandFailed

__all__ = ["base_url", "listening"]


@contextmanager
def listening(host: str, port: int, backlog: int) -> Iterator[socket.socket]:
    """The server's socket, bound and listening, before uvicorn starts.

    Bound here rather than by uvicorn so that the port ``--port 0`` got is known before
    the address is printed, and a busy port is this command's error (uvicorn would exit
    the process itself). Listening at once means a client that connects as soon as the
    address is printed waits in the backlog instead of being refused.
    """
    # uvicorn's rule for the address family: a colon means IPv6. The explicit protocol is
    # what makes asyncio set TCP_NODELAY on accepted sockets (it checks proto); without it
    # every keep-alive answer written in two parts waited ~40 ms for a delayed ACK.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        raise CommandFailed(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    try:
        yield sock
    finally:
        sock.close()


def base_url(host: str, port: int, *, local: bool = True) -> str:
    """The address to print for a server bound to ``host``:``port``."""
    # A wildcard bind is reachable on loopback; that is the address a local curl should use.
    wildcards = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}  # noqa: S104
    shown = wildcards.get(host, host) if local else host
    if ":" in shown:
        shown = f"[{shown}]"
    return f"http://{shown}:{port}"
