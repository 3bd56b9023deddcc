"""``POST /mcp``: the MCP endpoint (SPEC 4.5, D25), on the official SDK's streamable HTTP transport.

:class:`McpEndpoint` is an ASGI app mounted as an exact route. Each request is first
authorized as REST authorizes it (the façade's 401 → 403 → 429, answered with the D13 body,
``WWW-Authenticate`` and the RateLimit fields) before a byte of its body is read; only then
does the SDK's session manager see it, with the ``Authorization`` field removed and the
caller's :class:`~unified_messaging.Principal` in the scope for the tools. Answers carry the
RateLimit fields like every authenticated REST answer.

The transport is stateless with JSON responses: one POST, one JSON-RPC answer, nothing kept
between requests, so any instance behind a load balancer can answer any request. The SDK
keeps its own 4 MiB body cap (413) and its Host/Origin checks (:func:`transport_security`);
the ``Content-Type`` is checked first by REST's rule. Whatever the SDK refuses about the HTTP
request comes out in the D13 body (``_mcp_refusals``); what it refuses about the JSON-RPC
message stays a JSON-RPC error, which is what an MCP client reads.

The SDK's session manager needs a task group that outlives requests. It runs inside
:meth:`McpEndpoint.running`, which the app's runtime enters (in the app's lifespan, or from its
first request where no lifespan ran: ``_runtime``); a new manager is made for each run because
one manager can run only once.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from .._errors import MessagingError
from .._messenger import Messenger, Principal
from ._auth import authorize
from ._body import check_media_type
from ._client_ip import ClientAddress
from ._errors import error_response, internal_error_response
from ._mcp_refusals import in_contract_shape
from ._mcp_tools import PRINCIPAL_SCOPE_KEY, build_server

__all__ = ["McpEndpoint", "transport_security"]

logger = logging.getLogger("unified_messaging.asgi")


def transport_security(
    allowed_hosts: Iterable[str] | None, allowed_origins: Iterable[str] = ()
) -> TransportSecuritySettings:
    """The SDK's DNS-rebinding protection (Host and Origin checks) for ``allowed_hosts``.

    ``None``: no Host check. The protection exists for servers that trust whoever can reach
    them (a local tool server a web page could be pointed at by rebinding its DNS name). This
    endpoint trusts nobody without an API key, which a browser does not send on its own, and a
    library mounted under hosts it does not know cannot list their names. Operators who know
    them should name them: each entry matches with and without a port (``api.example.com``
    also admits ``api.example.com:8443``). ``allowed_origins`` admits browser ``Origin`` values
    when hosts are named; a request without ``Origin`` (every non-browser client) passes.
    """
    if allowed_hosts is None:
        # Passing None to the SDK would not mean "off": it would admit only localhost names.
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts = list(allowed_hosts)
    if not hosts:
        raise ValueError("mcp_allowed_hosts must name at least one host (or be None)")
    patterns: list[str] = []
    for host in hosts:
        patterns.append(host)
        if not _has_port(host):
            patterns.append(f"{host}:*")
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=patterns,
        allowed_origins=list(allowed_origins),
    )


def _has_port(host: str) -> bool:
    if host.startswith("["):  # [v6] or [v6]:port
        return "]:" in host
    return ":" in host


class McpEndpoint:
    """The ASGI app of ``POST /mcp``, over ``messenger``."""

    def __init__(
        self,
        messenger: Messenger,
        *,
        client_address: ClientAddress,
        security: TransportSecuritySettings,
    ) -> None:
        self._messenger = messenger
        self._client_address = client_address
        self._security = security
        self._server = build_server(messenger)
        self._manager: StreamableHTTPSessionManager | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run the SDK's session manager for as long as the context lasts (the app's runtime)."""
        if self._manager is not None:
            raise RuntimeError("this app's MCP endpoint is already running in another lifespan")
        self._server.streamable_http_app(
            stateless_http=True, json_response=True, transport_security=self._security
        )
        manager = self._server.session_manager
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager = self._manager
        if manager is None:
            # The runtime starts it before any request reaches a route; this is a bug.
            logger.error("POST /mcp, but the MCP session manager is not running")
            await internal_error_response()(scope, receive, send)
            return
        outcome = await self._authorize(scope)
        if isinstance(outcome, Response):
            await outcome(scope, receive, send)
            return
        principal, rate_headers = outcome
        try:
            # REST's rule, before the SDK's (plain text 400, or 415, by which check fires).
            check_media_type(Headers(scope=scope).get("content-type"))
        except MessagingError as exc:
            await error_response(exc, rate_headers)(scope, receive, send)
            return
        inner: Scope = {
            **scope,
            "headers": _without_authorization(scope["headers"]),
            PRINCIPAL_SCOPE_KEY: principal,
        }
        reply = in_contract_shape(_adding(rate_headers, send))
        await manager.handle_request(inner, receive, reply)

    async def _authorize(self, scope: Scope) -> tuple[Principal, dict[str, str]] | Response:
        # The same frame as REST's: the façade decides, the edge only renders.
        return await authorize(self._messenger, Headers(scope=scope), self._client_address(scope))


def _without_authorization(headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    # The key stops at the edge: the SDK hands request headers on to handlers and telemetry.
    return [(name, value) for name, value in headers if name.lower() != b"authorization"]


def _adding(headers: Mapping[str, str], send: Send) -> Send:
    async def send_with_headers(message: Message) -> None:
        if message["type"] == "http.response.start":
            MutableHeaders(scope=message).update(headers)
        await send(message)

    return send_with_headers
