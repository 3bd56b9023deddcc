"""The hot REST routes, dispatched straight to their endpoints.

Starlette's router and its two exception layers cost as much CPU as a whole health answer:
the router tries every route's regular expression in turn, and each layer wraps ``send`` once
more. The four routes every client calls (``/v1/messages`` GET and POST, ``/v1/messages/bulk``
POST, ``/v1/messages/{job_id}`` GET, ``/v1/health`` GET) are found here by a dictionary
lookup (and one prefix cut for the job id) and run as Starlette's ``request_response`` would
run them; every other request (a wrong method, HEAD, a trailing slash, ``/mcp``, the
dashboard, an unknown path) goes on to the full Starlette stack, whose answers stay as they
were. The matched :class:`~starlette.routing.Route` is put in the scope as the router would
put it, for the tracing span's ``http.route``.

An endpoint's exception is not caught here: it reaches ``RequestIdMiddleware`` outside, which
answers the D13 500, as it did when the router ran the endpoint (the app's endpoints raise no
``HTTPException``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Final

from starlette._utils import get_route_path
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["HotRoutes"]

Endpoint = Callable[[Request], Awaitable[Response]]

_BY_ID_PREFIX: Final = "/v1/messages/"
_BULK: Final = "bulk"


class HotRoutes:
    """Runs the routes in ``exact`` (by method and path) and ``by_id`` (``GET
    /v1/messages/{job_id}``) itself; hands everything else to ``fallback``."""

    def __init__(
        self,
        fallback: ASGIApp,
        *,
        exact: Mapping[tuple[str, str], Route],
        by_id: Route,
    ) -> None:
        self._fallback = fallback
        self._exact = {key: (route, _endpoint(route)) for key, route in exact.items()}
        self._by_id = (by_id, _endpoint(by_id))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            method = scope["method"]
            path = get_route_path(scope)
            hit = self._exact.get((method, path))
            params: dict[str, str] = {}
            if hit is None and method == "GET" and path.startswith(_BY_ID_PREFIX):
                job_id = path[len(_BY_ID_PREFIX) :]
                # One path segment, as the router's {job_id} takes it; "bulk" is the bulk
                # route's path, left to the router (its GET is a 404 from get_message there).
                if job_id and "/" not in job_id and job_id != _BULK:
                    hit = self._by_id
                    params = {"job_id": job_id}
            if hit is not None:
                route, endpoint = hit
                scope["route"] = route
                scope["endpoint"] = endpoint
                scope["path_params"] = params
                response = await endpoint(Request(scope, receive, send))
                await response(scope, receive, send)
                return
        await self._fallback(scope, receive, send)


def _endpoint(route: Route) -> Endpoint:
    endpoint = route.endpoint
    assert callable(endpoint)
    return endpoint
