"""The MCP transport's refusals of an HTTP request, in the contract's body (D13).

The SDK words what it refuses about the HTTP request itself in its own way: plain text (a
Host or Origin it was told to refuse, a body over its 4 MiB cap, a Content-Type it does not
take), an empty body (406 of the newer protocol revision), or a JSON-RPC error without an
id (406 and 415 of the older one). To a client these are refusals of the request like any
REST one, so :func:`in_contract_shape` replaces them with the D13 body, and the SDK's 415
becomes the 400 that REST answers for the same Content-Type.

What the SDK says about the JSON-RPC message (a parse error, JSON that is no JSON-RPC
message, an unknown method, bad params) stays a JSON-RPC error: that is what an MCP client
reads and hands to its caller. A 5xx is never the SDK's to word: it becomes the D13 500.
"""

from __future__ import annotations

import logging
from typing import Final

from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import Message, Send

from .._errors import PayloadTooLarge, RequestInvalid
from ._body import not_json_media_type
from ._errors import JSON_MEDIA_TYPE, error_response, internal_error_response, status_response

__all__ = ["in_contract_shape"]

logger = logging.getLogger("unified_messaging.asgi")

#: Statuses the SDK only ever uses for the HTTP request, whatever body it gives them.
_REQUEST_REFUSALS: Final = frozenset({403, 406, 413, 415, 421})
_MESSAGES: Final = {
    403: "The request's Origin is not allowed.",
    406: "The client must accept application/json.",
    421: "This host name is not served here.",
}


def in_contract_shape(send: Send) -> Send:
    """``send``, with the SDK's refusals of the HTTP request replaced by D13 answers."""
    held: Message | None = None

    async def send_in_shape(message: Message) -> None:
        nonlocal held
        if message["type"] == "http.response.start" and _is_request_refusal(message):
            held = message  # its body is the SDK's; ours replaces it once that is done
            return
        if held is None or message["type"] != "http.response.body":
            await send(message)
            return
        if message.get("more_body", False):
            return
        await _send_response(_replacement(held["status"]), send)

    return send_in_shape


def _is_request_refusal(start: Message) -> bool:
    status: int = start["status"]
    if status >= 500 or status in _REQUEST_REFUSALS:
        return True
    media_type = Headers(raw=start.get("headers", [])).get("content-type", "")
    return status >= 400 and media_type.split(";")[0].strip().lower() != JSON_MEDIA_TYPE


def _replacement(status: int) -> Response:
    if status >= 500:
        logger.error("the MCP SDK answered %s; answered 500 INTERNAL_ERROR instead", status)
        return internal_error_response()
    if status == 413:
        return error_response(PayloadTooLarge.over(DEFAULT_MAX_REQUEST_BODY_SIZE))
    if status == 415:
        return error_response(not_json_media_type())
    if status == 400:
        return error_response(RequestInvalid.for_field("body", "is not a request /mcp can read"))
    return status_response(status, _MESSAGES.get(status) or "The request was refused.")


async def _send_response(response: Response, send: Send) -> None:
    await send(
        {"type": "http.response.start", "status": response.status_code,
         "headers": response.raw_headers}
    )  # fmt: skip
    await send({"type": "http.response.body", "body": response.body})
