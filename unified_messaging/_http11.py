"""HTTP/1.1 over asyncio with h11: one connection, and the idle connections kept per origin.

The core of the project's two outbound clients: the webhook sender's
(``webhooks._http11.WebhookClient``) and every live adapter's (``providers._transport``).
Both need the same small thing: one request, its answer read as it arrives, the connection
kept for the next request. httpx's stack (request and response objects, httpcore's pool and
its per-request housekeeping over every connection) was most of the CPU of a call that
needs none of the rest.

- **One connection** (:class:`Connection`) is an ``asyncio.Protocol``: what arrives goes
  straight into h11, and a request waits on a future for more. A request leaves in one write.
  Data arriving while the connection is idle poisons it (it would be read as the next answer).
- **Kept alive per origin** (:class:`IdleConnections`): a stack per origin, the most recently
  used handed out first, none older than ``idle_expiry``, at most ``max_idle`` in all; one
  that closed or spoke while idle is dropped, without a system call.
- **Stale connections.** A kept connection found closed before any byte of the request left
  is replaced at once (:class:`Stale`): nobody saw the request. One that closes after the
  request left and before any byte of the answer is :class:`Stale` too only if the caller
  says so (``retry_unanswered``): the webhook sender does (a receiver dedupes by event id),
  a provider call does not (the provider may have acted on it).
- **Time-outs** are optional, per phase: ``read`` bounds each wait for the answer's bytes,
  ``write`` each wait for the socket to take the request; the caller bounds the connect.

Failures raise :class:`HttpError` subclasses named like httpx's exceptions, with the
system's error as their cause.
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass
from typing import Final

import h11
import httpx

__all__ = [
    "ConnectError",
    "ConnectTimeout",
    "Connection",
    "HttpError",
    "IdleConnections",
    "Origin",
    "PoolTimeout",
    "ReadError",
    "ReadTimeout",
    "RemoteProtocolError",
    "Stale",
    "Target",
    "Targets",
    "WriteError",
    "WriteTimeout",
    "dial",
    "parse_target",
]

#: The longest answer head (status line and fields) read; h11's own default.
MAX_HEAD: Final = 16 * 1024

#: ``(scheme, host, port)``: the connections of one origin are interchangeable.
Origin = tuple[str, str, int]


class HttpError(Exception):
    """The request failed in the network or the protocol (never a status code)."""


class ConnectError(HttpError):
    """No connection: resolving, dialling or the TLS handshake failed."""


class ConnectTimeout(ConnectError):
    """No connection within the connect time-out."""


class PoolTimeout(HttpError):
    """No free connection within the pool time-out: nothing was sent."""


class WriteError(HttpError):
    """The connection failed while the request was written."""


class WriteTimeout(WriteError):
    """The socket took no more of the request within the write time-out."""


class ReadError(HttpError):
    """The connection failed while the answer was read."""


class ReadTimeout(ReadError):
    """No byte of the answer within the read time-out."""


class RemoteProtocolError(HttpError):
    """The server broke HTTP/1.1 (a malformed answer, or none before it closed)."""


class Stale(Exception):
    """A kept-alive connection died before the request could matter: dial afresh, once."""


@dataclass(frozen=True, slots=True)
class Target:
    """What a URL means to a client, parsed once (by httpx's parser, the one the SSRF check
    judges with, so the check and the dialler agree on the host)."""

    origin: Origin
    #: The host name or IP literal to resolve and to verify TLS against (no brackets).
    host: str
    host_header: bytes
    #: The path and the query, as they go on the request line.
    path: bytes


def parse_target(url: str) -> Target:
    """``url`` as a :class:`Target`; :class:`ConnectError` if it is not an http(s) URL."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ConnectError(f"invalid URL: {exc}") from None
    scheme = parsed.scheme
    if scheme not in ("http", "https") or not parsed.raw_host:
        raise ConnectError("the URL must be http(s) and name a host")
    host = parsed.raw_host.decode("ascii")  # IDNA-encoded; IPv6 without brackets
    port = parsed.port or (443 if scheme == "https" else 80)
    return Target((scheme, host, port), host, parsed.netloc, parsed.raw_path)


