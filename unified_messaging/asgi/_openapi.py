"""The OpenAPI 3.1 document of the REST edge.

Bodies are the core's pydantic models (see ``_schemas``). This module adds what HTTP adds:
every status each operation really answers with and, per error status, the codes it can
carry (D13, D14); the headers (``X-Request-ID``, the RateLimit fields, ``Idempotency-Key``,
``WWW-Authenticate``, ``Retry-After``); the bearer security scheme; and links from every
answer that names a job to that job's status record.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping, Sequence
from typing import Final

from .._access.idempotency import IDEMPOTENCY_KEY_PATTERN
from .._search import MessageSearch
from .._version import __version__
from ..consents.models import ConsentSearch
from ..stats._models import StatsQuery
from ..suppressions._rules import SuppressionSearch, SuppressionTarget
from ._openapi_verifications import VERIFICATION_OPERATIONS
from ._schemas import REF, JsonObject, model_schemas, query_parameters

__all__ = ["openapi_document"]


# --------------------------------------------------------------------------- responses


_RATE_HEADERS: Final[Mapping[str, tuple[str, JsonObject]]] = {
    "RateLimit-Policy": (
        'The key\'s policy: `"default";q=<burst>;w=<seconds to refill>` (IETF draft).',
        {"type": "string"},
    ),
    "RateLimit": (
        'What is left: `"default";r=<remaining>;t=<seconds until full>` (IETF draft).',
        {"type": "string"},
    ),
    "RateLimit-Limit": ("The burst: requests the bucket holds.", {"type": "integer", "minimum": 1}),
    "RateLimit-Remaining": ("Requests left now.", {"type": "integer", "minimum": 0}),
    "RateLimit-Reset": ("Seconds until the bucket is full.", {"type": "integer", "minimum": 0}),
}


def _header(description: str, schema: JsonObject, *, required: bool) -> JsonObject:
    return {"description": description, "required": required, "schema": schema}


def _headers(*, rate: bool | None, extra: Mapping[str, JsonObject] | None = None) -> JsonObject:
    """``rate``: True when the RateLimit fields are always sent, None when only sometimes."""
    headers: JsonObject = {
        "X-Request-ID": _header(
            "The request's id: the client's own when it sent a sane one, else a new one.",
            {"type": "string"},
            required=True,
        )
    }
    if rate is not False:
        for name, (description, schema) in _RATE_HEADERS.items():
            headers[name] = _header(description, schema, required=bool(rate))
    headers.update(extra or {})
    return headers


_REPLAYED: Final = _header(
    "`true` when this is the stored answer to an earlier request with the same Idempotency-Key.",
    {"type": "string", "enum": ["true"]},
    required=False,
)
_CHALLENGE: Final = _header("`Bearer`.", {"type": "string"}, required=True)
_RETRY_AFTER: Final = _header(
    "Seconds to wait before the request can succeed (on RATE_LIMITED).",
    {"type": "integer", "minimum": 1},
    required=False,
)

# Which statuses come before the rate-limit check (no RateLimit fields), and which may.
_BEFORE_RATE: Final = frozenset({401, 403})
_MAYBE_RATE: Final = frozenset({500, 503})

_STATUS_TEXT: Final[Mapping[int, str]] = {
    400: "The request does not match the schema: `details` names every field.",
    401: "The API key is missing, malformed, unknown, revoked or expired.",
    403: "The caller's IP address is not on the workspace's allowlist.",
    404: "Something the request names does not exist for this key.",
    409: "The Idempotency-Key is in use by another request, or by one still running.",
    413: "The body is larger than the limit (1 MiB).",
    422: "The request is well formed but cannot be carried out.",
    429: "Too many requests for this key, or the workspace's monthly quota is used up.",
    500: "An unexpected error; it is logged with the request id.",
    502: "No provider could take the message; the failed job is kept (`job_id`).",
    503: "The message store (or the shared rate limiter) cannot be reached.",
}


def _link(description: str, job_id: str) -> JsonObject:
    """An OpenAPI link from an answer that names a job to the job's status record."""
    return {
        "GetMessage": {
            "operationId": "getMessage",
            "parameters": {"job_id": job_id},
            "description": description,
        }
    }


