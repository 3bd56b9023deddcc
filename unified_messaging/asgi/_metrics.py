"""``GET /metrics`` (D30): the Prometheus scrape, served only when the operator asks for it.

Two ways to serve it, both over the messenger's :class:`~unified_messaging.PrometheusMetrics`:

- on the app itself (``create_app(..., metrics_token=TOKEN)``): behind a bearer token of its
  own, compared in constant time. No token, or another one: 401 ``UNAUTHORIZED``. An app made
  without a token has no such route: 404, like any path it does not serve.
- on a listener of its own (:func:`create_metrics_app`, ``serve --metrics-bind``), for an
  address only the monitoring network reaches; a token there is optional.

A scrape reads the store once (the queue gauges) and each connection's circuit breaker; the
counters and histograms are the process's own (or, in prometheus_client's multi-process
mode, every process's).
"""

from __future__ import annotations

import hmac
import logging
import re
from collections.abc import Sequence
from typing import Final

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .._errors import MessagingError, Unauthorized
from .._messenger import Messenger
from .._observability.metrics import CircuitReading, MetricsExposition, take_snapshot
from ._auth import bearer_token
from ._errors import error_response, http_exception_response, internal_error_response
from ._request_id import RequestIdMiddleware

__all__ = [
    "METRICS_PATH",
    "MessengerCircuits",
    "MetricsEndpoint",
    "check_metrics_token",
    "create_metrics_app",
    "metrics_exposition",
]

logger = logging.getLogger("unified_messaging.asgi")

METRICS_PATH: Final = "/metrics"
#: A token a scraper sends in ``Authorization: Bearer``: long enough not to be guessed, and
#: only characters a header carries as they are.
_TOKEN = re.compile(r"[A-Za-z0-9._~+/=-]{16,256}")


_REFUSED = "Missing or invalid metrics token (Authorization: Bearer <token>)."


def check_metrics_token(token: str) -> str:
    """``token`` if it may guard ``/metrics``, else :class:`ValueError` (which never quotes
    it: it is a secret)."""
    if not isinstance(token, str) or not _TOKEN.fullmatch(token):
        raise ValueError(
            "the metrics token must be 16 to 256 characters of A-Z, a-z, 0-9 and ._~+/=-"
        )
    return token


def metrics_exposition(messenger: Messenger) -> MetricsExposition:
    """The messenger's metrics, if a scrape can render them; else :class:`ValueError`."""
    metrics = messenger.metrics
    if not isinstance(metrics, MetricsExposition):
        raise ValueError(
            "serving /metrics needs a Messenger(metrics=PrometheusMetrics()) (the 'metrics' extra)"
        )
    return metrics


class MessengerCircuits:
    """The circuit breakers of every workspace's connections (D26), as a scrape reads them.

    One read per connection: fine for the tens to hundreds of connections a gateway has."""

    def __init__(self, messenger: Messenger) -> None:
        self._messenger = messenger

    async def circuit_states(self) -> Sequence[CircuitReading]:
        readings: list[CircuitReading] = []
        for workspace in await self._messenger.store.list_workspaces():
            try:
                health = await self._messenger.connections.health(workspace.id)
            except MessagingError:  # removed meanwhile, or the breaker store is away
                continue
            readings += [CircuitReading(h.provider, h.connection_id, h.state) for h in health]
        return readings


class MetricsEndpoint:
    """``GET /metrics``: the scrape, behind ``token`` when one is given."""

    def __init__(self, messenger: Messenger, *, token: str | None) -> None:
        self._messenger = messenger
        self._exposition = metrics_exposition(messenger)
        self._token = None if token is None else check_metrics_token(token).encode("ascii")
        self._circuits = MessengerCircuits(messenger)

    async def handle(self, request: Request) -> Response:
        if self._token is not None and not self._allowed(bearer_token(request.headers)):
            # The scrape's own token, not an API key: the message says which was wanted.
            return error_response(Unauthorized(_REFUSED))
        snapshot = await take_snapshot(
            self._messenger.store, self._messenger.clock.now(), self._circuits
        )
        body = self._exposition.exposition(snapshot)
        return Response(body, media_type=self._exposition.content_type)

    def _allowed(self, offered: str | None) -> bool:
        assert self._token is not None
        candidate = (offered or "").encode("utf-8", "surrogateescape")
        # Constant time whatever was offered, also when nothing was.
        return hmac.compare_digest(candidate, self._token) and offered is not None


def create_metrics_app(messenger: Messenger, *, token: str | None = None) -> Starlette:
    """An ASGI app that serves only ``GET /metrics`` over ``messenger`` (opened and closed by
    its owner: this app has no lifespan), for a listener of its own."""
    endpoint = MetricsEndpoint(messenger, token=token)

    async def unhandled(request: Request, exc: Exception) -> Response:
        return internal_error_response()

    return Starlette(
        routes=[Route(METRICS_PATH, endpoint.handle, methods=["GET"])],
        middleware=[Middleware(RequestIdMiddleware)],
        exception_handlers={HTTPException: http_exception_response, Exception: unhandled},
    )
