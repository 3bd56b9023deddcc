"""The webhook sender's own HTTP/1.1 client: h11 over an asyncio protocol, keep-alive per origin,
the SSRF guard at connect time.

httpx was about 60 % of the CPU of one delivered event (its request, response, URL, cookie
and header objects, httpcore's pool and its per-request locks); a delivery needs none of it:
one POST, no redirects, no cookies, no proxies, no compression, an answer read to its end or
abandoned. This client does just that, and the guarantees stay where they were:

- **The SSRF guard in the connection.** A host name is resolved once, every address checked
  against the policy (``_rules.checked_addresses``, shared with the httpx transport), and the
  checked IP literal is what is dialled; TLS verifies the certificate against the URL's host.
- **Keep-alive per origin.** Idle connections wait in a per-origin stack (at most
  ``max_idle`` in all, each for ``idle_expiry`` seconds). A connection is handed out again
  only if nothing arrived on it while idle (the server closed it, or sent something it should
  not have). One that dies under a request before any byte of the answer (the server closed
  it as we wrote) is replaced once by a fresh connection: the receiver never saw that request.
- **Answers read to their end, up to DRAIN_BYTES**, so the connection serves the next
  delivery; a longer one is abandoned with its connection, a failed one excerpted. Chunked,
  length-delimited and close-delimited bodies are h11's business.
- **Bounds from outside.** The caller puts the whole attempt under one ``asyncio.timeout``;
  a connection left mid-request by a cancellation is aborted, never pooled.

No cap on connections in flight: the sender's per-endpoint slots bound them (one hanging
endpoint holds only its own). Failures raise :class:`HttpError` subclasses named like
httpx's (``ConnectError``, ``ReadError``…), which is what the delivery log shows.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import h11
import httpx

from .._clock import Clock
from ._rules import (
    DRAIN_BYTES,
    EXCERPT_BYTES,
    HOW_TO_ALLOW,
    DeliveryResult,
    Resolver,
    TargetPolicy,
    TargetRefusal,
    checked_addresses,
    judge,
    short_error,
    system_resolve,
)

__all__ = [
    "Answer",
    "ConnectError",
    "HttpError",
    "ReadError",
    "RemoteProtocolError",
    "TargetRefused",
    "WebhookClient",
    "WriteError",
    "post",
]

#: Idle connections kept, over all origins, and how long one may wait for its next request.
MAX_IDLE: Final = 100
IDLE_EXPIRY: Final = 5.0
#: The longest answer head (status line and fields) read; h11's own default.
_MAX_HEAD: Final = 16 * 1024
#: Parsed URLs kept (a handful of endpoints is the usual case; the table is cleared if full).
_MAX_TARGETS: Final = 1024


class HttpError(Exception):
    """The request failed in the network or the protocol (never a status code)."""


class ConnectError(HttpError):
    """No connection: resolving, dialling or the TLS handshake failed."""


class TargetRefused(ConnectError):
    """The policy refused an address of the target: nothing was dialled."""


class WriteError(HttpError):
    """The connection failed while the request was written."""


class ReadError(HttpError):
    """The connection failed while the answer was read."""


class RemoteProtocolError(HttpError):
    """The receiver broke HTTP/1.1 (a malformed answer, or none before it closed)."""


class _Stale(Exception):
    """A kept-alive connection died before any byte of the answer: dial afresh, once."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A receiver's answer: its status, its fields (lower-case names, first value of each) and
    the start of its body (at most EXCERPT_BYTES)."""

    status: int
    headers: Mapping[str, str]
    excerpt: bytes


@dataclass(frozen=True, slots=True)
class _Target:
    """What a URL means to the client, parsed once (by httpx's parser, the one ``url_problem``
    judges with, so the check and the dialler agree on the host)."""

    origin: tuple[str, str, int]
    #: The host name or IP literal to resolve and to verify TLS against (no brackets).
    host: str
    host_header: bytes
    path: bytes


def _parse(url: str) -> _Target:
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ConnectError(f"invalid URL: {exc}") from None
    scheme = parsed.scheme
    if scheme not in ("http", "https") or not parsed.raw_host:
        raise ConnectError("the URL must be http(s) and name a host")
    host = parsed.raw_host.decode("ascii")  # IDNA-encoded; IPv6 without brackets
    port = parsed.port or (443 if scheme == "https" else 80)
    return _Target((scheme, host, port), host, parsed.netloc, parsed.raw_path)


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection. The protocol feeds what arrives straight into h11; a request
    waits on a future for more. Data arriving while the connection is idle poisons it."""

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
        self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=_MAX_HEAD)
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
            # Nothing may arrive between answers: a receiver that sends anyway is confused,
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

    async def exchange(
        self, target: _Target, headers: list[tuple[bytes, bytes]], body: bytes, *, reused: bool
    ) -> tuple[Answer, bool]:
        """Send one request and read its answer; the answer, and whether the connection may
        serve another request."""
        assert self.transport is not None
        self.busy = True
        self._received = False
        h = self._h11
        try:
            data = h.send(h11.Request(method=b"POST", target=target.path, headers=headers))
            data += h.send(h11.Data(data=body)) + h.send(h11.EndOfMessage())
        except h11.LocalProtocolError as exc:
            raise WriteError(f"cannot send this request: {exc}") from None
        if self._closed:
            raise _Stale if reused else WriteError("the connection closed")
        self.transport.write(data)
        while self._paused and not self._closed:
            self._writable = asyncio.get_running_loop().create_future()
            await self._writable
        answer = await self._read_answer(reused=reused)
        self.busy = False
        clean = h.our_state is h11.DONE and h.their_state is h11.DONE
        # Bytes after the answer (a receiver that pipelines, or lies about a length) would
        # be read as the next answer: such a connection is not reused.
        if clean and not self._closed and not h.trailing_data[0]:
            h.start_next_cycle()
            return answer, not self.unusable
        return answer, False

    async def _next_event(self, *, reused: bool) -> object:
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
                    if reused:
                        raise _Stale
                    raise RemoteProtocolError("the receiver closed without answering")
                if self._eof_fed:
                    raise ReadError("the connection was lost")
                self._eof_fed = True
                h.receive_data(b"")
                continue
            self._wake = asyncio.get_running_loop().create_future()
            await self._wake

    async def _read_answer(self, *, reused: bool) -> Answer:
        event = await self._next_event(reused=reused)
        while isinstance(event, h11.InformationalResponse):  # 100 Continue and the like
            event = await self._next_event(reused=reused)
        if isinstance(event, h11.ConnectionClosed):
            raise RemoteProtocolError("the receiver closed without answering")
        assert isinstance(event, h11.Response)
        status = event.status_code
        fields: dict[str, str] = {}
        for name, value in event.headers:
            fields.setdefault(name.decode("latin-1"), value.decode("latin-1"))
        excerpt = bytearray()
        read = 0
        while True:
            event = await self._next_event(reused=False)
            if isinstance(event, h11.Data):
                if len(excerpt) < EXCERPT_BYTES:
                    excerpt += event.data[: EXCERPT_BYTES - len(excerpt)]
                read += len(event.data)
                if read > DRAIN_BYTES:
                    self.unusable = True  # abandoned mid-answer: never reused
                    break
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                break
        return Answer(status, fields, bytes(excerpt))