def _error(status: int, codes: Sequence[str]) -> JsonObject:
    schema: JsonObject = {
        "allOf": [
            {"$ref": REF.format(model="ErrorResponse")},
            {"properties": {"error": {"properties": {"code": {"enum": list(codes)}}}}},
        ]
    }
    if status == 400:
        schema["allOf"][1]["properties"]["error"]["required"] = ["details"]
    if status == 502:
        schema["allOf"][1]["properties"]["error"]["required"] = ["job_id"]
    extra: dict[str, JsonObject] = {}
    if status == 401:
        extra["WWW-Authenticate"] = _CHALLENGE
    if status == 429:
        extra["Retry-After"] = _RETRY_AFTER
    if status == 502:
        extra["Idempotent-Replayed"] = _REPLAYED
    rate = False if status in _BEFORE_RATE else (None if status in _MAYBE_RATE else True)
    response: JsonObject = {
        "description": f"{_STATUS_TEXT[status]} Codes: {', '.join(codes)}.",
        "headers": _headers(rate=rate, extra=extra),
        "content": {"application/json": {"schema": schema}},
    }
    if status == 502:
        response["links"] = _link("Why it failed.", "$response.body#/error/job_id")
    return response


def _ok(
    description: str,
    model: str,
    *,
    status_headers: Mapping[str, JsonObject],
    links: JsonObject | None = None,
) -> JsonObject:
    response: JsonObject = {
        "description": description,
        "headers": _headers(rate=True, extra=status_headers),
        "content": {"application/json": {"schema": {"$ref": REF.format(model=model)}}},
    }
    if links:
        response["links"] = links
    return response


_ACCESS_ERRORS: Final[Mapping[int, Sequence[str]]] = {
    401: ["UNAUTHORIZED"],
    403: ["IP_NOT_ALLOWED"],
}
_SERVER_ERRORS: Final[Mapping[int, Sequence[str]]] = {
    500: ["INTERNAL_ERROR"],
    503: ["STORAGE_UNAVAILABLE"],
}
_POST_ERRORS: Final[Mapping[int, Sequence[str]]] = {
    400: ["VALIDATION_ERROR"],
    **_ACCESS_ERRORS,
    409: ["IDEMPOTENCY_CONFLICT", "IDEMPOTENCY_IN_PROGRESS"],
    413: ["PAYLOAD_TOO_LARGE"],
    429: ["RATE_LIMITED", "QUOTA_EXCEEDED", "RECIPIENT_RATE_LIMITED"],
    **_SERVER_ERRORS,
}
_SEND_ERRORS: Final[Mapping[int, Sequence[str]]] = {
    **_POST_ERRORS,
    404: ["PROVIDER_NOT_CONNECTED", "TEMPLATE_NOT_FOUND"],
    422: [
        "INVALID_RECIPIENT",
        "RECIPIENT_SUPPRESSED",
        "CHAT_UNREACHABLE",
        "SENDER_NOT_APPROVED",
        "SENDER_REQUIRED",
        "FALLBACK_NOT_ALLOWED",
        "ESCALATION_INVALID",
        "TEMPLATE_VARIABLE_MISSING",
        "BODY_TOO_LONG",
        "SEND_AT_OUT_OF_RANGE",
        "COMMERCIAL_CONTENT_REFUSED",
        "INVALID_CREDENTIALS",
    ],
    502: ["PROVIDER_UNAVAILABLE"],
}
# Bulk fails per item for the recipient, the variables and the providers (D8).
_BULK_ERRORS: Final[Mapping[int, Sequence[str]]] = {
    **_POST_ERRORS,
    404: ["PROVIDER_NOT_CONNECTED", "TEMPLATE_NOT_FOUND"],
    422: [
        "SENDER_NOT_APPROVED",
        "SENDER_REQUIRED",
        "FALLBACK_NOT_ALLOWED",
        "SEND_AT_OUT_OF_RANGE",
        "INVALID_CREDENTIALS",
    ],
}
_GET_ERRORS: Final[Mapping[int, Sequence[str]]] = {
    **_ACCESS_ERRORS,
    404: ["MESSAGE_NOT_FOUND"],
    429: ["RATE_LIMITED"],
    **_SERVER_ERRORS,
}
# A message a provider has (or is being handed) cannot be canceled.
_CANCEL_ERRORS: Final[Mapping[int, Sequence[str]]] = {
    **_GET_ERRORS,
    409: ["MESSAGE_NOT_CANCELABLE"],
}
# D29: a bad filter, limit or unknown parameter is 400; a cursor the key cannot read, 404.
_LIST_ERRORS: Final[Mapping[int, Sequence[str]]] = {400: ["VALIDATION_ERROR"], **_GET_ERRORS}


