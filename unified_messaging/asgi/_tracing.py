"""The REST request's server span (HTTP semantic conventions), when tracing is on.

Named ``{METHOD} {route}`` once routing has matched (``POST /v1/messages``,
``GET /v1/messages/{job_id}``), never the raw path; it continues the caller's
``traceparent``. ``url.path`` has a delivery-report token masked and no query string is
recorded (a ``to=`` filter is a phone number).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .._observability.logsafe import mask_secrets
from .._observability.tracing import span, tracing_enabled

__all__ = ["TracingMiddleware"]

_CARRIED = (b"traceparent", b"tracestate")


class TracingMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not tracing_enabled():
            await self.app(scope, receive, send)
            return
        method = str(scope["method"])
        carrier = {
            name.decode("latin-1"): value.decode("latin-1")
            for name, value in scope.get("headers", ())
            if name.lower() in _CARRIED
        }
        server = scope.get("server") or (None, None)
        client = scope.get("client") or (None, None)
        user_agent = next(
            (
                v.decode("latin-1")
                for n, v in scope.get("headers", ())
                if n.lower() == b"user-agent"
            ),
            None,
        )
        attributes = {
            "http.request.method": method,
            "url.path": mask_secrets(str(scope.get("path", ""))),
            "url.scheme": str(scope.get("scheme", "http")),
            "server.address": server[0],
            "server.port": server[1],
            "client.address": client[0],
            "user_agent.original": user_agent,
        }
        status: int | None = None

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        with span(method, kind="server", attributes=attributes, parent=carrier or None) as traced:
            try:
                await self.app(scope, receive, send_status)
            finally:
                route = scope.get("route")
                path = getattr(route, "path", None)
                if isinstance(path, str):
                    traced.rename(f"{method} {path}")
                    traced.set("http.route", path)
                traced.set("http.response.status_code", status)
                if status is not None and status >= 500:
                    traced.error(str(status))