class Targets:
    """URLs parsed once: a client calls a handful; the table is cleared if it fills."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._parsed: dict[str, Target] = {}

    def __call__(self, url: str) -> Target:
        target = self._parsed.get(url)
        if target is None:
            if len(self._parsed) >= self._size:
                self._parsed.clear()
            target = self._parsed[url] = parse_target(url)
        return target


def _time_out(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


class Connection(asyncio.Protocol):
    """One HTTP/1.1 connection (see the module docstring). Use: :meth:`start` a request,
    :meth:`receive` its body until ``b""``, then :meth:`reusable` says whether it may serve
    another; :meth:`abort` one left mid-request."""

    __slots__ = (
        "_closed",
        "_eof_fed",
        "_h11",
        "_paused",
        "_received",
        "_wake",
        "_writable",
        "busy",
        "idle_since",
        "transport",
        "unusable",
    )

    def __init__(self) -> None:
        self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
        self.transport: asyncio.Transport | None = None
        self._wake: asyncio.Future[None] | None = None
        self._writable: asyncio.Future[None] | None = None
        self._paused = False
        self._closed = False  # the peer closed, or the connection was lost
        self._eof_fed = False
        self._received = False  # any byte of the current answer
        self.busy = False
        self.unusable = False
        self.idle_since = 0.0

    # -------------------------------------------------------------- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if not self.busy:
            # Nothing may arrive between answers: a server that sends anyway is confused,
            # and its bytes would be read as the next answer.
            self.unusable = True
            return
        self._received = True
        self._h11.receive_data(data)
        self._notify()

    def eof_received(self) -> bool:
        self._closed = True
        self._notify()
        return False  # let the transport close itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self.unusable = True
        self._notify()
        waiter, self._writable = self._writable, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        waiter, self._writable = self._writable, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _notify(self) -> None:
        waiter, self._wake = self._wake, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -------------------------------------------------------------- use

    def usable(self) -> bool:
        return not (self.unusable or self._closed or self.transport is None)

    def abort(self) -> None:
        self.unusable = True
        if self.transport is not None:
            self.transport.abort()

    async def start(
        self,
        method: bytes,
        path: bytes,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        *,
        reused: bool,
        retry_unanswered: bool = False,
        write_timeout: float | None = None,
        read_timeout: float | None = None,
    ) -> h11.Response:
        """Send one request and wait for its answer's head (``1xx`` answers skipped)."""
        assert self.transport is not None
        self.busy = True
        self._received = False
        h = self._h11
        try:
            data = h.send(h11.Request(method=method, target=path, headers=headers))
            if body:
                data += h.send(h11.Data(data=body))
            data += h.send(h11.EndOfMessage())
        except h11.LocalProtocolError as exc:
            raise WriteError(f"cannot send this request: {exc}") from None
        if self._closed:
            raise Stale if reused else WriteError("the connection closed")
        self.transport.write(data)
        while self._paused and not self._closed:
            waiter = self._writable = asyncio.get_running_loop().create_future()
            try:
                await self._wait(waiter, write_timeout)
            except TimeoutError:
                raise WriteTimeout("timed out writing the request") from None
        stale = reused and retry_unanswered
        event = await self._next_event(stale=stale, timeout=read_timeout)
        while isinstance(event, h11.InformationalResponse):  # 100 Continue and the like
            event = await self._next_event(stale=stale, timeout=read_timeout)
        if isinstance(event, h11.ConnectionClosed):
            raise RemoteProtocolError("the server closed without answering")
        assert isinstance(event, h11.Response)
        return event

    async def receive(self, *, read_timeout: float | None = None) -> bytes:
        """The next piece of the answer's body; ``b""`` at its end."""
        while True:
            event = await self._next_event(stale=False, timeout=read_timeout)
            if isinstance(event, h11.Data):
                if event.data:
                    return bytes(event.data)
                continue
            if isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                self.busy = False
                return b""

    def reusable(self) -> bool:
        """After the answer's end: may this connection serve another request? (It is made
        ready for one if so.)"""
        h = self._h11
        clean = h.our_state is h11.DONE and h.their_state is h11.DONE
        # Bytes after the answer (a server that pipelines, or lies about a length) would be
        # read as the next answer: such a connection is not reused.
        if clean and not self._closed and not self.unusable and not h.trailing_data[0]:
            h.start_next_cycle()
            return True
        return False

    async def _wait(self, waiter: asyncio.Future[None], timeout: float | None) -> None:  # noqa: ASYNC109 - one timer per wait, cheaper than a cancel scope
        if timeout is None:
            await waiter
            return
        handle = asyncio.get_running_loop().call_later(timeout, _time_out, waiter)
        try:
            await waiter
        finally:
            handle.cancel()

    async def _next_event(self, *, stale: bool, timeout: float | None) -> object:  # noqa: ASYNC109
        h = self._h11
        while True:
            try:
                event = h.next_event()
            except h11.RemoteProtocolError as exc:
                raise RemoteProtocolError(str(exc) or "malformed answer") from None
            if event is not h11.NEED_DATA:
                return event
            if self._closed:
                if not self._received:
                    if stale:
                        raise Stale
                    raise RemoteProtocolError("the server closed without answering")
                if self._eof_fed:
                    raise ReadError("the connection was lost")
                self._eof_fed = True
                h.receive_data(b"")
                continue
            waiter = self._wake = asyncio.get_running_loop().create_future()
            try:
                await self._wait(waiter, timeout)
            except TimeoutError:
                raise ReadTimeout(f"no answer within {timeout:g} s") from None


