"""The OpenAPI operations of ``/v1/verifications`` (D34), as data: ``_openapi`` builds them
into the document with its own helpers (every operation gets the access, rate-limit and
server errors there), so this module imports nothing of it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["VERIFICATION_OPERATIONS", "VerificationOperation"]


@dataclass(frozen=True, slots=True)
class VerificationOperation:
    path: str
    operation_id: str
    summary: str
    description: str
    #: The request body's model, or ``None`` for none.
    request: str | None
    #: ``(status, description, model)`` of the success answer.
    success: tuple[str, str, str]
    #: The operation's own error codes, by status (401/403/429/500/503 are added).
    errors: Mapping[int, Sequence[str]]
    method: str = "post"
    #: Query parameters (OpenAPI parameter objects).
    parameters: Sequence[Mapping[str, Any]] = ()


_READ_ERRORS: Final[Mapping[int, Sequence[str]]] = {404: ["VERIFICATION_NOT_FOUND"]}

VERIFICATION_OPERATIONS: Final = (
    VerificationOperation(
        path="/v1/verifications",
        operation_id="startVerification",
        summary="Send a one-time code",
        description=(
            "Sends a code by SMS to a Turkish mobile number as an ordinary message "
            "(informational, not held by quiet hours; its `job_id` is in `sends`). A second "
            "start for a recipient with a pending verification re-sends it with a new code "
            "(the previous code stops working), at most 5 sends and not within 30 s of the "
            "last (429 `VERIFICATION_RATE_LIMITED` with `Retry-After`); at most 10 "
            "verifications per recipient per hour. `channel` `bizchat` sends the code as the "
            "workspace's WhatsApp authentication template (422 `CHANNEL_NOT_SUPPORTED` "
            "while none is set), `chatbot` by Telegram to a chat id; `channels` is an "
            'escalation order (e.g. `["bizchat", "sms"]`): the same code goes by the next '
            "channel when one fails or is not `delivered` within the workspace's "
            "`escalate_after` (422 `ESCALATION_INVALID` for an unknown or repeated channel). "
            "The SMS-pumping guard refuses a run of "
            "starts to numbers of one range, or for one `client_ip`, before any provider is "
            "paid (429 `VERIFICATION_FRAUD_SUSPECTED` with `Retry-After`)."
        ),
        request="StartRequest",
        success=("201", "The verification.", "VerificationOut"),
        errors={
            400: ["VALIDATION_ERROR"],
            404: ["PROVIDER_NOT_CONNECTED", "TEMPLATE_NOT_FOUND"],
            413: ["PAYLOAD_TOO_LARGE"],
            422: [
                "CHANNEL_NOT_SUPPORTED",
                "ESCALATION_INVALID",
                "INVALID_RECIPIENT",
                "TEMPLATE_VARIABLE_MISSING",
                "RECIPIENT_SUPPRESSED",
                "SENDER_REQUIRED",
            ],
            429: [
                "VERIFICATION_RATE_LIMITED",
                "VERIFICATION_FRAUD_SUSPECTED",
                "RECIPIENT_RATE_LIMITED",
                "QUOTA_EXCEEDED",
            ],
            502: ["PROVIDER_UNAVAILABLE"],
        },
    ),
    VerificationOperation(
        path="/v1/verifications/stats",
        operation_id="getVerificationStats",
        summary="Conversion per hour",
        description=(
            "Of the verifications started in each of the last `hours` hours (UTC, this one "
            "included), by channel: how many started, how many are approved by now, and "
            "their ratio. A falling conversion is the sign of SMS pumping. Hours without a "
            "start are left out."
        ),
        request=None,
        success=("200", "Conversion per hour and channel.", "VerificationStats"),
        errors={400: ["VALIDATION_ERROR"]},
        method="get",
        parameters=(
            {
                "name": "hours",
                "in": "query",
                "required": False,
                "description": "How many hours back, this one included (1-168; default 24).",
                "schema": {"type": "integer", "minimum": 1, "maximum": 168, "default": 24},
            },
        ),
    ),
    VerificationOperation(
        path="/v1/verifications/{verification_id}",
        operation_id="getVerification",
        summary="Read a verification",
        description="Its status, expiry, checks left and code messages.",
        request=None,
        success=("200", "The verification.", "VerificationOut"),
        errors=_READ_ERRORS,
        method="get",
    ),
    VerificationOperation(
        path="/v1/verifications/{verification_id}/check",
        operation_id="checkVerification",
        summary="Check a code",
        description=(
            "`approved` once when the code matches; a wrong code leaves it `pending` with one "
            "check fewer, and the 5th wrong code makes it `failed`. An expired, failed or "
            "canceled verification answers its status. A check of an approved one is 409 "
            "`VERIFICATION_ALREADY_APPROVED`."
        ),
        request="CheckRequest",
        success=("200", "The outcome.", "CheckResponse"),
        errors={
            **_READ_ERRORS,
            400: ["VALIDATION_ERROR"],
            409: ["VERIFICATION_ALREADY_APPROVED"],
            413: ["PAYLOAD_TOO_LARGE"],
        },
    ),
    VerificationOperation(
        path="/v1/verifications/{verification_id}/cancel",
        operation_id="cancelVerification",
        summary="Cancel a pending verification",
        description="Its code stops working. Any other verification answers as it is.",
        request=None,
        success=("200", "The verification.", "VerificationOut"),
        errors=_READ_ERRORS,
    ),
)
