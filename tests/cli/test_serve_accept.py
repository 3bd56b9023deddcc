"""A ``serve --workers`` server takes one waiting connection per wake-up (``_serve_accept``),
so a burst of new connections is shared among the servers instead of going to the first."""

from __future__ import annotations

import asyncio
import socket
from collections import Counter
from typing import Any

from unified_messaging.cli._serve_accept import SharedSocketLoop

WAITING = 5


class _Ticks:
    """Counts the turns of a loop: a callback that puts itself back each turn."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.now = 0
        self._loop = loop
        loop.call_soon(self._tick)

    def _tick(self) -> None:
        self.now += 1
        self._loop.call_soon(self._tick)


class _CountingSocket(socket.socket):
    """A listening socket that records the loop turn of every connection it hands out."""

    ticks: _Ticks | None = None
    turns: list[int]

    def accept(self) -> tuple[socket.socket, Any]:
        conn, address = super().accept()  # raises BlockingIOError when none waits
        assert self.ticks is not None
        self.turns.append(self.ticks.now)
        return conn, address


def accepted_per_turn(loop: asyncio.AbstractEventLoop) -> Counter[int]:
    """How many connections the loop's server took in each turn of the loop, with
    :data:`WAITING` connections in the listen queue before it started."""
    listener = _CountingSocket(socket.AF_INET, socket.SOCK_STREAM)
    listener.turns = []
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    clients = [socket.create_connection(listener.getsockname()) for _ in range(WAITING)]
    transports: list[asyncio.BaseTransport] = []

    class Kept(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            transports.append(transport)

    try:
        listener.ticks = _Ticks(loop)
        server = loop.run_until_complete(loop.create_server(Kept, sock=listener, backlog=64))
        for _ in range(WAITING * 4):
            loop.run_until_complete(asyncio.sleep(0))
        server.close()
        for transport in transports:
            transport.close()
        loop.run_until_complete(server.wait_closed())
        assert len(transports) == WAITING  # every one in the end
        return Counter(listener.turns)
    finally:
        for client in clients:
            client.close()
        loop.close()


def test_one_connection_per_wake_up() -> None:
    per_turn = accepted_per_turn(SharedSocketLoop())
    assert sum(per_turn.values()) == WAITING
    assert max(per_turn.values()) == 1


def test_asyncio_alone_takes_the_whole_queue_in_one_turn() -> None:
    """What the loop changes; and if a Python renamed the private method it overrides,
    the test above fails rather than this one."""
    per_turn = accepted_per_turn(asyncio.SelectorEventLoop())
    assert list(per_turn.values()) == [WAITING]
