"""``X-Request-ID`` on every response, and the last line of defence that guarantees it.

The middleware echoes a client's id when it is sane (so a caller can correlate its logs with
ours) and makes one otherwise. An id that looks like a secret (one of our API keys, a webhook
secret, a long token: :func:`~.._observability.logsafe.looks_secret`) is not sane: a client
that put its key there must not find it in our logs. It also turns any
exception that escaped the app into the D13 500 body, logged with the request id, so not even
a bug answers without the header or with a traceback. Since it touches every answer's
headers, it also adds the ones every REST and MCP answer carries (``_answer_headers``).
"""

from __future__ import annotations

import logging
import re
from typing import Final

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .._ids import new_id
from .._observability.log_context import bind_log_context
from .._observability.logsafe import looks_secret, safe_log_text
from ._answer_headers import answer_headers
from ._errors import internal_error_response

__all__ = ["REQUEST_ID_HEADER", "RequestIdMiddleware", "new_request_id", "request_id"]

REQUEST_ID_HEADER: Final = "X-Request-ID"
_HEADER_NAME: Final = REQUEST_ID_HEADER.lower().encode("latin-1")
_SCOPE_KEY: Final = "unified_messaging.request_id"
# Ids are echoed into our logs and responses: only plain tokens, so nothing can be injected.
_SANE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+=/@-]{0,127}")

logger = logging.getLogger("unified_messaging.asgi")


def new_request_id() -> str:
    """A fresh request id: for a request that brought none (or none sane), and for the
    answers the server gives before the app runs (``cli._serve_http``)."""
    return new_id("req")


def request_id(scope: Scope) -> str:
    """The id of the request in ``scope`` (set by :class:`RequestIdMiddleware`)."""
    found = scope.get(_SCOPE_KEY)
    return found if isinstance(found, str) else "-"


def _incoming(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"x-request-id":
            text = value.decode("latin-1").strip()
            return text if _SANE.fullmatch(text) and not looks_secret(text) else None
    return None


class RequestIdMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = _incoming(scope) or new_request_id()
        scope[_SCOPE_KEY] = rid
        bind_log_context(request_id=rid)  # this request's task only
        field = (_HEADER_NAME, rid.encode("latin-1"))
        extra = answer_headers(scope)
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                # As MutableHeaders' assignment would (one field, ours), without building it.
                headers = [h for h in message.get("headers", ()) if h[0].lower() != _HEADER_NAME]
                headers.append(field)
                if extra:
                    # The app's own value wins (none sets these today).
                    names = {name.lower() for name, _ in headers}
                    headers.extend(h for h in extra if h[0] not in names)
                message["headers"] = headers
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            # Logged here with the id, not re-raised: the server would log it again, and a
            # host's error page would replace the contract's body.
            # The path is escaped and masked here too: a host that mounts the app may log
            # without serve's filter, and the path may hold a delivery-report token.
            logger.exception(
                "unhandled error in %s %s (request %s)",
                safe_log_text(str(scope["method"])),
                safe_log_text(str(scope["path"])),
                rid,
            )
            if started:
                return
            await internal_error_response()(scope, receive, send_with_id)
