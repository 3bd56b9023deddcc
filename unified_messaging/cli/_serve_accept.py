"""The event loop of a ``serve --workers`` server: it takes one waiting connection at a time.

The servers of ``serve --workers N`` accept from one listening socket. A new connection
wakes every idle server, and asyncio's accept handler then takes up to its backlog (2048
here) of waiting connections in one go: a burst of new keep-alive connections (a load
balancer's pool, a client's 16 connections opened at once) all went to whichever server
woke first and stayed there, leaving the others idle (the benchmark saw 79/14 % of the CPU
between two servers). Taking one connection per wake-up lets every woken server take its
turn, and a busy server, which is not waiting, leaves new connections to the idle ones.

The listen queue keeps its full length: ``listen()`` is called with the server's backlog as
before; only the number taken per wake-up is 1. A flood of short connections costs one more
turn of the loop per connection, which is small beside answering it.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any, Final

__all__ = ["ACCEPTS_PER_WAKE", "SharedSocketLoop"]

#: Connections a server takes from the shared socket each time it is woken.
ACCEPTS_PER_WAKE: Final = 1


class SharedSocketLoop(asyncio.SelectorEventLoop):
    """asyncio's selector loop, taking :data:`ACCEPTS_PER_WAKE` connections per wake-up.

    asyncio passes the server's ``backlog`` both to ``listen()`` and, as the number of
    connections to accept per wake-up, to the loop's ``_start_serving``; only the second is
    changed here (the method is private, stable since Python 3.11: the test of this module
    checks it still takes the argument).
    """

    def _start_serving(
        self,
        protocol_factory: Any,
        sock: socket.socket,
        sslcontext: Any = None,
        server: Any = None,
        backlog: int = 100,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        super()._start_serving(  # type: ignore[misc]
            protocol_factory,
            sock,
            sslcontext,
            server,
            min(backlog, ACCEPTS_PER_WAKE),
            *args,
            **kwargs,
        )
