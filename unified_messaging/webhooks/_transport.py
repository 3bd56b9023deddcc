"""The HTTP side of webhook delivery: the SSRF guard in the connection, and one POST.

Everything here needs httpx and httpcore (about a tenth of a second to import), so it is
imported when a :class:`~unified_messaging.webhooks._sender.WebhookSender` makes its first
delivery, not by every process that builds a Messenger (a one-shot admin command never
delivers). The policy, the URL checks and the outcomes live in ``_rules`` (shared with
``_sender``, whose module docstring describes the guard); this module never imports
``_sender``, so the two are no import circle.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterable, Mapping

import httpcore
import httpx

from .._clock import Clock
from ._asyncio_net import AsyncioBackend
from ._rules import (
    DEFAULT_TIMEOUT,
    DRAIN_BYTES,
    EXCERPT_BYTES,
    HOW_TO_ALLOW,
    USER_AGENT,
    DeliveryResult,
    IPAddress,
    Resolver,
    TargetPolicy,
    TargetRefusal,
    checked_addresses,
    judge,
    short_error,
    system_resolve,
)

__all__ = [
    "GuardedNetworkBackend",
    "GuardedTransport",
    "TargetRefused",
    "guarded_client",
    "post",
]


# --------------------------------------------------------------------------- connect-time guard


class TargetRefused(httpx.ConnectError):
    """The policy refused every address of the target: nothing was dialled."""


class GuardedNetworkBackend(httpcore.AsyncNetworkBackend):
    """An httpcore network backend that only dials addresses the policy allows.

    It resolves the host itself, refuses the connection if *any* resolved address is refused
    (a name answering both a public and a private address is misconfigured or an attack on
    whichever one gets tried first), and dials the checked IP literals, in the resolver's
    order, through the wrapped backend, which therefore never resolves a name again.
    """

    def __init__(
        self,
        policy: TargetPolicy,
        *,
        resolver: Resolver | None = None,
        inner: httpcore.AsyncNetworkBackend | None = None,
    ) -> None:
        self._policy = policy
        self._resolve = resolver or system_resolve
        self._inner = inner or AsyncioBackend()

    async def _checked_addresses(
        self, host: str, port: int, within: float | None
    ) -> list[IPAddress]:
        try:
            return await checked_addresses(host, port, self._policy, self._resolve, within=within)
        except TargetRefusal as exc:
            raise TargetRefused(str(exc)) from None
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(str(exc)) from None
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from None

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        addresses = await self._checked_addresses(host, port, timeout)
        failure: Exception | None = None
        for ip in addresses:
            remaining = None if deadline is None else max(0.0, deadline - loop.time())
            try:
                return await self._inner.connect_tcp(
                    str(ip),
                    port,
                    timeout=remaining,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise TargetRefused("unix sockets are not webhook targets")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class GuardedTransport(httpx.AsyncHTTPTransport):
    """``httpx.AsyncHTTPTransport`` whose every connection goes through the SSRF guard."""

    def __init__(
        self,
        policy: TargetPolicy | None = None,
        *,
        resolver: Resolver | None = None,
        network_backend: httpcore.AsyncNetworkBackend | None = None,
        verify: ssl.SSLContext | bool = True,
        limits: httpx.Limits | None = None,
    ) -> None:
        context = verify if isinstance(verify, ssl.SSLContext) else None
        context = context or httpx.create_ssl_context(verify=verify, trust_env=False)
        # No cap on connections in flight: the bounds are the sender's, per endpoint
        # (EndpointSlots), and the worker's concurrency. A pool-wide cap would be shared by
        # every endpoint, so hanging ones could hold it all and delay the healthy.
        # Idle connections may stay open, up to 100: reconnecting per delivery
        # costs more than the delivery.
        limits = limits or httpx.Limits(max_connections=None, max_keepalive_connections=100)
        super().__init__(verify=context, trust_env=False, limits=limits)
        # httpx builds its pool without a network-backend seam; this pool is the same one,
        # plus the guard. tests/test_webhook_sender.py fails loudly if that ever changes.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=GuardedNetworkBackend(
                policy or TargetPolicy(), resolver=resolver, inner=network_backend
            ),
        )


def guarded_client(
    policy: TargetPolicy | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    resolver: Resolver | None = None,
    network_backend: httpcore.AsyncNetworkBackend | None = None,
) -> httpx.AsyncClient:
    """The client a :class:`WebhookSender` makes for itself: guarded, no redirects, no env."""
    return httpx.AsyncClient(
        transport=GuardedTransport(policy, resolver=resolver, network_backend=network_backend),
        timeout=httpx.Timeout(timeout),
        follow_redirects=False,
        trust_env=False,
        headers={"user-agent": USER_AGENT},
    )


# --------------------------------------------------------------------------- one attempt


async def post(
    client: httpx.AsyncClient,
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    timeout: float,  # noqa: ASYNC109 - the whole attempt's bound, as the sender states it
    clock: Clock,
) -> DeliveryResult:
    """POST ``body`` once and classify the answer; never raises for what the network or the
    receiver did (the table in ``_webhook_sender``'s docstring)."""
    try:
        async with (
            asyncio.timeout(timeout),
            client.stream(
                "POST", url, content=body, headers=headers, follow_redirects=False
            ) as response,
        ):
            return await _judge(response, clock)
    except TargetRefused as exc:
        return DeliveryResult("refused", error=short_error(f"refused: {exc}{HOW_TO_ALLOW}"))
    except (TimeoutError, httpx.TimeoutException):
        return DeliveryResult("retry", error=f"timed out after {timeout:g} s")
    except httpx.HTTPError as exc:
        return DeliveryResult("retry", error=short_error(f"{type(exc).__name__}: {exc}"))


async def _judge(response: httpx.Response, clock: Clock) -> DeliveryResult:
    excerpt = await _read_answer(response)
    return judge(response.status_code, response.headers, excerpt, now=clock.now())


async def _read_answer(response: httpx.Response) -> str:
    """Read the answer's body to its end (at most DRAIN_BYTES, so a huge or endless answer is
    never read in full) and return its first EXCERPT_BYTES as text.

    Reading to the end is what lets the connection serve the next delivery (keep-alive). A
    compressed body is still read, for that, but not excerpted: it would be unreadable."""
    if response.is_stream_consumed:  # read already: an httpx.MockTransport's answer
        return _excerpt(response, bytearray(response.content[:EXCERPT_BYTES]))
    collected = bytearray()
    chunks = response.aiter_raw()
    try:
        async for chunk in chunks:
            if len(collected) < EXCERPT_BYTES:
                collected += chunk[: EXCERPT_BYTES - len(collected)]
            if response.num_bytes_downloaded > DRAIN_BYTES:
                break
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()
    return _excerpt(response, collected)


def _excerpt(response: httpx.Response, collected: bytearray) -> str:
    """The first bytes of the answer as text; none of a compressed one (unreadable)."""
    if response.headers.get("content-encoding", "identity").lower() != "identity":
        return ""
    return bytes(collected).decode("utf-8", "replace")