# The suppression list. A bad field is 400, a recipient its channel cannot reach
# 422; a cursor this key cannot read, or a removal of an entry not there, 404.
_SUPPRESSION_LIST_ERRORS: Final[Mapping[int, Sequence[str]]] = {
    400: ["VALIDATION_ERROR"],
    **_ACCESS_ERRORS,
    404: ["NOT_FOUND"],
    422: ["INVALID_RECIPIENT"],
    429: ["RATE_LIMITED"],
    **_SERVER_ERRORS,
}
_SUPPRESSION_ADD_ERRORS: Final[Mapping[int, Sequence[str]]] = {
    400: ["VALIDATION_ERROR"],
    **_ACCESS_ERRORS,
    413: ["PAYLOAD_TOO_LARGE"],
    422: ["INVALID_RECIPIENT"],
    429: ["RATE_LIMITED"],
    **_SERVER_ERRORS,
}

# D33: consents. A bad field is 400; an address that is neither a number nor an e-mail, or a
# consent İYS's rules refuse, 422 (INVALID_RECIPIENT or a CONSENT_* code).
_CONSENT_ADD_ERRORS: Final[Mapping[int, Sequence[str]]] = {
    400: ["VALIDATION_ERROR"],
    **_ACCESS_ERRORS,
    413: ["PAYLOAD_TOO_LARGE"],
    422: [
        "INVALID_RECIPIENT", "CONSENT_FIRST_RET", "CONSENT_UNCHANGED", "CONSENT_DATE_TOO_EARLY",
        "CONSENT_DATE_IN_FUTURE", "CONSENT_DATE_TOO_OLD", "CONSENT_HS_2015_DATE",
        "CONSENT_DATE_NOT_AFTER_CURRENT", "CONSENT_SOURCE_REQUIRED",
    ],
    429: ["RATE_LIMITED"],
    **_SERVER_ERRORS,
}  # fmt: skip
_CONSENT_LIST_ERRORS: Final[Mapping[int, Sequence[str]]] = {
    400: ["VALIDATION_ERROR"],
    **_ACCESS_ERRORS,
    404: ["NOT_FOUND"],
    429: ["RATE_LIMITED"],
    **_SERVER_ERRORS,
}
# A window or time zone not known, or a parameter not known, is 400.
_STATS_ERRORS: Final[Mapping[int, Sequence[str]]] = {
    400: ["VALIDATION_ERROR"],
    **_ACCESS_ERRORS,
    429: ["RATE_LIMITED"],
    **_SERVER_ERRORS,
}
_CONSENT_GET_ERRORS: Final[Mapping[int, Sequence[str]]] = {
    **_ACCESS_ERRORS,
    404: ["CONSENT_NOT_FOUND"],
    429: ["RATE_LIMITED"],
    **_SERVER_ERRORS,
}


def _responses(
    success: Mapping[str, JsonObject], errors: Mapping[int, Sequence[str]]
) -> JsonObject:
    responses: JsonObject = dict(success)
    for status in sorted(errors):
        responses[str(status)] = _error(status, errors[status])
    return responses