async def dial(
    host: str,
    port: int,
    *,
    ssl_context: ssl.SSLContext | None,
    server_hostname: str,
    timeout: float | None = None,  # noqa: ASYNC109 - the connect time-out, as httpx names it
) -> Connection:
    """A new connection to ``host`` (a name or an IP literal), TLS verified against
    ``server_hostname`` when ``ssl_context`` is given."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(timeout):
            _, connection = await loop.create_connection(
                Connection,
                host,
                port,
                ssl=ssl_context,
                server_hostname=server_hostname if ssl_context is not None else None,
            )
    except TimeoutError:
        raise ConnectTimeout(f"timed out connecting to {host}:{port}") from None
    except (OSError, ssl.SSLError) as exc:
        raise ConnectError(str(exc) or type(exc).__name__) from exc
    return connection


class IdleConnections:
    """Kept-alive connections per origin (see the module docstring)."""

    def __init__(self, *, max_idle: int, idle_expiry: float) -> None:
        self.max_idle = max_idle
        self.idle_expiry = idle_expiry
        self.stacks: dict[Origin, list[Connection]] = {}
        self.count = 0
        self.closed = False

    def take(self, origin: Origin) -> Connection | None:
        stack = self.stacks.get(origin)
        if not stack:
            return None
        now = asyncio.get_running_loop().time()
        while stack:
            connection = stack.pop()  # the most recently used: the likeliest to be alive
            self.count -= 1
            if connection.usable() and now - connection.idle_since < self.idle_expiry:
                return connection
            connection.abort()
        return None

    def put(self, origin: Origin, connection: Connection) -> None:
        now = asyncio.get_running_loop().time()
        if self.count >= self.max_idle:
            self._sweep(now)  # the dead and the expired of origins no longer visited
        if self.closed or self.count >= self.max_idle:
            connection.abort()
            return
        connection.idle_since = now
        self.stacks.setdefault(origin, []).append(connection)
        self.count += 1

    def close(self) -> None:
        self.closed = True
        for stack in self.stacks.values():
            for connection in stack:
                connection.abort()
        self.stacks.clear()
        self.count = 0

    def _sweep(self, now: float) -> None:
        for origin, stack in list(self.stacks.items()):
            alive = [c for c in stack if c.usable() and now - c.idle_since < self.idle_expiry]
            for connection in stack:
                if connection not in alive:
                    connection.abort()
            self.count -= len(stack) - len(alive)
            if alive:
                self.stacks[origin] = alive
            else:
                del self.stacks[origin]
