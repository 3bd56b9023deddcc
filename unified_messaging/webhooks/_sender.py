"""Outbound webhook HTTP (D19): one POST per attempt, its outcome, and the SSRF guard.

:class:`WebhookSender` posts a signed body and classifies the answer. It never raises for
anything the receiver or the network did; the worker stores the :class:`DeliveryResult` and
asks ``_webhook_schedule`` when to try again.

    2xx within the time-out         success
    3xx                             retry (redirects are never followed: update the URL)
    410 Gone                        disable the endpoint
    429, 502, 503, 504              retry, honouring Retry-After (see ``_webhook_schedule``)
    any other status                retry
    time-out, connection failure    retry
    target refused by this process's
    policy (private address), at
    connect time or in the URL      refused: retried on the schedule, but the endpoint's
                                    health is untouched (see below)
    URL refused before any I/O      disable (it cannot succeed until the URL is edited)

A refusal that depends on this process's policy (``UM_WEBHOOK_ALLOW_PRIVATE``, the allowed
networks) says nothing about the endpoint: another process, started with private targets
allowed, created it and may deliver to it. So it never disables the endpoint; this process
just does not send.

The SSRF guard. Endpoint URLs come from customers, and the worker runs inside the operator's
network, so a URL naming ``169.254.169.254`` or ``10.0.0.5`` (or a name that resolves there)
would let a customer make requests into it. Checking the URL when it is added is not enough:
DNS answers change, so a name can resolve to a public address at the check and to a private
one a second later when the request is made (DNS rebinding). The check therefore lives in the
connection itself: the client's connect (``_http11.WebhookClient``, or
:class:`GuardedNetworkBackend` in place of httpcore's network backend) resolves the host once,
refuses the connection if any resolved address is not a global unicast address, and then
dials that same checked IP literal, so nothing is resolved twice. TLS still verifies the
certificate against the URL's host name (passed as ``server_hostname``). Redirects are not
followed, so a receiver cannot bounce us elsewhere either; no proxy is used (environment
proxies and ``.netrc`` are ignored), since a proxy would do the dialling.

The POST itself lives in ``webhooks._http11``, the sender's own small HTTP/1.1 client (h11
on an asyncio protocol, keep-alive per origin, the guard in its connect), which a sender
imports on its first delivery: a process that builds a Messenger and never delivers (a
one-shot admin command) does not pay for it. ``webhooks._transport`` holds the same guard for
an injected httpx client (:class:`GuardedTransport`); its names are importable from here too.
Both share the guard's address check and the judging of an answer (``_rules``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Protocol, Self

from .._clock import Clock, SystemClock
from .._observability.tracing import webhook_span
from ._rules import (
    DEFAULT_TIMEOUT,
    DRAIN_BYTES,
    EXCERPT_BYTES,
    HOW_TO_ALLOW,
    MAX_URL_LENGTH,
    PERMISSIVE,
    USER_AGENT,
    DeliveryOutcome,
    DeliveryResult,
    IPAddress,
    IPNetwork,
    Resolver,
    TargetPolicy,
    address_problem,
    short_error,
    url_problem,
    validate_endpoint_url,
)
from ._signing import signature_headers

if TYPE_CHECKING:
    import httpx

    from ._http11 import WebhookClient
    from ._transport import (
        GuardedNetworkBackend,
        GuardedTransport,
        TargetRefused,
        guarded_client,
    )

__all__ = [
    "DEFAULT_TIMEOUT",
    "DRAIN_BYTES",
    "EXCERPT_BYTES",
    "MAX_URL_LENGTH",
    "USER_AGENT",
    "DeliveryOutcome",
    "DeliveryResult",
    "EndpointSlots",
    "GuardedNetworkBackend",
    "GuardedTransport",
    "IPAddress",
    "IPNetwork",
    "Resolver",
    "TargetPolicy",
    "TargetRefused",
    "WebhookSender",
    "address_problem",
    "guarded_client",
    "url_problem",
    "validate_endpoint_url",
]

#: Names that live in ``webhooks._transport`` (httpx), importable from here as they always were.
_TRANSPORT_NAMES: Final = frozenset(
    {"GuardedNetworkBackend", "GuardedTransport", "TargetRefused", "guarded_client"}
)


def __getattr__(name: str) -> Any:
    # PEP 562: only a caller that asks for the transport pays for importing httpx.
    if name in _TRANSPORT_NAMES:
        from . import _transport

        return getattr(_transport, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Requests in flight to one endpoint (its URL) from one sender at most.
DEFAULT_PER_ENDPOINT: Final = 8
#: URL verdicts kept (the table is cleared when full).
_MAX_VERDICTS: Final = 1024


class Attempt(Protocol):
    """One attempt through the sender's client: ``webhooks._http11.post`` (the default
    client) or ``webhooks._transport.post`` (an injected httpx client), bound to it."""

    async def __call__(
        self,
        url: str,
        body: bytes,
        headers: Mapping[str, str],
        *,
        timeout: float,  # noqa: ASYNC109 - the attempt's bound, passed on
        clock: Clock,
    ) -> DeliveryResult: ...


class EndpointSlots:
    """At most ``per_endpoint`` requests in flight to each endpoint, one bound per endpoint
    URL.

    The bound was per origin (scheme, host and port): the hanging deliveries of one endpoint
    took every slot of its host and port, and a healthy endpoint on the same host waited up
    to two time-outs behind them. Keyed by the endpoint's URL, one endpoint's slots are its
    own. A bound is dropped when nothing holds or waits for it, so the table stays as small
    as the deliveries in flight.
    """

    __slots__ = ("_bounds", "_per_endpoint")

    def __init__(self, per_endpoint: int) -> None:
        if per_endpoint < 1:
            raise ValueError("per_endpoint must be at least 1")
        self._per_endpoint = per_endpoint
        self._bounds: dict[str, tuple[asyncio.Semaphore, list[int]]] = {}

    def __len__(self) -> int:
        return len(self._bounds)

    @contextlib.asynccontextmanager
    async def slot(self, url: str) -> AsyncIterator[None]:
        """Hold one of ``url``'s slots while inside."""
        entry = self._bounds.get(url)
        if entry is None:
            entry = self._bounds[url] = (asyncio.Semaphore(self._per_endpoint), [0])
        bound, users = entry
        users[0] += 1
        try:
            async with bound:
                yield
        finally:
            users[0] -= 1
            if users[0] == 0:
                del self._bounds[url]