_IDEMPOTENCY_PARAMETER: Final = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": (
        "Makes a retry safe: the same key with the same body within 24 hours gets the first "
        "answer again (`Idempotent-Replayed: true`). Scoped to the workspace and API key."
    ),
    "schema": {
        "type": "string",
        "minLength": 1,
        "maxLength": 255,
        "pattern": IDEMPOTENCY_KEY_PATTERN,
    },
}
_JOB_ID_PARAMETER: Final = {
    "name": "job_id",
    "in": "path",
    "required": True,
    "description": "The `job_id` of a send response.",
    "schema": {"type": "string"},
}
_REQUEST_ID_PARAMETER: Final = {
    "name": "X-Request-ID",
    "in": "header",
    "required": False,
    "description": (
        "Your id for this request, echoed in the response when it is 1-128 characters of "
        "`A-Z a-z 0-9 . _ : + = / @ -` (starting with a letter or digit); otherwise a new "
        "id is made."
    ),
    "schema": {"type": "string"},
}


def _post(
    summary: str,
    request: str,
    response: str,
    errors: Mapping[int, Sequence[str]],
    links: JsonObject,
) -> JsonObject:
    return {
        "summary": summary,
        "parameters": [_IDEMPOTENCY_PARAMETER, _REQUEST_ID_PARAMETER],
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": REF.format(model=request)}}},
        },
        "responses": _responses(
            {
                "201": _ok(
                    "Accepted.",
                    response,
                    status_headers={"Idempotent-Replayed": _REPLAYED},
                    links=links,
                )
            },
            errors,
        ),
    }


_DRY_RUN_PARAMETER: Final = {
    "name": "dry_run",
    "in": "query",
    "required": False,
    "description": (
        "`true`: answer 200 with what the send would do (the text as rendered, its SMS "
        "parts with the operator's code, the content hints of a commercial SMS), after the "
        "same checks; nothing is stored or sent. Any other query parameter is a 400."
    ),
    "schema": {"type": "string", "enum": ["true", "false"]},
}


def _with_dry_run(operation: JsonObject) -> JsonObject:
    """``POST /v1/messages`` with its own part: ``dry_run`` and its 200 (D33)."""
    responses = dict(operation["responses"])
    responses["200"] = _ok(
        "With dry_run=true: what the send would do. Nothing was stored or sent.",
        "SendPreview",
        status_headers={},
    )
    return {
        **operation,
        "parameters": [*operation["parameters"], _DRY_RUN_PARAMETER],
        "responses": dict(sorted(responses.items())),
    }


def _public(summary: str, description: str, schema: JsonObject) -> JsonObject:
    return {
        "summary": summary,
        "security": [],
        "parameters": [_REQUEST_ID_PARAMETER],
        "responses": {
            "200": {
                "description": description,
                "headers": _headers(rate=False),
                "content": {"application/json": {"schema": schema}},
            }
        },
    }