class WebhookClient:
    """POSTs to webhook receivers over kept-alive HTTP/1.1 connections, guarded (see the
    module docstring). ``resolver`` and ``ssl_context`` are seams for tests."""

    def __init__(
        self,
        policy: TargetPolicy | None = None,
        *,
        resolver: Resolver | None = None,
        ssl_context: ssl.SSLContext | None = None,
        max_idle: int = MAX_IDLE,
        idle_expiry: float = IDLE_EXPIRY,
    ) -> None:
        self._policy = policy or TargetPolicy()
        self._resolve = resolver or system_resolve
        self._ssl = ssl_context
        self._max_idle = max_idle
        self._idle_expiry = idle_expiry
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._idle_count = 0
        self._targets: dict[str, _Target] = {}
        self._closed = False

    def __repr__(self) -> str:
        return f"WebhookClient(policy={self._policy!r}, idle={self._idle_count})"

    async def aclose(self) -> None:
        self._closed = True
        for stack in self._idle.values():
            for connection in stack:
                connection.abort()
        self._idle.clear()
        self._idle_count = 0

    async def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> Answer:
        """POST ``body`` with ``headers`` (plus ``host`` and ``content-length``) and read the
        answer. Raises :class:`HttpError` for anything but an answer; no time-out of its own
        (the caller bounds the attempt)."""
        if self._closed:
            raise RuntimeError("the webhook client is closed")
        target = self._target(url)
        fields = [(b"host", target.host_header)]
        fields += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
        fields.append((b"content-length", b"%d" % len(body)))
        connection = self._take_idle(target.origin)
        reused = connection is not None
        if connection is None:
            connection = await self._connect(target)
        try:
            try:
                answer, keep = await connection.exchange(target, fields, body, reused=reused)
            except _Stale:
                connection.abort()
                connection = await self._connect(target)
                answer, keep = await connection.exchange(target, fields, body, reused=False)
        except BaseException:
            connection.abort()  # left mid-request (an error, or the caller's time-out)
            raise
        if keep:
            self._put_idle(target.origin, connection)
        else:
            connection.abort()
        return answer

    def _target(self, url: str) -> _Target:
        target = self._targets.get(url)
        if target is None:
            if len(self._targets) >= _MAX_TARGETS:
                self._targets.clear()
            target = self._targets[url] = _parse(url)
        return target

    # -------------------------------------------------------------- the pool

    def _take_idle(self, origin: tuple[str, str, int]) -> _Connection | None:
        stack = self._idle.get(origin)
        if not stack:
            return None
        now = asyncio.get_running_loop().time()
        while stack:
            connection = stack.pop()  # the most recently used: the likeliest to be alive
            self._idle_count -= 1
            if connection.usable() and now - connection.idle_since < self._idle_expiry:
                return connection
            connection.abort()
        return None

    def _put_idle(self, origin: tuple[str, str, int], connection: _Connection) -> None:
        now = asyncio.get_running_loop().time()
        if self._idle_count >= self._max_idle:
            self._sweep(now)  # the dead and the expired of origins no longer visited
        if self._closed or self._idle_count >= self._max_idle:
            connection.abort()
            return
        connection.idle_since = now
        self._idle.setdefault(origin, []).append(connection)
        self._idle_count += 1

    def _sweep(self, now: float) -> None:
        for origin, stack in list(self._idle.items()):
            alive = [c for c in stack if c.usable() and now - c.idle_since < self._idle_expiry]
            for connection in stack:
                if connection not in alive:
                    connection.abort()
            self._idle_count -= len(stack) - len(alive)
            if alive:
                self._idle[origin] = alive
            else:
                del self._idle[origin]

    async def _connect(self, target: _Target) -> _Connection:
        scheme, host, port = target.origin
        try:
            addresses = await checked_addresses(
                host, port, self._policy, self._resolve, within=None
            )
        except TargetRefusal as exc:
            raise TargetRefused(str(exc)) from None
        except OSError as exc:
            raise ConnectError(str(exc)) from None
        context = self._tls_context() if scheme == "https" else None
        loop = asyncio.get_running_loop()
        failure: HttpError | None = None
        for ip in addresses:
            try:
                _, connection = await loop.create_connection(
                    _Connection,
                    str(ip),
                    port,
                    ssl=context,
                    server_hostname=target.host if context is not None else None,
                )
            except (OSError, ssl.SSLError) as exc:
                failure = ConnectError(str(exc) or type(exc).__name__)
                continue
            return connection
        assert failure is not None
        raise failure

    def _tls_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            # httpx's default trust store (certifi), so HTTPS receivers are trusted as before.
            import certifi

            self._ssl = ssl.create_default_context(cafile=certifi.where())
        return self._ssl


async def post(
    client: WebhookClient,
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    timeout: float,  # noqa: ASYNC109 - the whole attempt's bound, as the sender states it
    clock: Clock,
) -> DeliveryResult:
    """POST ``body`` once through ``client`` and judge the answer; never raises for what the
    network or the receiver did (the table in ``_sender``'s docstring)."""
    try:
        async with asyncio.timeout(timeout):
            answer = await client.post(url, body, headers)
    except TargetRefused as exc:
        return DeliveryResult("refused", error=short_error(f"refused: {exc}{HOW_TO_ALLOW}"))
    except TimeoutError:
        return DeliveryResult("retry", error=f"timed out after {timeout:g} s")
    except HttpError as exc:
        return DeliveryResult("retry", error=short_error(f"{type(exc).__name__}: {exc}"))
    # A compressed answer is read (for keep-alive) but not excerpted: it would be unreadable.
    identity = answer.headers.get("content-encoding", "identity").lower() == "identity"
    excerpt = answer.excerpt.decode("utf-8", "replace") if identity else ""
    return judge(answer.status, answer.headers, excerpt, now=clock.now())
