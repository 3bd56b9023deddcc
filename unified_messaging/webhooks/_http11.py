"""The webhook sender's own HTTP/1.1 client: h11 over an asyncio protocol, keep-alive per origin,
the SSRF guard at connect time.

httpx was about 60 % of the CPU of one delivered event (its request, response, URL, cookie
and header objects, httpcore's pool and its per-request locks); a delivery needs none of it:
one POST, no redirects, no cookies, no proxies, no compression, an answer read to its end or
abandoned. This client does just that, on the project's h11 core (``unified_messaging._http11``,
shared with the live adapters' transport), and the guarantees stay where they were:

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

from .._clock import Clock
from .._http11 import (
    ConnectError,
    Connection,
    HttpError,
    IdleConnections,
    Origin,
    ReadError,
    RemoteProtocolError,
    Stale,
    Target,
    Targets,
    WriteError,
    dial,
)
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
#: Parsed URLs kept (a handful of endpoints is the usual case; the table is cleared if full).
_MAX_TARGETS: Final = 1024


class TargetRefused(ConnectError):
    """The policy refused an address of the target: nothing was dialled."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A receiver's answer: its status, its fields (lower-case names, first value of each) and
    the start of its body (at most EXCERPT_BYTES)."""

    status: int
    headers: Mapping[str, str]
    excerpt: bytes


async def _exchange(
    connection: Connection,
    target: Target,
    headers: list[tuple[bytes, bytes]],
    body: bytes,
    *,
    reused: bool,
) -> tuple[Answer, bool]:
    """POST once on ``connection`` and read the answer (to DRAIN_BYTES); the answer, and
    whether the connection may serve another request."""
    head = await connection.start(
        b"POST", target.path, headers, body, reused=reused, retry_unanswered=True
    )
    fields: dict[str, str] = {}
    for name, value in head.headers:
        fields.setdefault(name.decode("latin-1"), value.decode("latin-1"))
    excerpt = bytearray()
    read = 0
    while chunk := await connection.receive():
        if len(excerpt) < EXCERPT_BYTES:
            excerpt += chunk[: EXCERPT_BYTES - len(excerpt)]
        read += len(chunk)
        if read > DRAIN_BYTES:
            connection.abort()  # abandoned mid-answer: never reused
            return Answer(head.status_code, fields, bytes(excerpt)), False
    return Answer(head.status_code, fields, bytes(excerpt)), connection.reusable()


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
        self._pool = IdleConnections(max_idle=max_idle, idle_expiry=idle_expiry)
        self._target = Targets(_MAX_TARGETS)

    def __repr__(self) -> str:
        return f"WebhookClient(policy={self._policy!r}, idle={self._pool.count})"

    @property
    def _idle(self) -> dict[Origin, list[Connection]]:
        return self._pool.stacks

    async def aclose(self) -> None:
        self._pool.close()

    async def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> Answer:
        """POST ``body`` with ``headers`` (plus ``host`` and ``content-length``) and read the
        answer. Raises :class:`HttpError` for anything but an answer; no time-out of its own
        (the caller bounds the attempt)."""
        if self._pool.closed:
            raise RuntimeError("the webhook client is closed")
        target = self._target(url)
        fields = [(b"host", target.host_header)]
        fields += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
        fields.append((b"content-length", b"%d" % len(body)))
        connection = self._pool.take(target.origin)
        reused = connection is not None
        if connection is None:
            connection = await self._connect(target)
        try:
            try:
                answer, keep = await _exchange(connection, target, fields, body, reused=reused)
            except Stale:
                connection.abort()
                connection = await self._connect(target)
                answer, keep = await _exchange(connection, target, fields, body, reused=False)
        except BaseException:
            connection.abort()  # left mid-request (an error, or the caller's time-out)
            raise
        if keep:
            self._pool.put(target.origin, connection)
        else:
            connection.abort()
        return answer

    async def _connect(self, target: Target) -> Connection:
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
        failure: HttpError | None = None
        for ip in addresses:
            try:
                return await dial(str(ip), port, ssl_context=context, server_hostname=target.host)
            except ConnectError as exc:
                failure = exc
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
