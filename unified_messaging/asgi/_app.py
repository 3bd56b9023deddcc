"""``create_app``: the Starlette application of the REST edge, and its lifespan.

The app owns routing, the order of its middleware and the lifespan; everything a request
does is in ``_routes``. Unknown paths and wrong methods get the contract's error body too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import timedelta
from typing import Final

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .._idempotency import IDEMPOTENCY_TTL, IdempotencyKeys
from .._messenger import Messenger
from ._client_ip import ClientAddress
from ._errors import JSON_MEDIA_TYPE, http_exception_response, internal_error_response, json_bytes
from ._openapi import openapi_document
from ._request_id import RequestIdMiddleware
from ._routes import RestApi

__all__ = ["DEFAULT_MAX_BODY_BYTES", "create_app", "messenger_lifespan"]

#: D16: request bodies are capped at 1 MiB.
DEFAULT_MAX_BODY_BYTES: Final = 1024 * 1024


def messenger_lifespan(
    messenger: Messenger,
) -> Callable[[object], AbstractAsyncContextManager[None]]:
    """A lifespan that opens ``messenger`` on startup and closes it on shutdown.

    The app from :func:`create_app` runs it itself when it is the server's app. Mounted
    inside a host, its lifespan never runs (ASGI servers send lifespan events to the
    outermost app only), so pass this to the host instead, or ``async with messenger:`` in
    the host's own lifespan::

        host = Starlette(
            routes=[Mount("/messaging", app=create_app(messenger))],
            lifespan=messenger_lifespan(messenger),
        )
    """

    @asynccontextmanager
    async def lifespan(app: object) -> AsyncIterator[None]:
        await messenger.open()
        try:
            yield
        finally:
            await messenger.aclose()

    return lifespan


def create_app(
    messenger: Messenger,
    *,
    trusted_proxies: Iterable[str] = (),
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    idempotency_ttl: timedelta = IDEMPOTENCY_TTL,
) -> Starlette:
    """The ASGI app serving the ``/v1`` REST contract over ``messenger``.

    ``trusted_proxies``: addresses or CIDRs of the reverse proxies in front of the app;
    only behind one of them is ``X-Forwarded-For`` believed (D18). ``max_body_bytes``:
    the request body cap (413 above it). Mount it under any prefix of a host app (see
    :func:`messenger_lifespan` for the host's lifespan).
    """
    if max_body_bytes < 1:
        raise ValueError("max_body_bytes must be at least 1")
    api = RestApi(
        messenger,
        client_address=ClientAddress(trusted_proxies),
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
        # Only reached if RequestIdMiddleware itself fails; it handles the app's errors.
        return internal_error_response()

    routes = [
        Route("/v1/messages", api.send, methods=["POST"]),
        Route("/v1/messages/bulk", api.send_bulk, methods=["POST"]),
        Route("/v1/messages/{job_id}", api.get_message, methods=["GET"]),
        Route("/v1/health", api.health, methods=["GET"]),
        Route("/v1/openapi.json", openapi, methods=["GET"]),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(RequestIdMiddleware)],
        exception_handlers={HTTPException: http_exception_response, Exception: unhandled},
        lifespan=messenger_lifespan(messenger),
    )
