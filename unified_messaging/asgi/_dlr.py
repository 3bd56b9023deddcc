"""``/v1/dlr/{connection_id}/{token}``: delivery reports pushed by providers (D20).

No API key: the path's per-connection token is the credential, compared in constant time by
the façade, which answers 404 for an unknown connection and a wrong token alike. Each
provider posts its own format (form fields, JSON, XML, query strings on a GET); the
connection's adapter reads it. A ``bizchat`` GET is WhatsApp's subscription handshake,
answered with ``hub.challenge`` as plain text (a refused one, or one on a connection of
another provider, is ``403 FORBIDDEN`` in the D13 body); its POSTs in WhatsApp's format must
carry a valid ``X-Hub-Signature-256``. On every connection, one with credentials included, a
body in the simulator's push format is read too, and only ever touches test-mode messages.

A request that was read is answered ``200 {"received", "matched", "changed"}`` even when no
report matched a known message, so a provider does not retry reports for messages sent
elsewhere; only errors of the request itself are 4xx. A provider that wants a set answer
(Jasmin reads ``ACK/Jasmin``, else it sends the report again) gets that, as plain text.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from .._errors import MessagingError
from .._messenger import Messenger
from ..providers.base import InboundCallback
from ._body import read_body
from ._errors import JSON_MEDIA_TYPE, error_response, json_bytes, status_response

__all__ = ["DlrEndpoint"]

#: Reports are small; a provider's batch of a few hundred fits well within this.
MAX_REPORT_BYTES = 256 * 1024
_HANDSHAKE_REFUSED = "This connection does not accept this subscription handshake."


class DlrEndpoint:
    def __init__(self, messenger: Messenger, *, max_body_bytes: int = MAX_REPORT_BYTES) -> None:
        self._messenger = messenger
        self._max_body_bytes = max_body_bytes

    async def handle(self, request: Request) -> Response:
        connection_id = request.path_params["connection_id"]
        token = request.path_params["token"]
        query = dict(request.query_params)
        try:
            if request.method == "GET" and query.get("hub.mode") is not None:
                challenge = await self._messenger.reports.challenge(connection_id, token, query)
                if challenge is None:
                    return status_response(403, _HANDSHAKE_REFUSED)
                return PlainTextResponse(challenge)
            body = (
                b"" if request.method == "GET" else await read_body(request, self._max_body_bytes)
            )
            callback = InboundCallback(
                method=request.method,
                headers={k.lower(): v for k, v in request.headers.items()},
                query=query,
                body=body,
            )
            result = await self._messenger.reports.ingest(connection_id, token, callback)
        except MessagingError as exc:
            return error_response(exc)
        if result.reply is not None:
            # The provider reads this exact body as its acknowledgement (Jasmin's ACK/Jasmin).
            return PlainTextResponse(result.reply)
        body = json_bytes(
            {"received": result.received, "matched": result.matched, "changed": result.changed}
        )
        return Response(body, media_type=JSON_MEDIA_TYPE)
