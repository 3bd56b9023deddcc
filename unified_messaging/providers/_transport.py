"""The live adapters' network: one keep-alive pool per connection, on the project's h11 core.

:class:`ProviderPool` is the pool (``unified_messaging._http11``: h11 over an asyncio protocol,
idle connections per origin, no per-request housekeeping over the other connections). Two
ways in, one pool:

- :class:`ProviderTransport`, an ``httpx.AsyncBaseTransport``: httpx stays the seam, and an
  adapter's own ``httpx.AsyncClient`` runs on it;
- :func:`open_call`, the adapter's own path (``HttpAdapter.exchange`` when the client is the
  adapter's own): the request written straight from the adapter's arguments, without
  httpx's request and response objects, which were most of what was left of a call's CPU
  (docs/decisions.md, "Provider calls").

Both keep httpx's meaning: time-outs per phase from ``httpx.Timeout`` (connect, read, write,
pool: no free slot among ``max_connections`` in time), failures raised as the httpx
exceptions the adapters classify (``ConnectError``/``ConnectTimeout``/``PoolTimeout``: the
request never left; ``ReadTimeout``/``ReadError``/``RemoteProtocolError``: it may have been
taken), each carrying its request and the system's error as its cause. A kept connection
found closed before the request left is replaced at once; one that closes after it left is
a ``RemoteProtocolError`` (never re-sent). TLS verifies certificates (certifi, or the given
context). Answers are streamed; a connection is kept only after an answer read to its end.
"""

from __future__ import annotations

import asyncio
import json as jsonlib
import ssl
from collections import deque
from collections.abc import AsyncIterator, Mapping
from typing import Final, NamedTuple
from urllib.parse import urlencode

import h11
import httpx

from .._http11 import (
    ConnectError,
    Connection,
    ConnectTimeout,
    HttpError,
    IdleConnections,
    Origin,
    PoolTimeout,
    ReadError,
    ReadTimeout,
    RemoteProtocolError,
    Stale,
    Target,
    Targets,
    WriteError,
    WriteTimeout,
    dial,
)

__all__ = [
    "POOL_LIMITS",
    "Call",
    "ProviderPool",
    "ProviderTransport",
    "Timeouts",
    "as_httpx",
    "open_call",
    "read_call",
]

#: One connection's pool: up to 50 calls in flight, 20 kept alive between calls.
POOL_LIMITS: Final = httpx.Limits(max_connections=50, max_keepalive_connections=20)
#: Parsed URLs kept per pool (an adapter calls a handful; the table is cleared if full).
_MAX_TARGETS: Final = 256

#: The httpx exception for each of the core's, most specific first.
_AS_HTTPX: Final[tuple[tuple[type[HttpError], type[httpx.TransportError]], ...]] = (
    (ConnectTimeout, httpx.ConnectTimeout),
    (ConnectError, httpx.ConnectError),
    (PoolTimeout, httpx.PoolTimeout),
    (WriteTimeout, httpx.WriteTimeout),
    (WriteError, httpx.WriteError),
    (ReadTimeout, httpx.ReadTimeout),
    (ReadError, httpx.ReadError),
    (RemoteProtocolError, httpx.RemoteProtocolError),
)


def as_httpx(exc: HttpError, request: httpx.Request) -> httpx.TransportError:
    """``exc`` as the httpx exception of the same meaning, about ``request``."""
    for ours, theirs in _AS_HTTPX:
        if isinstance(exc, ours):
            error = theirs(str(exc), request=request)
            break
    else:
        error = httpx.TransportError(str(exc), request=request)
    error.__cause__ = exc
    return error


class Timeouts(NamedTuple):
    """httpx's four time-outs, in seconds (``None``: wait as long as it takes)."""

    connect: float | None
    read: float | None
    write: float | None
    pool: float | None

    @classmethod
    def of(cls, timeout: httpx.Timeout) -> Timeouts:
        return cls(timeout.connect, timeout.read, timeout.write, timeout.pool)

    @classmethod
    def of_request(cls, request: httpx.Request) -> Timeouts:
        given = request.extensions.get("timeout") or {}
        return cls(given.get("connect"), given.get("read"), given.get("write"), given.get("pool"))


