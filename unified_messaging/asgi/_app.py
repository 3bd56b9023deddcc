"""``create_app``: the Starlette application of the REST and MCP edges, and its lifespan.

The app owns routing, the order of its middleware and the lifespan; everything a REST request
does is in ``_routes``, everything an MCP request does in ``_mcp``. Unknown paths and wrong
methods get the contract's error body too.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import weakref
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Final

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp

from .._access.idempotency import IDEMPOTENCY_TTL, IdempotencyKeys
from .._messenger import Messenger
from ._client_ip import ClientAddress
from ._dlr import DlrEndpoint
from ._errors import JSON_MEDIA_TYPE, http_exception_response, internal_error_response, json_bytes
from ._hot_routes import HotRoutes
from ._openapi import openapi_document
from ._request_id import RequestIdMiddleware
from ._routes import RestApi
from ._runtime import LazyStartMiddleware, Lifespan, Runtime, messenger_lifespan
from ._tracing import TracingMiddleware

if TYPE_CHECKING:
    from ._mcp import McpEndpoint

__all__ = ["DEFAULT_MAX_BODY_BYTES", "app_lifespan", "create_app", "messenger_lifespan"]

logger = logging.getLogger("unified_messaging.asgi")
_WORKER_STOP_SECONDS: Final = 10.0

#: D16: request bodies are capped at 1 MiB.
DEFAULT_MAX_BODY_BYTES: Final = 1024 * 1024

# The lifespan of every app create_app made, for hosts that mount one (see app_lifespan).
_LIFESPANS: weakref.WeakKeyDictionary[Starlette, Lifespan] = weakref.WeakKeyDictionary()


def app_lifespan(app: Starlette) -> Lifespan:
    """The lifespan of ``app`` (from :func:`create_app`), for a host that mounts it.

    It opens the messenger and starts the worker and the MCP endpoint's session manager on
    startup, and stops them on shutdown. The app runs it itself when it is the server's app;
    mounted inside a host, its lifespan never runs (ASGI servers send lifespan events to the
    outermost app only, and Starlette and FastAPI do not pass them on to mounts). The app then
    starts them on its first request and stops them when the event loop ends (see
    ``_runtime``); a host with a lifespan should run this one in it instead, so that they
    stop with the host::

        messaging = create_app(messenger)
        host = Starlette(
            routes=[Mount("/messaging", app=messaging)],
            lifespan=app_lifespan(messaging),
        )

    or, inside a lifespan of its own, ``async with app_lifespan(messaging)(host): ...``.
    """
    lifespan = _LIFESPANS.get(app)
    if lifespan is None:
        raise TypeError("app_lifespan() takes an app made by create_app()")
    return lifespan


def _lifespan(messenger: Messenger, mcp: McpEndpoint | None, *, worker: bool) -> Lifespan:
    opened = messenger_lifespan(messenger)

    @asynccontextmanager
    async def lifespan(app: object) -> AsyncIterator[None]:
        # The messenger opens first and closes last: MCP requests and the worker need it.
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(opened(app))
            if worker:
                await stack.enter_async_context(_running_worker(messenger))
            if mcp is not None:
                await stack.enter_async_context(mcp.running())
            yield

    return lifespan


@asynccontextmanager
async def _running_worker(messenger: Messenger) -> AsyncIterator[None]:
    """The background worker, for as long as the app runs; an item it was in the middle of
    when stopped is picked up again by the next worker once its lease runs out."""
    stop = asyncio.Event()
    task = asyncio.create_task(messenger.run_worker(stop), name="unified-messaging worker")
    try:
        yield
    finally:
        stop.set()
        try:
            await asyncio.wait_for(task, _WORKER_STOP_SECONDS)
        except TimeoutError:
            logger.warning("the worker did not stop within %s s; cancelled", _WORKER_STOP_SECONDS)


def _what_runs(*, worker: bool, mcp: bool) -> str:
    """What the runtime runs beside the requests, for its log lines."""
    parts = ["the messenger", *(["the worker"] if worker else []), *(["/mcp"] if mcp else [])]
    return " and ".join([", ".join(parts[:-1]), parts[-1]]) if len(parts) > 1 else parts[0]


def _wants_mcp(mcp: bool | None) -> bool:
    installed = importlib.util.find_spec("mcp") is not None
    if mcp and not installed:
        from .._errors import MissingExtra

        raise MissingExtra("The /mcp endpoint", extra="mcp", setting="mcp")
    return installed if mcp is None else mcp


def _dashboard_mount(
    messenger: Messenger, trusted_proxies: Iterable[str], public_url: str | None
) -> Mount:
    try:
        from ..dashboard import create_dashboard
    except ImportError as exc:
        from .._errors import MissingExtra

        raise MissingExtra("The dashboard", extra="dashboard", setting="dashboard") from exc
    # The app's own lifespan opens the messenger; the mounted dashboard's would never run.
    console = create_dashboard(
        messenger, trusted_proxies=trusted_proxies, public_url=public_url, open_messenger=False
    )
    return Mount("/dashboard", app=console)


class _App(Starlette):
    """Starlette with the app's own layers around its stack (``outside``), built once.

    Pure ASGI, no ``BaseHTTPMiddleware``: each layer is one call and at most one wrapper of
    ``send`` per request. Middleware a host adds with ``add_middleware`` goes inside, in
    Starlette's stack, as before.
    """

    def __init__(self, *, outside: Callable[[ASGIApp], ASGIApp], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._outside = outside

    def build_middleware_stack(self) -> ASGIApp:
        return self._outside(super().build_middleware_stack())


def create_app(
    messenger: Messenger,
    *,
    trusted_proxies: Iterable[str] = (),
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    idempotency_ttl: timedelta = IDEMPOTENCY_TTL,
    mcp: bool | None = None,
    mcp_allowed_hosts: Iterable[str] | None = None,
    mcp_allowed_origins: Iterable[str] = (),
    worker: bool = True,
    metrics_token: str | None = None,
    dashboard: bool = False,
    public_url: str | None = None,
) -> Starlette:
    """The ASGI app serving the ``/v1`` REST contract and the ``/mcp`` endpoint over ``messenger``.

    ``trusted_proxies``: addresses or CIDRs of the reverse proxies in front of the app;
    only behind one of them is ``X-Forwarded-For`` believed (D18). ``max_body_bytes``:
    the REST request body cap (413 above it; ``/mcp`` keeps the MCP SDK's 4 MiB).

    ``mcp``: serve ``POST /mcp``; ``None`` (the default) serves it when the ``mcp`` extra is
    installed. ``mcp_allowed_hosts``: the ``Host`` names ``/mcp`` answers to (the SDK's
    DNS-rebinding protection, with ``mcp_allowed_origins`` for browser ``Origin`` values);
    ``None`` checks no ``Host``, since every MCP request needs an API key anyway.

    ``worker``: run the background worker (delivery reports, DLR time-outs, fallback,
    webhooks) beside the requests, started with the rest (see below). Turn it off when
    workers run as their own processes (``unified-messaging worker``); any number of each
    share the work through the store.

    ``metrics_token``: serve ``GET /metrics`` (D30, the Prometheus scrape of the messenger's
    :class:`~unified_messaging.PrometheusMetrics`) to requests bearing this token; without
    one there is no ``/metrics`` here (see :func:`create_metrics_app` for a listener of its
    own). ``ValueError`` if the messenger keeps no Prometheus metrics or the token is short.

    ``dashboard``: serve the web console at ``/dashboard`` (D31; needs the ``dashboard``
    extra), as :func:`~unified_messaging.dashboard.create_dashboard` makes it, with
    ``public_url`` (the app's public address: an ``https://`` one makes the dashboard's
    cookies ``Secure`` and its answers carry HSTS even when the proxy does not say HTTPS).

    Mount it under any prefix of a host app. A host with a lifespan should run
    :func:`app_lifespan` in it; without that, the app starts what it runs beside its requests
    (messenger, worker, ``/mcp``) on its first request, and stops it when the event loop ends.
    """
    if max_body_bytes < 1:
        raise ValueError("max_body_bytes must be at least 1")
    trusted_proxies = tuple(trusted_proxies)
    client_address = ClientAddress(trusted_proxies)
    endpoint = None
    if _wants_mcp(mcp):
        from ._mcp import McpEndpoint, transport_security

        endpoint = McpEndpoint(
            messenger,
            client_address=client_address,
            security=transport_security(mcp_allowed_hosts, mcp_allowed_origins),
        )
    api = RestApi(
        messenger,
        client_address=client_address,
        max_body_bytes=max_body_bytes,
        idempotency=IdempotencyKeys(messenger.store, messenger.clock, ttl=idempotency_ttl),
    )
    documents: dict[str, bytes] = {}

    async def openapi(request: Request) -> Response:
        # Built once per prefix the app is mounted under; no I/O.
        root_path = request.scope.get("root_path", "")
        body = documents.get(root_path)
        if body is None:
            body = documents[root_path] = json_bytes(openapi_document(root_path))
        return Response(body, media_type=JSON_MEDIA_TYPE)

    async def unhandled(request: Request, exc: Exception) -> Response:
        # A route of Starlette's stack failed: the 500 body goes out here (with the request
        # id: RequestIdMiddleware is outside), and RequestIdMiddleware logs the error.
        return internal_error_response()

    messages = Route("/v1/messages", api.messages, methods=["GET", "POST"])
    bulk = Route("/v1/messages/bulk", api.send_bulk, methods=["POST"])
    by_id = Route("/v1/messages/{job_id}", api.get_message, methods=["GET"])
    health = Route("/v1/health", api.health, methods=["GET"])
    routes: list[BaseRoute] = [
        messages,
        bulk,
        by_id,
        health,
        Route("/v1/messages/{job_id}/cancel", api.cancel_message, methods=["POST"]),
        Route("/v1/suppressions", api.suppressions, methods=["GET", "POST", "DELETE"]),
        Route("/v1/test_helpers/inbound", api.simulate_inbound, methods=["POST"]),
        Route("/v1/consents", api.consents, methods=["GET", "POST"]),
        Route("/v1/consents/{consent_id}", api.consent, methods=["GET"]),
        Route("/v1/verifications", api.start_verification, methods=["POST"]),
        # Before ``{verification_id}``: "stats" is no verification's id.
        Route("/v1/verifications/stats", api.verification_stats, methods=["GET"]),
        Route("/v1/verifications/{verification_id}", api.get_verification, methods=["GET"]),
        Route(
            "/v1/verifications/{verification_id}/check",
            api.check_verification,
            methods=["POST"],
        ),
        Route(
            "/v1/verifications/{verification_id}/cancel",
            api.cancel_verification,
            methods=["POST"],
        ),
        Route("/v1/stats", api.stats, methods=["GET"]),
        Route("/v1/openapi.json", openapi, methods=["GET"]),
        Route(
            "/v1/dlr/{connection_id}/{token}",
            DlrEndpoint(messenger).handle,
            methods=["GET", "POST"],
        ),
    ]
    if metrics_token is not None:
        from ._metrics import METRICS_PATH, MetricsEndpoint

        scrape = MetricsEndpoint(messenger, token=metrics_token)
        routes.append(Route(METRICS_PATH, scrape.handle, methods=["GET"]))
    if endpoint is not None:
        # An exact route: a Mount would answer /mcp with a 307 to /mcp/. GET, for a stream
        # of server messages, is 405: a stateless server has none to send.
        routes.append(Route("/mcp", endpoint, methods=["POST"]))
    if dashboard:
        routes.append(_dashboard_mount(messenger, trusted_proxies, public_url))
    runtime = Runtime(
        _lifespan(messenger, endpoint, worker=worker),
        what=_what_runs(worker=worker, mcp=endpoint is not None),
    )
    hot = {
        ("GET", "/v1/messages"): messages,
        ("POST", "/v1/messages"): messages,
        ("POST", "/v1/messages/bulk"): bulk,
        ("GET", "/v1/health"): health,
    }

    def outside(stack: ASGIApp) -> ASGIApp:
        # Outermost first: the request id (and the last-resort 500), inside it the server
        # span (a failure answered there is still on it), then the lazy start (a store that
        # cannot be opened is answered in the contract's body with an id), then the hot
        # routes, and for every other request Starlette's own stack and router.
        inner = HotRoutes(stack, exact=hot, by_id=by_id)
        return RequestIdMiddleware(TracingMiddleware(LazyStartMiddleware(inner, runtime=runtime)))

    app = _App(
        outside=outside,
        routes=routes,
        exception_handlers={HTTPException: http_exception_response, Exception: unhandled},
        lifespan=runtime.lifespan,
    )
    _LIFESPANS[app] = runtime.lifespan
    return app
