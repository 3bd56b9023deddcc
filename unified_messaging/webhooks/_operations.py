"""What :class:`~._service.Webhooks` reads webhook deliveries and test events with: the job a
delivery's event is about, and the made-up message a test event carries."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Final

from .._domain import Attempt, DeliveryReport, MessageRecord
from .._lifecycle.rules import EventType

__all__ = ["TEST_EVENT_TYPE", "job_of", "sample_message"]

#: The event a test sends: a made-up message (test mode, ``msg_test…``) that was delivered.
TEST_EVENT_TYPE: Final[EventType] = "message.delivered"


def job_of(payload: bytes) -> str | None:
    try:
        event = json.loads(payload)
    except ValueError:
        return None
    data = event.get("data") if isinstance(event, dict) else None
    job_id = data.get("job_id") if isinstance(data, dict) else None
    return job_id if isinstance(job_id, str) else None


def sample_message(workspace_id: str, now: datetime) -> MessageRecord:
    return MessageRecord(
        job_id="msg_test_webhook",
        workspace_id=workspace_id,
        livemode=False,
        status="delivered",
        to="+905550000000",
        channel="sms",
        provider="sms_a",
        created_at=now,
        updated_at=now,
        text="A test event from the unified-messaging dashboard.",
        sender="TEST",
        sent_at=now,
        final_at=now,
        attempts=(Attempt("sms_a", "delivered", now, provider_message_id="test"),),
        dlr=DeliveryReport(status="delivered", received_at=now, provider_status="DELIVERED"),
        segments=1,
        encoding="gsm7",
    )
