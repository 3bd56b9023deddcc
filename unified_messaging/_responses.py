"""Records to contract bodies: the one place that decides how a stored message is shown."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic_core import to_json

from ._domain import Attempt, ErrorInfo, MessageRecord
from ._errors import SubmitInterrupted
from ._message_class import class_of
from ._models import (
    ApiKeyRef,
    AttemptOut,
    BulkResponse,
    BulkResult,
    DlrOut,
    ErrorObject,
    SendResponse,
    StatusRecord,
)
from ._types import Category, ProviderCode, RecipientType, SubmitStatus

__all__ = [
    "TEXT_MASK",
    "bulk_result",
    "send_response",
    "shown_text",
    "status_record",
    "status_record_json",
    "submit_status",
]


#: What a masked text reads as: a live one-time code's code (D34), or a live message's whole
#: text where its workspace masks live text (``Workspace.mask_live_text``).
TEXT_MASK = "******"


def _error(error: ErrorInfo | None) -> ErrorObject | None:
    return None if error is None else ErrorObject(code=error.code, message=error.message)


def _attempt(attempt: Attempt) -> AttemptOut:
    return AttemptOut(
        provider=attempt.provider,
        status=attempt.status,
        provider_message_id=attempt.provider_message_id,
        error=_error(attempt.error),
        at=attempt.at,
    )


def submit_status(record: MessageRecord) -> SubmitStatus:
    """The status at acceptance (SPEC 3): a record already final by then reads ``sent``,
    except one whose hand-over was cut off (``SUBMIT_INTERRUPTED``): nothing proves a
    provider got it, so it reads ``unknown`` (a replayed send, ``campaign`` re-runs)."""
    if record.status in ("queued", "failed"):
        return record.status
    if record.status == "unknown" and _interrupted(record):
        return "unknown"
    return "sent"


def _interrupted(record: MessageRecord) -> bool:
    return record.error is not None and record.error.code == SubmitInterrupted.code


def _answer_error(record: MessageRecord) -> ErrorObject | None:
    """The ``error`` of a send answer: a ``failed`` one's, or why one is ``unknown``."""
    return _error(record.error) if submit_status(record) in ("failed", "unknown") else None


def send_response(record: MessageRecord) -> SendResponse:
    attempts = [_attempt(a) for a in record.attempts] if record.fallback_requested else None
    return SendResponse(
        job_id=record.job_id,
        status=submit_status(record),
        to=record.to,
        provider=record.provider,
        created_at=record.created_at,
        error=_answer_error(record),
        template=record.template_key,
        template_key=record.template_key,
        attempts=attempts,
        segments=record.segments,
        encoding=record.encoding,
        send_at=record.send_at,
    )


def bulk_result(record: MessageRecord) -> BulkResult:
    return BulkResult(
        to=record.to,
        status=submit_status(record),
        job_id=record.job_id,
        error=_answer_error(record),
        provider=record.provider,
        attempts=[_attempt(a) for a in record.attempts] if record.fallback_requested else None,
        send_at=record.send_at,
    )


def status_record(record: MessageRecord, *, mask_live_text: bool = False) -> StatusRecord:
    """``record`` as ``GET /v1/messages/{job_id}`` shows it (D11). ``mask_live_text``: its
    workspace masks live text (:func:`shown_text`)."""
    dlr = record.dlr
    return StatusRecord(
        job_id=record.job_id,
        status=record.status,
        to=record.to,
        channel=record.channel,
        provider=record.provider,
        sender=record.sender,
        template=record.template_key,
        template_key=record.template_key,
        created_at=record.created_at,
        updated_at=record.updated_at,
        sent_at=record.sent_at,
        final_at=record.final_at,
        error=_error(record.error),
        attempts=[_attempt(a) for a in record.attempts],
        dlr=None
        if dlr is None
        else DlrOut(
            status=dlr.status,
            provider_status=dlr.provider_status,
            error=_error(dlr.error),
            received_at=dlr.received_at,
        ),
        segments=record.segments,
        encoding=record.encoding,
        livemode=record.livemode,
        send_at=record.send_at,
        category=_class(record)[0],
        recipient_type=_class(record)[1],
        body=shown_text(record, mask_live_text=mask_live_text),
        api_key=None
        if record.api_key_id is None
        else ApiKeyRef(id=record.api_key_id, name=record.api_key_name),
    )