class Call:
    """One request on its way: the answer's head has come; :meth:`receive` its body, then
    :meth:`close` (which keeps the connection only if the answer was read to its end)."""

    __slots__ = ("_connection", "_done", "_origin", "_pool", "_read", "headers", "reason", "status")

    def __init__(
        self,
        pool: ProviderPool,
        origin: Origin,
        connection: Connection,
        head: h11.Response,
        read_timeout: float | None,
    ) -> None:
        self._pool = pool
        self._origin = origin
        self._connection: Connection | None = connection
        self._read = read_timeout
        self._done = False
        self.status = head.status_code
        self.headers: list[tuple[bytes, bytes]] = head.headers.raw_items()
        self.reason = bytes(head.reason)

    async def receive(self) -> bytes:
        """The next piece of the body; ``b""`` at its end. Raises the core's errors."""
        if self._connection is None or self._done:
            return b""
        chunk = await self._connection.receive(read_timeout=self._read)
        if not chunk:
            self._done = True
        return chunk

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if self._done and connection.reusable():
            self._pool.idle.put(self._origin, connection)
        else:
            connection.abort()  # abandoned mid-answer, or not fit for another request
        self._pool.release()


class ProviderPool:
    """One connection's HTTP/1.1 pool: at most ``max_connections`` calls in flight (a call
    beyond waits for a slot, up to the pool time-out), ``max_keepalive_connections`` kept
    idle per the module docstring. ``ssl_context``: the trust for https (certifi's default)."""

    def __init__(
        self, limits: httpx.Limits = POOL_LIMITS, *, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        self.idle = IdleConnections(
            max_idle=limits.max_keepalive_connections or 0,
            idle_expiry=limits.keepalive_expiry if limits.keepalive_expiry is not None else 5.0,
        )
        self._max = limits.max_connections
        self._in_flight = 0
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._ssl = ssl_context
        self.target = Targets(_MAX_TARGETS)

    async def open(
        self,
        method: bytes,
        target: Target,
        path: bytes,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        timeouts: Timeouts,
    ) -> Call:
        """Send one request and wait for its answer's head. Raises the core's errors."""
        if self.idle.closed:
            raise ConnectError("the adapter's client is closed")
        await self._take_slot(timeouts.pool)
        try:
            connection = self.idle.take(target.origin)
            reused = connection is not None
            if connection is None:
                connection = await self._dial(target, timeouts.connect)
            try:
                try:
                    head = await connection.start(
                        method, path, headers, body, reused=reused,
                        write_timeout=timeouts.write, read_timeout=timeouts.read,
                    )  # fmt: skip
                except Stale:  # closed before the request left: nobody saw it
                    connection.abort()
                    connection = await self._dial(target, timeouts.connect)
                    head = await connection.start(
                        method, path, headers, body, reused=False,
                        write_timeout=timeouts.write, read_timeout=timeouts.read,
                    )  # fmt: skip
            except BaseException:
                connection.abort()  # left mid-request (an error, or a cancellation)
                raise
        except BaseException:
            self.release()
            raise
        return Call(self, target.origin, connection, head, timeouts.read)

    def close(self) -> None:
        self.idle.close()

    def release(self) -> None:
        """Give a call's slot back, to the longest waiter if any."""
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot passes over as it is
                return
        self._in_flight -= 1

    async def _take_slot(self, timeout: float | None) -> None:  # noqa: ASYNC109
        if self._max is None or self._in_flight < self._max:
            self._in_flight += 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            async with asyncio.timeout(timeout):
                await waiter
        except BaseException as exc:
            if waiter.done() and not waiter.cancelled():
                self.release()  # handed a slot as we left: pass it on
            else:
                waiter.cancel()
            if isinstance(exc, TimeoutError):
                raise PoolTimeout(f"no free connection within {timeout:g} s") from None
            raise

    async def _dial(self, target: Target, timeout: float | None) -> Connection:  # noqa: ASYNC109
        scheme, host, port = target.origin
        context = self._tls_context() if scheme == "https" else None
        return await dial(
            host, port, ssl_context=context, server_hostname=target.host, timeout=timeout
        )

    def _tls_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = httpx.create_ssl_context()  # certifi, certificates verified
        return self._ssl


class _Body(httpx.AsyncByteStream):
    def __init__(self, call: Call, request: httpx.Request) -> None:
        self._call = call
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            while chunk := await self._call.receive():
                yield chunk
        except HttpError as exc:
            raise as_httpx(exc, self._request) from exc

    async def aclose(self) -> None:
        self._call.close()


class ProviderTransport(httpx.AsyncBaseTransport):
    """An ``httpx.AsyncBaseTransport`` on :class:`ProviderPool` (HTTP/1.1 only; no proxies)."""

    def __init__(
        self, limits: httpx.Limits = POOL_LIMITS, *, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        self.pool = ProviderPool(limits, ssl_context=ssl_context)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme not in ("http", "https") or not url.raw_host:
            raise httpx.UnsupportedProtocol(f"cannot send to {url.scheme}://", request=request)
        host = url.raw_host.decode("ascii")
        origin = (url.scheme, host, url.port or (443 if url.scheme == "https" else 80))
        target = Target(origin, host, url.netloc, url.raw_path)
        body = await request.aread()
        try:
            call = await self.pool.open(
                request.method.encode("ascii"), target, target.path,
                list(request.headers.raw), body, Timeouts.of_request(request),
            )  # fmt: skip
        except HttpError as exc:
            raise as_httpx(exc, request) from exc
        return httpx.Response(
            call.status,
            headers=call.headers,
            stream=_Body(call, request),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": call.reason},
        )

    async def aclose(self) -> None:
        self.pool.close()


async def open_call(
    pool: ProviderPool,
    method: str,
    url: str,
    *,
    user_agent: bytes,
    timeouts: Timeouts,
    params: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    json: object = None,
    content: bytes | None = None,
) -> Call:
    """One call on ``pool`` written straight from ``HttpAdapter.exchange``'s arguments, as the
    adapter's own ``httpx.AsyncClient`` would send it (query, JSON and header encoding alike).
    Raises the httpx exception of a failure, about an ``httpx.Request`` built only then."""
    target = pool.target(url)
    path = target.path
    if params:
        path += (b"&" if b"?" in path else b"?") + urlencode(params).encode("ascii")
    fields: dict[bytes, tuple[bytes, bytes]] = {
        b"host": (b"Host", target.host_header),
        b"accept": (b"Accept", b"*/*"),
        b"accept-encoding": (b"Accept-Encoding", b"identity"),
        b"user-agent": (b"User-Agent", user_agent),
    }
    body = b""
    if json is not None:
        body = jsonlib.dumps(
            json, ensure_ascii=False, separators=(",", ":"), allow_nan=False
        ).encode("utf-8")
        fields[b"content-type"] = (b"Content-Type", b"application/json")
    elif content is not None:
        body = content
    if json is not None or content is not None:
        fields[b"content-length"] = (b"Content-Length", b"%d" % len(body))
    for name, value in (headers or {}).items():
        raw = name.encode("latin-1")
        fields[raw.lower()] = (raw, value.encode("latin-1"))
    method_bytes = method.encode("ascii")
    try:
        return await pool.open(method_bytes, target, path, list(fields.values()), body, timeouts)
    except HttpError as exc:
        raise as_httpx(exc, _request_of(method, url, params, timeouts)) from exc


async def read_call(
    call: Call, method: str, url: str, params: Mapping[str, str] | None, timeouts: Timeouts
) -> AsyncIterator[bytes]:
    """``call``'s body piece by piece, a failure raised as its httpx exception."""
    try:
        while chunk := await call.receive():
            yield chunk
    except HttpError as exc:
        raise as_httpx(exc, _request_of(method, url, params, timeouts)) from exc


def _request_of(
    method: str, url: str, params: Mapping[str, str] | None, timeouts: Timeouts
) -> httpx.Request:
    """The request an error is about, as httpx would have built it (for its host, port and
    time-outs: ``_http.transport_cause``)."""
    return httpx.Request(method, url, params=params, extensions={"timeout": timeouts._asdict()})