class WebhookSender:
    """POSTs webhook bodies and classifies the answers (see the module docstring).

    Without a ``client`` it makes its own guarded HTTP/1.1 client
    (:class:`~._http11.WebhookClient`, with this sender's policy) and closes it in
    :meth:`aclose`. An injected client is used as it is: a ``WebhookClient``, or an
    ``httpx.AsyncClient`` given a :class:`GuardedTransport` (or, in tests, an
    ``httpx.MockTransport``), since the host-name check lives there. The URL checks of
    :func:`url_problem` run here on every delivery whatever the client.
    """

    def __init__(
        self,
        client: httpx.AsyncClient | WebhookClient | None = None,
        *,
        policy: TargetPolicy | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        clock: Clock | None = None,
        per_endpoint: int = DEFAULT_PER_ENDPOINT,
    ) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        # One bound per endpoint, so a slow receiver holds at most per_endpoint connections
        # and never delays another endpoint, on its host or elsewhere.
        self._slots = EndpointSlots(per_endpoint)
        self._policy = policy or TargetPolicy()
        self._timeout = timeout
        self._clock = clock or SystemClock()
        self._owns_client = client is None
        #: Made (a WebhookClient) with the transport on the first delivery; see _attempt.
        self._client: httpx.AsyncClient | WebhookClient | None = client
        self._post: Attempt | None = None
        self._closed = False
        #: url_problem's verdict per URL: the policy is fixed, so a URL is judged once.
        self._verdicts: dict[str, str | None] = {}

    def __repr__(self) -> str:
        return f"WebhookSender(policy={self._policy!r}, timeout={self._timeout})"

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        self._closed = True
        if self._owns_client and self._client is not None:
            await self._client.aclose()

    async def deliver_signed(
        self, url: str, body: bytes, *, secrets: Sequence[str], msg_id: str
    ) -> DeliveryResult:
        """Sign ``body`` for this attempt and deliver it.

        The ``webhook-id`` (``msg_id``) stays the same on every retry of an event, while the
        timestamp is the attempt's own, so a retry hours later is not refused as a replay.
        """
        timestamp = int(self._clock.now().timestamp())
        return await self.deliver(url, body, signature_headers(secrets, msg_id, timestamp, body))

    async def deliver(self, url: str, body: bytes, headers: Mapping[str, str]) -> DeliveryResult:
        """Make one attempt; never raises for what the network or the receiver did."""
        with webhook_span(url) as traced:
            result = await self._deliver(url, body, headers)
            traced.result(result.outcome, result.status_code)
            return result

    async def _deliver(self, url: str, body: bytes, headers: Mapping[str, str]) -> DeliveryResult:
        try:
            problem = self._verdicts[url]
        except KeyError:
            problem = self._judge_url(url)
        if problem is not None:
            if url_problem(url, PERMISSIVE) is None:
                return DeliveryResult(
                    "refused", error=short_error(f"refused: URL {problem}{HOW_TO_ALLOW}")
                )
            return DeliveryResult("disable", error=f"refused: URL {problem}")
        request_headers = {
            "content-type": "application/json",
            "user-agent": USER_AGENT,
            # Failed answers are excerpted raw; a compressed one would be unreadable.
            "accept-encoding": "identity",
            **headers,
        }
        attempt = self._post or self._attempt()
        async with self._slots.slot(url):
            return await attempt(
                url, body, request_headers, timeout=self._timeout, clock=self._clock
            )

    def _judge_url(self, url: str) -> str | None:
        if len(self._verdicts) >= _MAX_VERDICTS:
            self._verdicts.clear()
        problem = self._verdicts[url] = url_problem(url, self._policy)
        return problem

    def _attempt(self) -> Attempt:
        """The client's attempt, loaded (with its transport) once, on the first delivery;
        every later delivery reuses it."""
        if self._closed:
            raise RuntimeError("Cannot deliver: the webhook sender has been closed.")
        from . import _http11

        client = self._client
        if client is None:
            client = self._client = _http11.WebhookClient(self._policy)
        if isinstance(client, _http11.WebhookClient):
            self._post = functools.partial(_http11.post, client)
        else:
            from ._transport import post

            self._post = functools.partial(post, client)
        return self._post
