"""The OpenAPI paths of ``/v1/verifications`` (D34), merged into the document by ``_openapi``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from ._openapi import (
    _ACCESS_ERRORS,
    _REQUEST_ID_PARAMETER,
    _SERVER_ERRORS,
    _ok,
    _responses,
)
from ._schemas import REF, JsonObject

__all__ = ["verification_paths"]


_ID: Final = {
    "name": "verification_id",
    "in": "path",
    "required": True,
    "description": "The verification's id (`ver_…`).",
    "schema": {"type": "string"},
}
_READ_ERRORS: Final[Mapping[int, Sequence[str]]] = {
    **_ACCESS_ERRORS,
    404: ["VERIFICATION_NOT_FOUND"],
    429: ["RATE_LIMITED"],
    **_SERVER_ERRORS,
}
_CHECK_ERRORS: Final[Mapping[int, Sequence[str]]] = {
    **_READ_ERRORS,
    400: ["VALIDATION_ERROR"],
    409: ["VERIFICATION_ALREADY_APPROVED"],
    413: ["PAYLOAD_TOO_LARGE"],
}
_START_ERRORS: Final[Mapping[int, Sequence[str]]] = {
    400: ["VALIDATION_ERROR"],
    **_ACCESS_ERRORS,
    404: ["PROVIDER_NOT_CONNECTED", "TEMPLATE_NOT_FOUND"],
    413: ["PAYLOAD_TOO_LARGE"],
    422: [
        "CHANNEL_NOT_SUPPORTED",
        "INVALID_RECIPIENT",
        "TEMPLATE_VARIABLE_MISSING",
        "RECIPIENT_SUPPRESSED",
        "SENDER_REQUIRED",
    ],
    429: ["RATE_LIMITED", "VERIFICATION_RATE_LIMITED", "RECIPIENT_RATE_LIMITED", "QUOTA_EXCEEDED"],
    **_SERVER_ERRORS,
    502: ["PROVIDER_UNAVAILABLE"],
}


def _body(model: str) -> JsonObject:
    return {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": REF.format(model=model)}}},
    }


def verification_paths() -> JsonObject:
    return {
        "/v1/verifications": {
            "post": {
                "summary": "Send a one-time code",
                "description": (
                    "Sends a code by SMS to a Turkish mobile number as an ordinary message "
                    "(informational, not held by quiet hours; its `job_id` is in `sends`). "
                    "A second start for a recipient with a pending verification re-sends it "
                    "with a new code (the previous code stops working), at most 5 sends and "
                    "not within 30 s of the last (429 `VERIFICATION_RATE_LIMITED` with "
                    "`Retry-After`); at most 10 verifications per recipient per hour. "
                    "`bizchat` and `chatbot` are not yet supported (422)."
                ),
                "operationId": "startVerification",
                "parameters": [_REQUEST_ID_PARAMETER],
                "requestBody": _body("StartRequest"),
                "responses": _responses(
                    {"201": _ok("The verification.", "VerificationOut", status_headers={})},
                    _START_ERRORS,
                ),
            }
        },
        "/v1/verifications/{verification_id}": {
            "get": {
                "summary": "Read a verification",
                "operationId": "getVerification",
                "parameters": [_ID, _REQUEST_ID_PARAMETER],
                "responses": _responses(
                    {"200": _ok("The verification.", "VerificationOut", status_headers={})},
                    _READ_ERRORS,
                ),
            }
        },
        "/v1/verifications/{verification_id}/check": {
            "post": {
                "summary": "Check a code",
                "description": (
                    "`approved` once when the code matches; a wrong code leaves it `pending` "
                    "with one check fewer, and the 5th wrong code makes it `failed`. An "
                    "expired, failed or canceled verification answers its status. A check "
                    "of an approved one is 409 `VERIFICATION_ALREADY_APPROVED`."
                ),
                "operationId": "checkVerification",
                "parameters": [_ID, _REQUEST_ID_PARAMETER],
                "requestBody": _body("CheckRequest"),
                "responses": _responses(
                    {"200": _ok("The outcome.", "CheckResponse", status_headers={})},
                    _CHECK_ERRORS,
                ),
            }
        },
        "/v1/verifications/{verification_id}/cancel": {
            "post": {
                "summary": "Cancel a pending verification",
                "description": "Its code stops working. Any other answers as it is.",
                "operationId": "cancelVerification",
                "parameters": [_ID, _REQUEST_ID_PARAMETER],
                "responses": _responses(
                    {"200": _ok("The verification.", "VerificationOut", status_headers={})},
                    _READ_ERRORS,
                ),
            }
        },
    }
