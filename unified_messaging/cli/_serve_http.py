"""The HTTP/1.1 connection ``serve`` runs: uvicorn's protocol plus the limits it lacks.

uvicorn bounds the idle time between requests (``timeout_keep_alive``) and, with h11, the
size of a request head (16 KiB), but not the number of open connections at accept time, nor
how long a client may take to send a head or a body, nor the connection it has just opened
and never used. One slow client costs nothing; thousands hold file descriptors until the
process cannot accept, answer health checks or open its database. :class:`_Guard` adds, to
uvicorn's h11 protocol (:class:`GuardedH11Protocol`) and to its httptools one
(``_serve_httptools.GuardedHttpToolsProtocol``, chosen by ``serve --http``):

* a connection cap: past ``max_connections`` a new connection gets a canned 503 and is
  closed before anything is parsed, except :data:`HEALTH_SLOTS` more, each admitted for
  one ``GET /v1/health`` only (anything else gets the 503 from its first bytes; the answer
  closes it), so a load balancer's health check still passes while the cap bites;
* a head deadline: a request head must be complete within ``header_timeout`` of the
  connection opening or of its first byte (later requests on a keep-alive connection);
  a partial head then gets a 408, an unused connection is just closed;
* a body deadline: the whole body within ``body_timeout`` of the head, else the connection
  is closed (the app, mid-read, sees a disconnect);
* TCP_NODELAY on every accepted socket, so an answer written in two parts is not held back
  by the client's delayed ACK;
* a bounded head: an unfinished head past :data:`MAX_HEAD` gets a 431 (h11's own bound,
  told apart from other errors here; httptools has none, so it is counted there);
* one set of rules for every complete head, whichever parser read it
  (:func:`~._serve_head.head_refusal`): too large is 431, ``Content-Length`` with
  ``Transfer-Encoding`` or a missing or doubled ``Host`` is 400, and the connection closes.

The answers written here, before the app runs, carry the D13 body and an ``X-Request-ID``.
Refusals and cut-offs are logged through :class:`LogThrottle`, one line per interval, not
one per connection: a flood must not become a flood of log lines.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
from abc import abstractmethod
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Literal

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from .._access.ratelimit import retry_after_header
from ..asgi._answer_headers import ANSWER_HEADERS
from ..asgi._errors import JSON_MEDIA_TYPE, coded_body, json_bytes
from ..asgi._request_id import new_request_id
from ._serve_head import HEALTH_PATH, MAX_HEAD, HeadRefusal, head_refusal
from ._serve_limits import LogThrottle, ServeLimits

__all__ = [
    "HEALTH_SLOTS",
    "MAX_HEAD",
    "GuardedH11Protocol",
    "Http",
    "accept_errors_reported",
    "server_answer",
]

#: The HTTP/1.1 parsers ``serve --http`` offers.
Http = Literal["h11", "httptools"]
#: Which deadline runs: the head's (``--header-timeout``) or the body's (``--body-timeout``).
_Phase = Literal["head", "body"]
_Headers = Iterable[tuple[bytes, bytes]]
#: Connections admitted past ``max_connections``, each for one ``GET /v1/health`` only.
HEALTH_SLOTS: Final = 2
#: How a health slot's request must begin (then a space or a query string).
_HEALTH_LINE: Final = b"GET " + HEALTH_PATH
#: Seconds a health slot's head may take (the head deadline, shortened): a slot held by a
#: slow client is soon free again for the health check it exists for.
HEALTH_SLOT_HEADER_TIMEOUT: Final = 2.0

_OUT_OF_RESOURCES: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
#: Seconds a connection that got a final answer (400, 408) keeps reading, and dropping,
#: what its client still sends before it is closed (see ``_answer_and_close``).
LINGER: Final = 2.0


@dataclass(frozen=True)
class _Reports:
    refused: LogThrottle
    slow_head: LogThrottle
    slow_body: LogThrottle


class _Guard(asyncio.Protocol):
    """What both protocols share: the refusal, the deadlines' timer and the final answers.

    A protocol says which phase its client is in (:meth:`_follow_request` after each read,
    and after each answer) and whether any byte of a head has come (:meth:`_head_started`).
    It comes first among a protocol's bases (``class P(_Guard, H11Protocol)``), so its
    ``super()`` is uvicorn's protocol.
    """

    limits: ClassVar[ServeLimits]
    reports: ClassVar[_Reports]
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    connections: set[Any]
    timeout_keep_alive: int
    access_logger: logging.Logger
    access_log: bool

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if self._over_the_cap(transport):
            return
        assert isinstance(transport, asyncio.Transport)
        super().connection_made(transport)
        self._arm("head")

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._refused:
            return
        super().connection_lost(exc)

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        # super() is uvicorn's protocol (see the class doc), which takes these arguments.
        super().__init__(config, server_state, app_state, _loop)  # type: ignore[call-arg]
        # uvicorn types it as int; call_later takes any float, and tests use fractions.
        self.timeout_keep_alive = self.limits.keep_alive_timeout  # type: ignore[assignment]
        self._deadline: asyncio.TimerHandle | None = None
        self._watching: _Phase | None = None
        self._refused = False
        self._lingering = False
        # Admitted past the cap for one GET /v1/health (see _over_the_cap), and how much of
        # its request line has been checked.
        self._health_only = False
        self._health_line = b""
        # Why the complete head was refused (head_refusal), for send_400_response.
        self._head_refusal: HeadRefusal | None = None
        # uvicorn formats each answer's access-log arguments (the client's address, the
        # path) before the logger drops the line; above INFO (``--log-level warning``) it
        # drops them all, so that work is skipped (~2 % of a GET's CPU). The
        # level is read per connection: one set later applies from the next connection.
        if not self.access_logger.isEnabledFor(logging.INFO):
            self.access_log = False

    def _over_the_cap(self, transport: asyncio.BaseTransport) -> bool:
        """TCP_NODELAY, then the cap: True if this connection was refused."""
        assert isinstance(transport, asyncio.Transport)
        _set_nodelay(transport)
        open_now = len(self.connections)
        if open_now < self.limits.max_connections:
            return False
        if open_now < self.limits.max_connections + HEALTH_SLOTS:
            # A health slot: the health check of a load balancer or orchestrator must not
            # fail (and take the instance out) because the cap bites; anything else on it
            # gets the 503 as soon as its first bytes say so (_off_the_health_slot).
            self._health_only = True
            return False
        self._refused = True
        self.transport = transport
        transport.write(_busy_answer())
        # Closed at once, not lingering: a refused connection is outside the cap, and under
        # the flood the cap exists for, holding each one open to drain would spend the very
        # descriptors the refusal is saving.
        transport.close()
        self.reports.refused.hit()
        return True

    def _answer_and_close(self, answer: bytes) -> None:
        """Write a final answer and close so that the client gets to read it.

        Closing outright while the client is still sending (a slow head, a body it has not
        finished) makes the kernel answer its next bytes with a reset, and a reset that
        arrives before the client has read the answer destroys it: the client sees
        "connection reset", not the 408. So: the answer, then our FIN (half-close), then
        read and drop what still comes for up to :data:`LINGER` seconds, or until the
        client closes its side (the "lingering close" of Apache httpd and nginx).
        """
        self._disarm()
        transport = self.transport
        transport.write(answer)
        if not transport.can_write_eof():
            transport.close()
            return
        self._lingering = True
        transport.write_eof()
        self.loop.call_later(LINGER, transport.close)

    def _off_the_health_slot(self, data: bytes) -> bool:
        """On a health slot: does ``data`` (with what came before) stray from ``GET
        /v1/health``? Then the 503 is answered and the connection closed (True)."""
        wanted = len(_HEALTH_LINE) + 1
        self._health_line += data[: wanted - len(self._health_line)]
        line = self._health_line
        if any(line == (_HEALTH_LINE + end)[: len(line)] for end in (b" ", b"?")):
            return False
        self.reports.refused.hit()
        self._answer_and_close(_busy_answer())
        return True

    def _head_refused(
        self,
        method: bytes,
        target: bytes,
        http_version: bytes | str,
        headers: _Headers,
    ) -> bool:
        """Is this complete head refused (:func:`~._serve_head.head_refusal`)? The parser
        then reports it as invalid, and :meth:`send_400_response` gives the answer."""
        self._head_refusal = head_refusal(method, target, http_version, headers)
        return self._head_refusal is not None

    def _close_a_health_slot(self) -> None:
        # After its one answer: the slot is for the next health check.
        self._disarm()
        self.transport.close()

    def _answer_invalid(self, *, too_large: bool) -> None:
        too_large = too_large or self._head_refusal == "too_large"
        if too_large:
            self._answer_and_close(
                server_answer(
                    431,
                    "HEADERS_TOO_LARGE",
                    f"The request head is larger than {MAX_HEAD // 1024} KiB.",
                )
            )
        else:
            self._answer_and_close(
                server_answer(400, "VALIDATION_ERROR", "The request is not valid HTTP/1.1.")
            )

    def _watch(self, phase: _Phase | None) -> None:
        """Keep the deadline of ``phase`` running (started now if it was not), or none."""
        if phase is None:
            self._disarm()
        elif self._watching != phase:
            self._arm(phase)

    def _arm(self, phase: _Phase) -> None:
        self._disarm()
        self._watching = phase
        seconds = self.limits.body_timeout if phase == "body" else self.limits.header_timeout
        if self._health_only:
            seconds = min(seconds, HEALTH_SLOT_HEADER_TIMEOUT)
        self._deadline = self.loop.call_later(seconds, self._deadline_passed, phase)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = None
        self._watching = None

    @abstractmethod
    def _head_started(self) -> bool:
        """Has any byte of the next request's head come? (Each protocol knows from its
        parser.)"""

    def _deadline_passed(self, phase: _Phase) -> None:
        self._deadline = None
        self._watching = None
        if self.transport.is_closing() or self._lingering:
            return
        if phase == "body":
            self.reports.slow_body.hit()
        elif self._head_started():
            self.reports.slow_head.hit()
            self._answer_and_close(
                server_answer(
                    408,
                    "REQUEST_TIMEOUT",
                    f"The request head was not complete within {self.limits.header_timeout:g} s.",
                )
            )
            return
        self.transport.close()


class GuardedH11Protocol(_Guard, H11Protocol):
    """uvicorn's h11 protocol with a connection cap and head/body deadlines.

    Use :func:`~._serve_protocols.guarded_protocol` to get a subclass bound to one server's
    limits (uvicorn makes the protocol from its class and the config alone).
    """

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        # uvicorn's connection, with each complete head checked (serve never sets
        # h11_max_incomplete_event_size: the bound is MAX_HEAD, h11's default).
        self.conn = _CheckedConnection(self._head_refused)

    def data_received(self, data: bytes) -> None:
        if self._refused or self._lingering:
            return
        if self._health_only and self._off_the_health_slot(data):
            return
        super().data_received(data)
        self._follow_request()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._health_only:
            self._close_a_health_slot()
            return
        # Back to waiting: uvicorn's keep-alive timer covers the idle gap, and the head
        # deadline starts with the next request's first byte (data_received), or now for
        # the unfinished head of a pipelined request, which h11 kept until this answer.
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            self._arm("body")
        elif state is h11.IDLE and self._head_started():
            self._arm("head")
        else:
            self._disarm()

    def send_400_response(self, msg: str) -> None:
        # uvicorn's own is plain text without X-Request-ID; this one has the D13 shape. h11
        # refuses an unfinished head past MAX_HEAD (its 16 KiB default, "Receive buffer too
        # long"), which uvicorn reports as any other error: told apart here, as a 431.
        self._answer_invalid(too_large=len(self.conn.trailing_data[0]) > MAX_HEAD)

    def _head_started(self) -> bool:
        return bool(self.conn.trailing_data[0])

    def _follow_request(self) -> None:
        if self.transport.is_closing() or self._lingering:
            self._disarm()
            return
        state = self.conn.their_state
        if state is h11.IDLE:
            self._watch("head")
        elif state is h11.SEND_BODY:
            self._watch("body")
        else:
            self._watch(None)


class _CheckedConnection(h11.Connection):
    """h11's server side, with every complete head passed to ``refused`` first: a refused
    one is a protocol error, which uvicorn answers as any other (``send_400_response``)."""

    def __init__(self, refused: Callable[[bytes, bytes, bytes, _Headers], bool]) -> None:
        super().__init__(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        self._head_check = refused

    def next_event(self) -> Any:
        event = super().next_event()
        if isinstance(event, h11.Request) and self._head_check(
            event.method, event.target, event.http_version, event.headers
        ):
            raise h11.RemoteProtocolError("refused request head", error_status_hint=400)
        return event


def _busy_answer() -> bytes:
    return server_answer(
        503,
        "SERVER_BUSY",
        "The server has too many open connections; try again shortly.",
        retry_after=1,
    )


def server_answer(
    status: int, code: str, message: str, *, retry_after: float | None = None
) -> bytes:
    """A whole HTTP/1.1 response with the D13 body, for answers given before the app runs."""
    body = json_bytes(coded_body(code, message))
    lines = [
        f"HTTP/1.1 {status} {_REASONS[status]}",
        f"content-type: {JSON_MEDIA_TYPE}",
        f"content-length: {len(body)}",
        f"x-request-id: {new_request_id()}",
        "connection: close",
        *_ANSWER_HEADER_LINES,
    ]
    if retry_after is not None:
        lines.append(f"retry-after: {retry_after_header(retry_after)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii") + body


_ANSWER_HEADER_LINES: Final = tuple(f"{n.decode()}: {v.decode()}" for n, v in ANSWER_HEADERS)
_REASONS: Final = {
    400: "Bad Request",
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
    503: "Service Unavailable",
}


@contextmanager
def accept_errors_reported(loop: asyncio.AbstractEventLoop, every: float) -> Iterator[None]:
    """While inside, an ``accept()`` that fails for want of descriptors or memory is one
    throttled warning instead of a traceback per attempt.

    asyncio reports each such failure to the loop's exception handler, up to ``backlog``
    times per wake-up; out of descriptors, that was over a million tracebacks.
    """
    report = LogThrottle(
        "cannot accept connections: out of file descriptors or memory "
        "(lower --max-connections or raise `ulimit -n`)",
        every,
    )
    previous = loop.get_exception_handler()

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in _OUT_OF_RESOURCES:
            report.hit()
        elif isinstance(exc, ValueError) and "_start_serving" in repr(context.get("handle")):
            # asyncio retries accept() a second after running out of descriptors; a retry
            # that fires once shutdown closed the socket finds fd -1. Moot, not an error.
            return
        elif previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handle)
    try:
        yield
    finally:
        loop.set_exception_handler(previous)


def _set_nodelay(transport: asyncio.Transport) -> None:
    # asyncio sets it only when the listening socket was made with proto=IPPROTO_TCP;
    # set it here too, so no listening socket can bring back the 40 ms delayed-ACK stall.
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