def _paths() -> JsonObject:
    return {
        "/v1/messages": {
            "post": _with_dry_run(
                {
                    **_post(
                        "Send one message",
                        "SendRequest",
                        "SendResponse",
                        _SEND_ERRORS,
                        _link("Its delivery status.", "$response.body#/job_id"),
                    ),
                    "operationId": "sendMessage",
                }
            ),
            "get": {
                "summary": "List messages, newest first",
                "description": (
                    "The caller's messages (its workspace and mode), filtered, newest first, "
                    "a page at a time: pass the last `job_id` of a page as `starting_after` "
                    "for the next one while `has_more` is true."
                ),
                "operationId": "listMessages",
                "parameters": [*query_parameters(MessageSearch), _REQUEST_ID_PARAMETER],
                "responses": _responses(
                    {"200": _ok("A page of status records.", "MessagePage", status_headers={})},
                    _LIST_ERRORS,
                ),
            },
        },
        "/v1/messages/bulk": {
            "post": {
                **_post(
                    "Send to 1-200 recipients",
                    "BulkRequest",
                    "BulkResponse",
                    _BULK_ERRORS,
                    _link("The first item's status.", "$response.body#/results/0/job_id"),
                ),
                "operationId": "sendBulk",
            }
        },
        "/v1/messages/{job_id}": {
            "get": {
                "summary": "The status record of one message",
                "operationId": "getMessage",
                "parameters": [_JOB_ID_PARAMETER, _REQUEST_ID_PARAMETER],
                "responses": _responses(
                    {"200": _ok("The status record.", "StatusRecord", status_headers={})},
                    _GET_ERRORS,
                ),
            }
        },
        "/v1/messages/{job_id}/cancel": {
            "post": {
                "summary": "Cancel a message no provider has yet",
                "description": (
                    "A message still `queued` (waiting for its `send_at`, quiet hours, a send "
                    "slot or a retry) ends `failed` with the error code `CANCELED`, and a "
                    "`message.failed` webhook goes out. Canceling it again answers the same "
                    "record. Once a provider has it (or is being handed it): 409 "
                    "`MESSAGE_NOT_CANCELABLE`. No request body."
                ),
                "operationId": "cancelMessage",
                "parameters": [_JOB_ID_PARAMETER, _REQUEST_ID_PARAMETER],
                "responses": _responses(
                    {"200": _ok("The canceled message.", "StatusRecord", status_headers={})},
                    _CANCEL_ERRORS,
                ),
            }
        },
        "/v1/suppressions": {
            "get": {
                "summary": "List the suppression list, newest first",
                "description": (
                    "The caller's suppressed recipients (its workspace and mode), newest "
                    "first, a page at a time (`starting_after` the last `id`). `recipient` "
                    "is normalised as a send's `to`."
                ),
                "operationId": "listSuppressions",
                "parameters": [*query_parameters(SuppressionSearch), _REQUEST_ID_PARAMETER],
                "responses": _responses(
                    {"200": _ok("A page of entries.", "SuppressionPage", status_headers={})},
                    _SUPPRESSION_LIST_ERRORS,
                ),
            },
            "post": {
                "summary": "Suppress a recipient on a channel",
                "description": (
                    "Sends to the recipient on that channel are refused with 422 "
                    "`RECIPIENT_SUPPRESSED` from now on. Idempotent: an entry already there "
                    "is answered as stored."
                ),
                "operationId": "addSuppression",
                "parameters": [_REQUEST_ID_PARAMETER],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {"$ref": REF.format(model="SuppressionCreate")}
                        }
                    },
                },
                "responses": _responses(
                    {"201": _ok("The entry as stored.", "SuppressionOut", status_headers={})},
                    _SUPPRESSION_ADD_ERRORS,
                ),
            },
            "delete": {
                "summary": "Take a recipient off the suppression list",
                "operationId": "removeSuppression",
                "parameters": [*query_parameters(SuppressionTarget), _REQUEST_ID_PARAMETER],
                "responses": _responses(
                    {"200": _ok("The entry removed.", "SuppressionOut", status_headers={})},
                    _SUPPRESSION_LIST_ERRORS,
                ),
            },
        },
        "/v1/consents": {
            "get": {
                "summary": "List İYS consents, newest first",
                "description": (
                    "The caller's consents (its workspace and mode), newest first, a page at "
                    "a time (`starting_after` the last `id`). `recipient` is a number or an "
                    "e-mail, in any form a create takes."
                ),
                "operationId": "listConsents",
                "parameters": [*query_parameters(ConsentSearch), _REQUEST_ID_PARAMETER],
                "responses": _responses(
                    {"200": _ok("A page of consents.", "ConsentPage", status_headers={})},
                    _CONSENT_LIST_ERRORS,
                ),
            },
            "post": {
                "summary": "Record an İYS consent",
                "description": (
                    "Checked against İYS's rules before anything is stored; a second one for "
                    "the same address, type and recipient type changes that record. "
                    "`iys_state` is `pending`: registering with İYS is not built yet."
                ),
                "operationId": "createConsent",
                "parameters": [_REQUEST_ID_PARAMETER],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": REF.format(model="ConsentCreate")}}
                    },
                },
                "responses": _responses(
                    {"201": _ok("The consent as recorded.", "ConsentOut", status_headers={})},
                    _CONSENT_ADD_ERRORS,
                ),
            },
        },
        "/v1/consents/{consent_id}": {
            "get": {
                "summary": "Read a consent and its history",
                "operationId": "getConsent",
                "parameters": [
                    {
                        "name": "consent_id",
                        "in": "path",
                        "required": True,
                        "description": "The `id` of a consent (`cns_…`).",
                        "schema": {"type": "string"},
                    },
                    _REQUEST_ID_PARAMETER,
                ],
                "responses": _responses(
                    {
                        "200": _ok(
                            "The consent and its history.", "ConsentDetail", status_headers={}
                        )
                    },
                    _CONSENT_GET_ERRORS,
                ),
            }
        },
        **_verification_paths(),
        "/v1/stats": {
            "get": {
                "summary": "Delivery figures over the last 24 hours, 7 or 30 days",
                "description": (
                    "The caller's workspace and mode (test or live, by the key): messages per "
                    "hour (`24h`) or per calendar day in `time_zone` (`7d`, `30d`) by their "
                    "status now, each provider's delivery rate and delivery times (p50, p95 "
                    "and a histogram), the fallback rate and the verification conversion. "
                    "Messages count under the hour they were created. Times are UTC."
                ),
                "operationId": "getStats",
                "parameters": [*query_parameters(StatsQuery), _REQUEST_ID_PARAMETER],
                "responses": _responses(
                    {"200": _ok("The figures.", "StatsOverview", status_headers={})},
                    _STATS_ERRORS,
                ),
            }
        },
        "/v1/health": {
            "get": {
                **_public(
                    "Is the process up",
                    "Always `ok` while it is.",
                    {"$ref": REF.format(model="Health")},
                ),
                "operationId": "health",
            }
        },
        "/v1/openapi.json": {
            "get": {
                **_public("This document", "OpenAPI 3.1.", {"type": "object"}),
                "operationId": "openapi",
            }
        },
    }


