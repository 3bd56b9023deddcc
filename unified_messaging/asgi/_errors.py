"""HTTP error rendering (D13): every error the app answers, in one body shape.

    {"error": {"code": "…", "message": "…", "details": [{"field": "…", "message": "…"}]}}

``details`` only on 400; a 502 ``PROVIDER_UNAVAILABLE`` also names the ``job_id`` it left
behind. The core raises :class:`~unified_messaging.MessagingError` subclasses that already
carry their status and code; this module only turns them into bytes and headers. A 500
never says more than "Internal error.": what went wrong goes to the log, not to the caller.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from http import HTTPStatus
from typing import Final

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from .._access.ratelimit import retry_after_header
from .._errors import (
    ConfigurationError,
    MessagingError,
    ProviderUnavailable,
    RecipientRateLimited,
    RequestInvalid,
    Unauthorized,
    VerificationRateLimited,
)

__all__ = [
    "JSON_MEDIA_TYPE",
    "coded_body",
    "error_body",
    "error_response",
    "http_exception_response",
    "internal_error_response",
    "json_bytes",
    "status_code_name",
    "status_response",
]

JSON_MEDIA_TYPE: Final = "application/json"
_INTERNAL_MESSAGE: Final = "Internal error."
#: RFC 6750 §3: a 401 names the scheme the client should use.
_CHALLENGE: Final = {"WWW-Authenticate": "Bearer"}
_ROUTER_CODES: Final = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}

logger = logging.getLogger("unified_messaging.asgi")


def json_bytes(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def coded_body(code: str, message: str) -> dict[str, object]:
    """The D13 body that carries only a code and a message: every refusal but a 400's."""
    return {"error": {"code": code, "message": message}}


def error_body(error: MessagingError) -> dict[str, object]:
    """The D13 body of ``error``.

    A 500 or 503 says only what kind of failure it was: their own messages may name
    internals (a database path, a driver's complaint), which go to the log instead.
    """
    if error.http_status >= 500 and not isinstance(error, ProviderUnavailable):
        message = _INTERNAL_MESSAGE if error.http_status == 500 else type(error).default_message
        return coded_body(error.code, message)
    body: dict[str, object] = {"code": error.code, "message": error.message}
    if isinstance(error, RequestInvalid):
        details = error.details or ()
        body["details"] = [{"field": d.field, "message": d.message} for d in details] or [
            {"field": "body", "message": error.message}
        ]
    hints = getattr(error, "hints", None)  # 422 COMMERCIAL_CONTENT_REFUSED (D33)
    if isinstance(hints, tuple):
        body["hints"] = [{"code": hint.code, "message": hint.message} for hint in hints]
    job_id = getattr(error, "job_id", None)  # 502 PROVIDER_UNAVAILABLE, some 422s
    if isinstance(job_id, str):
        body["job_id"] = job_id
    return {"error": body}


def error_response(error: MessagingError, headers: Mapping[str, str] | None = None) -> Response:
    """The response for a :class:`MessagingError`, with ``headers`` (e.g. the RateLimit fields)."""
    if error.http_status >= 500:
        _log(error)
    all_headers = dict(headers or {})
    if isinstance(error, Unauthorized):
        all_headers.update(_CHALLENGE)
    if isinstance(error, RecipientRateLimited | VerificationRateLimited):
        all_headers["Retry-After"] = retry_after_header(error.retry_after)  # D28, D34
    return Response(
        json_bytes(error_body(error)),
        status_code=error.http_status,
        headers=all_headers,
        media_type=JSON_MEDIA_TYPE,
    )


def internal_error_response() -> Response:
    body = coded_body(MessagingError.code, _INTERNAL_MESSAGE)
    return Response(json_bytes(body), status_code=500, media_type=JSON_MEDIA_TYPE)


def status_code_name(status: int) -> str:
    """The code of an HTTP refusal that no core error stands for: its phrase, as a code
    (``403`` → ``FORBIDDEN``, ``406`` → ``NOT_ACCEPTABLE``)."""
    return _ROUTER_CODES.get(status) or HTTPStatus(status).phrase.upper().replace(" ", "_")


def status_response(
    status: int, message: str, headers: Mapping[str, str] | None = None
) -> Response:
    """A D13 answer for a refusal of the HTTP request itself (a router's, a transport's),
    coded by :func:`status_code_name`."""
    body = coded_body(status_code_name(status), message)
    return Response(
        json_bytes(body), status_code=status, headers=headers, media_type=JSON_MEDIA_TYPE
    )


async def http_exception_response(request: Request, exc: Exception) -> Response:
    """Starlette's own 404 (no route) and 405 (wrong method), in the contract's body."""
    assert isinstance(exc, HTTPException)
    status = exc.status_code
    message = "No such endpoint." if status == 404 else HTTPStatus(status).phrase + "."
    if status == 405:
        message = f"The method {request.method} is not allowed here."
    return status_response(status, message, exc.headers)


def _log(error: MessagingError) -> None:
    # The error's own message is safe to log (the core never puts a secret in one); the
    # traceback is only worth having for the unexpected kind. A configuration error is the
    # operator's to fix, not a bug: its message (naming the setting) is all there is to say.
    if isinstance(error, ConfigurationError):
        logger.error("configuration error: %s", error.message)
    elif error.http_status == 500:
        logger.error("internal error: %r", error, exc_info=error)
    else:
        logger.warning("%s: %s", error.code, error.message)