def status_record_json(record: MessageRecord, *, mask_live_text: bool = False) -> bytes:
    """``status_record(record).to_json()``, the same bytes, without building the models.

    ``GET /v1/messages/{job_id}`` answers this on every poll: validating a
    :class:`StatusRecord` and its nested models only to serialise them again cost more CPU
    than the JSON itself. The keys are :class:`StatusRecord`'s fields in its order, every
    one present (its ``_omit_none`` is off, and so nested ``null`` stays too), and
    pydantic-core writes the values as the model's serializer does (UTF-8, ``Z`` for UTC).
    ``tests/test_status_record_json.py`` pins the two byte for byte.
    """
    dlr = record.dlr
    category, recipient_type = _class(record)
    return to_json(
        {
            "job_id": record.job_id,
            "status": record.status,
            "to": record.to,
            "channel": record.channel,
            "provider": record.provider,
            "sender": record.sender,
            "template": record.template_key,
            "template_key": record.template_key,
            "created_at": record.created_at,
            "updated_at": record.updated_at,
            "sent_at": record.sent_at,
            "final_at": record.final_at,
            "error": _error_dict(record.error),
            "attempts": [_attempt_dict(attempt) for attempt in record.attempts],
            "dlr": None
            if dlr is None
            else {
                "status": dlr.status,
                "provider_status": dlr.provider_status,
                "error": _error_dict(dlr.error),
                "received_at": dlr.received_at,
            },
            "segments": record.segments,
            "encoding": record.encoding,
            "livemode": record.livemode,
            "send_at": record.send_at,
            "category": category,
            "recipient_type": recipient_type,
            "body": shown_text(record, mask_live_text=mask_live_text),
            "api_key": None
            if record.api_key_id is None
            else {"id": record.api_key_id, "name": record.api_key_name},
        }
    )


def shown_text(record: MessageRecord, *, mask_live_text: bool = False) -> str:
    """A message's text wherever it is shown (status record, list, webhooks, dashboard): as
    sent, except in live mode, where a one-time code's code is masked (D34) and, when its
    workspace masks live text (personal data, KVKK), the whole text is (``******``). Decided
    when shown, not when sent: turning the setting on hides the texts sent before too."""
    if not record.livemode:
        return record.text
    if mask_live_text:
        return TEXT_MASK
    if record.masked_text is not None:
        return record.masked_text
    return record.text


def _class(record: MessageRecord) -> tuple[Category | None, RecipientType | None]:
    """The status record's ``category`` and ``recipient_type`` (D33); none for a message
    stored before a message had its own class."""
    return (None, None) if record.iys_mode is None else class_of(record.iys_mode)


def _error_dict(error: ErrorInfo | None) -> dict[str, str] | None:
    return None if error is None else {"code": error.code, "message": error.message}


def _attempt_dict(attempt: Attempt) -> dict[str, object]:
    return {
        "provider": attempt.provider,
        "status": attempt.status,
        "provider_message_id": attempt.provider_message_id,
        "error": _error_dict(attempt.error),
        "at": attempt.at,
    }


def bulk_response(records: Sequence[MessageRecord], provider: ProviderCode) -> BulkResponse:
    # ``sent`` counts the items handed over or queued (D8); an ``unknown`` item (a replay of
    # a cut-off hand-over) is neither sent nor failed, as its result says.
    statuses = [submit_status(r) for r in records]
    template_key = records[0].template_key
    return BulkResponse(
        total=len(records),
        sent=sum(1 for status in statuses if status in ("sent", "queued")),
        failed=statuses.count("failed"),
        provider=provider,
        created_at=records[0].created_at,
        results=[bulk_result(r) for r in records],
        template=template_key,
        template_key=template_key,
    )