_VERIFICATION_ID: Final = {
    "name": "verification_id",
    "in": "path",
    "required": True,
    "description": "The verification's id (`ver_…`).",
    "schema": {"type": "string"},
}


def _verification_paths() -> JsonObject:
    """``/v1/verifications…`` (D34), built from ``_openapi_verifications``' data."""
    paths: JsonObject = {}
    for op in VERIFICATION_OPERATIONS:
        status, description, model = op.success
        errors = {**_ACCESS_ERRORS, **_SERVER_ERRORS, **op.errors}
        errors[429] = ["RATE_LIMITED", *op.errors.get(429, ())]
        operation: JsonObject = {
            "summary": op.summary,
            "description": op.description,
            "operationId": op.operation_id,
            "parameters": [
                *([_VERIFICATION_ID] if "{verification_id}" in op.path else []),
                *op.parameters,
                _REQUEST_ID_PARAMETER,
            ],
            "responses": _responses({status: _ok(description, model, status_headers={})}, errors),
        }
        if op.request is not None:
            operation["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": REF.format(model=op.request)}}},
            }
        paths.setdefault(op.path, {})[op.method] = operation
    return paths


@functools.cache
def _document() -> JsonObject:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Unified Messaging API",
            "version": __version__,
            "description": (
                "SMS over five Turkish providers, a chat-bot channel and a business chat "
                'channel, behind one REST interface. Errors: `{"error": {"code", '
                '"message", "details"?}}`; every response has `X-Request-ID`.'
            ),
        },
        "security": [{"bearerAuth": []}],
        "paths": _paths(),
        "components": {
            "schemas": model_schemas(),
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "An API key: `um_live_…` (live) or `um_test_…` (test mode).",
                }
            },
        },
    }


def openapi_document(root_path: str = "") -> JsonObject:
    """A copy of the document; mounted under a prefix, it names the prefix as its server."""
    document = copy.deepcopy(_document())
    if root_path:
        document["servers"] = [{"url": root_path}]
    return document
