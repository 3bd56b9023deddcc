"""Records to table rows and back, for the SQL store.

Each record has a ``*_row`` function (the column values to write) and a ``*_from`` function
(the record a result row holds). The only shapes decided here are the JSON documents:
attempts, the delivery report and the work payload, with datetimes as ISO 8601 in UTC.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.engine import RowMapping

from .._access.flood_guard import RecipientLimit
from .._domain import (
    ApiKey,
    Attempt,
    Connection,
    DeliveryReport,
    ErrorInfo,
    MessageRecord,
    Template,
    Workspace,
)
from .._policies import ContentRules
from .._routing.breaker_policy import DEFAULT_BREAKER_POLICY, BreakerPolicy
from .._schedule import QuietHours
from .base import IdempotencyRecord, ProviderRef, WebhookDelivery, WebhookEndpoint, WorkItem

__all__ = [
    "api_key_from",
    "api_key_row",
    "connection_from",
    "connection_row",
    "delivery_from",
    "delivery_row",
    "endpoint_from",
    "endpoint_row",
    "idempotency_from",
    "idempotency_row",
    "message_from",
    "message_row",
    "provider_ref_from",
    "provider_ref_row",
    "template_from",
    "template_row",
    "work_from",
    "work_row",
    "workspace_from",
    "workspace_row",
]

#: A result row by column name (SQLAlchemy's, or a Hot statement's dict); values untyped.
RowMap = RowMapping | Mapping[str, Any]
Values = dict[str, object]


def _ms(delta: timedelta) -> int:
    return round(delta.total_seconds() * 1000)


def _delta(ms: int) -> timedelta:
    return timedelta(milliseconds=ms)


def _iso(moment: datetime) -> str:
    if moment.utcoffset() is None:
        raise ValueError("the store keeps timezone-aware datetimes only")
    return moment.astimezone(UTC).isoformat()


def _from_iso(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


# -- workspaces and keys


def workspace_row(workspace: Workspace) -> Values:
    return {
        "id": workspace.id,
        "name": workspace.name,
        "created_at": workspace.created_at,
        "monthly_quota": workspace.monthly_quota,
        "retry_unavailable": workspace.retry_unavailable,
        "queue_ttl_ms": _ms(workspace.queue_ttl),
        **_recipient_limit_row(workspace.recipient_limit),
        "quiet_hours": None if workspace.quiet_hours is None else workspace.quiet_hours.to_json(),
        "consent_policy": workspace.consent_policy,
        "content_rules": workspace.content_rules.to_json(),
        "mask_live_text": workspace.mask_live_text,
    }


def workspace_from(row: RowMap) -> Workspace:
    return Workspace(
        id=row["id"],
        name=row["name"],
        created_at=row["created_at"],
        monthly_quota=row["monthly_quota"],
        retry_unavailable=row["retry_unavailable"],
        queue_ttl=_delta(row["queue_ttl_ms"]),
        recipient_limit=_recipient_limit_from(row),
        quiet_hours=_quiet_hours_from(row["quiet_hours"]),
        consent_policy=row["consent_policy"],
        content_rules=ContentRules.from_json(row["content_rules"]),
        mask_live_text=row["mask_live_text"],
    )


def _quiet_hours_from(document: Any) -> QuietHours | None:
    return None if document is None else QuietHours.from_json(document)


def _recipient_limit_row(limit: RecipientLimit | None) -> Values:
    if limit is None:
        return {"recipient_limit": None, "recipient_window_ms": None}
    return {"recipient_limit": limit.limit, "recipient_window_ms": _ms(limit.window)}


def _recipient_limit_from(row: RowMap) -> RecipientLimit | None:
    if row["recipient_limit"] is None or row["recipient_window_ms"] is None:
        return None
    return RecipientLimit(row["recipient_limit"], _delta(row["recipient_window_ms"]))


_API_KEY_COLS = (
    "id",
    "workspace_id",
    "livemode",
    "key_hash",
    "display_prefix",
    "created_at",
    "name",
    "expires_at",
    "revoked_at",
    "rate_limit",
    "rate_burst",
)


def api_key_row(key: ApiKey) -> Values:
    return {name: getattr(key, name) for name in _API_KEY_COLS}


def api_key_from(row: RowMap) -> ApiKey:
    return ApiKey(**{name: row[name] for name in _API_KEY_COLS})


# -- connections and templates


def connection_row(connection: Connection) -> Values:
    return {
        "id": connection.id,
        "workspace_id": connection.workspace_id,
        "provider": connection.provider,
        "created_at": connection.created_at,
        "credentials": connection.credentials,
        "default_sender": connection.default_sender,
        "approved_senders": list(connection.approved_senders),
        "iys_mode": connection.iys_mode,
        "is_default": connection.is_default,
        "dlr_timeout_ms": _ms(connection.dlr_timeout),
        "turkish_shift": connection.turkish_shift,
        "base_url": connection.base_url,
        "dlr_token": connection.dlr_token,
        "breaker_policy": (
            None if connection.breaker == DEFAULT_BREAKER_POLICY else connection.breaker.to_json()
        ),
        "max_rate": connection.max_rate,
        "max_calls": connection.max_calls,
    }


def connection_from(row: RowMap) -> Connection:
    return Connection(
        id=row["id"],
        workspace_id=row["workspace_id"],
        provider=row["provider"],
        created_at=row["created_at"],
        credentials=row["credentials"],
        default_sender=row["default_sender"],
        approved_senders=tuple(row["approved_senders"]),
        iys_mode=row["iys_mode"],
        is_default=row["is_default"],
        dlr_timeout=_delta(row["dlr_timeout_ms"]),
        turkish_shift=row["turkish_shift"],
        base_url=row["base_url"],
        dlr_token=row["dlr_token"],
        breaker=_breaker_policy(row["breaker_policy"]),
        max_rate=row["max_rate"],
        max_calls=row["max_calls"],
    )


def _breaker_policy(value: object) -> BreakerPolicy:
    if not isinstance(value, dict):
        return DEFAULT_BREAKER_POLICY
    return BreakerPolicy.from_json(value)


_TEMPLATE_COLS = (
    "workspace_id",
    "key",
    "body",
    "created_at",
    "updated_at",
    "description",
    "provider_template",
    "provider_language",
)


def template_row(template: Template) -> Values:
    return {name: getattr(template, name) for name in _TEMPLATE_COLS}


def template_from(row: RowMap) -> Template:
    return Template(**{name: row[name] for name in _TEMPLATE_COLS})


# -- messages


def _error_doc(error: ErrorInfo | None) -> dict[str, str] | None:
    return None if error is None else {"code": error.code, "message": error.message}


def _error_of(doc: Mapping[str, str] | None) -> ErrorInfo | None:
    return None if doc is None else ErrorInfo(code=doc["code"], message=doc["message"])


def _attempt_doc(attempt: Attempt) -> dict[str, object]:
    return {
        "provider": attempt.provider,
        "status": attempt.status,
        "at": _iso(attempt.at),
        "provider_message_id": attempt.provider_message_id,
        "error": _error_doc(attempt.error),
    }


def _attempt_of(doc: Mapping[str, Any]) -> Attempt:
    return Attempt(
        provider=doc["provider"],
        status=doc["status"],
        at=_from_iso(doc["at"]),
        provider_message_id=doc["provider_message_id"],
        error=_error_of(doc["error"]),
    )


def _dlr_doc(dlr: DeliveryReport | None) -> dict[str, object] | None:
    if dlr is None:
        return None
    return {
        "status": dlr.status,
        "received_at": _iso(dlr.received_at),
        "provider_status": dlr.provider_status,
        "error": _error_doc(dlr.error),
    }


def _dlr_of(doc: Mapping[str, Any] | None) -> DeliveryReport | None:
    if doc is None:
        return None
    return DeliveryReport(
        status=doc["status"],
        received_at=_from_iso(doc["received_at"]),
        provider_status=doc["provider_status"],
        error=_error_of(doc["error"]),
    )


def message_row(message: MessageRecord) -> Values:
    error = message.error
    return {
        "job_id": message.job_id,
        "workspace_id": message.workspace_id,
        "livemode": message.livemode,
        "status": message.status,
        "to": message.to,
        "channel": message.channel,
        "provider": message.provider,
        "text": message.text,
        "sender": message.sender,
        "template_key": message.template_key,
        "created_at": message.created_at,
        "updated_at": message.updated_at,
        "sent_at": message.sent_at,
        "final_at": message.final_at,
        "error_code": None if error is None else error.code,
        "error_message": None if error is None else error.message,
        "attempts": [_attempt_doc(a) for a in message.attempts],
        "dlr": _dlr_doc(message.dlr),
        "segments": message.segments,
        "encoding": message.encoding,
        "fallback_left": list(message.fallback_left),
        "fallback_requested": message.fallback_requested,
        "template_params": list(message.template_params),
        "version": message.version,
        "requested_sender": message.requested_sender,
        "template_name": message.template_name,
        "template_language": message.template_language,
        "phase": message.phase,
        "send_at": message.send_at,
        "ignore_quiet_hours": message.ignore_quiet_hours,
        "held_until": message.held_until,
        "iys_mode": message.iys_mode,
        "masked_text": message.masked_text,
        "api_key_id": message.api_key_id,
        "api_key_name": message.api_key_name,
        "escalate_after_ms": (
            None if message.escalate_after is None else round(message.escalate_after * 1000)
        ),
    }


def message_from(row: RowMap) -> MessageRecord:
    code = row["error_code"]
    return MessageRecord(
        job_id=row["job_id"],
        workspace_id=row["workspace_id"],
        livemode=row["livemode"],
        status=row["status"],
        to=row["to"],
        channel=row["channel"],
        provider=row["provider"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        text=row["text"],
        sender=row["sender"],
        template_key=row["template_key"],
        sent_at=row["sent_at"],
        final_at=row["final_at"],
        error=None if code is None else ErrorInfo(code=code, message=row["error_message"]),
        attempts=tuple(_attempt_of(doc) for doc in row["attempts"]),
        dlr=_dlr_of(row["dlr"]),
        segments=row["segments"],
        encoding=row["encoding"],
        fallback_left=tuple(row["fallback_left"]),
        fallback_requested=row["fallback_requested"],
        template_params=tuple(row["template_params"]),
        version=row["version"],
        requested_sender=row["requested_sender"],
        template_name=row["template_name"],
        template_language=row["template_language"],
        phase=row["phase"],
        send_at=row["send_at"],
        ignore_quiet_hours=row["ignore_quiet_hours"],
        held_until=row["held_until"],
        iys_mode=row["iys_mode"],
        masked_text=row["masked_text"],
        api_key_id=row["api_key_id"],
        api_key_name=row["api_key_name"],
        escalate_after=None
        if row["escalate_after_ms"] is None
        else row["escalate_after_ms"] / 1000,
    )


# -- provider message ids

_REF_COLS = (
    "connection_id", "provider_message_id", "job_id", "workspace_id", "livemode", "open",
    "poll_after",
)  # fmt: skip


def provider_ref_row(ref: ProviderRef) -> Values:
    return {name: getattr(ref, name) for name in _REF_COLS}


def provider_ref_from(row: RowMap) -> ProviderRef:
    return ProviderRef(**{name: row[name] for name in _REF_COLS})


# -- due work and idempotency


def work_row(item: WorkItem) -> Values:
    return {
        "id": item.id,
        "kind": item.kind,
        "ref": item.ref,
        "payload": dict(item.payload),
        "due_at": item.due_at,
        "claimed_by": item.claimed_by,
        "lease_until": item.lease_until,
        "attempts": item.attempts,
        "created_at": item.created_at,
    }


def work_from(row: RowMap) -> WorkItem:
    return WorkItem(
        id=row["id"],
        kind=row["kind"],
        ref=row["ref"],
        payload=row["payload"],
        due_at=row["due_at"],
        claimed_by=row["claimed_by"],
        lease_until=row["lease_until"],
        attempts=row["attempts"],
        created_at=row["created_at"],
    )


_IDEMPOTENCY_COLS = (
    "workspace_id",
    "key_id",
    "idem_key",
    "request_hash",
    "created_at",
    "status_code",
    "response_body",
)


def idempotency_row(record: IdempotencyRecord) -> Values:
    values: Values = {name: getattr(record, name) for name in _IDEMPOTENCY_COLS}
    values["owner"] = record.owner
    values["job_ids"] = list(record.job_ids) if record.job_ids else None
    return values


def idempotency_from(row: RowMap) -> IdempotencyRecord:
    body = row["response_body"]
    values = {name: row[name] for name in _IDEMPOTENCY_COLS}
    # Drivers hand back memoryview or bytearray for binary columns; the record holds bytes.
    values["response_body"] = None if body is None else bytes(body)
    return IdempotencyRecord(**values, owner=row["owner"], job_ids=tuple(row["job_ids"] or ()))


# -- webhooks


_ENDPOINT_COLS = (
    "id",
    "workspace_id",
    "url",
    "secret_ciphertext",
    "created_at",
    "enabled",
    "disabled_at",
    "failing_since",
    "previous_secret_ciphertext",
    "previous_secret_expires_at",
)


def endpoint_row(endpoint: WebhookEndpoint) -> Values:
    values: Values = {name: getattr(endpoint, name) for name in _ENDPOINT_COLS}
    values["events"] = list(endpoint.events)
    return values


def endpoint_from(row: RowMap) -> WebhookEndpoint:
    values = {name: row[name] for name in _ENDPOINT_COLS}
    return WebhookEndpoint(events=tuple(row["events"]), **values)


_DELIVERY_COLS = (
    "id",
    "endpoint_id",
    "event_id",
    "event_type",
    "status",
    "created_at",
    "updated_at",
    "attempts",
    "next_attempt_at",
    "last_status_code",
    "last_error",
    "last_answer",
)


def delivery_row(delivery: WebhookDelivery) -> Values:
    values: Values = {name: getattr(delivery, name) for name in _DELIVERY_COLS}
    values["payload"] = delivery.payload
    return values


def delivery_from(row: RowMap) -> WebhookDelivery:
    values = {name: row[name] for name in _DELIVERY_COLS}
    return WebhookDelivery(payload=bytes(row["payload"]), **values)
