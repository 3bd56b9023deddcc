"""``messenger.reports``: a provider's delivery report pushed to the report URL (``ingest``)
and WhatsApp's subscription handshake (``challenge``); a wrong token is not found."""

from __future__ import annotations

import pytest

from unified_messaging import Messenger, ResourceNotFound
from unified_messaging.providers.base import InboundCallback
from unified_messaging.testing import TestBed

VERIFY_TOKEN = "verify-me-4b1d"
BIZCHAT = {
    "access_token": "EAAG" + "x" * 40,
    "phone_number_id": "106540352242922",
    "app_secret": "a" * 32,
    "verify_token": VERIFY_TOKEN,
}


def _push(message_id: str, status: str) -> InboundCallback:
    body = f'{{"provider_message_id": "{message_id}", "status": "{status}"}}'.encode()
    return InboundCallback("POST", {"content-type": "application/json"}, {}, body)


async def test_a_pushed_report_moves_the_message_once(bed: TestBed) -> None:
    sent = await bed.messenger.send(bed.principal, {"to": "+905321234567", "body": "x"})
    record = await bed.messenger.get_message(bed.principal, sent.job_id)
    [attempt] = record.attempts
    connection = next(
        c for c in await bed.messenger.connections.list(bed.workspace.id)
        if c.provider == attempt.provider
    )  # fmt: skip
    push = _push(str(attempt.provider_message_id), "delivered")

    first = await bed.messenger.reports.ingest(connection.id, connection.dlr_token, push)
    again = await bed.messenger.reports.ingest(connection.id, connection.dlr_token, push)

    assert (first.received, first.matched, first.changed) == (1, 1, 1)
    assert (again.matched, again.changed) == (1, 0)
    assert (await bed.messenger.get_message(bed.principal, sent.job_id)).status == "delivered"
    with pytest.raises(ResourceNotFound) as wrong:
        await bed.messenger.reports.ingest(connection.id, "not-the-token", push)
    assert (wrong.value.code, wrong.value.http_status) == ("NOT_FOUND", 404)


async def test_the_whatsapp_handshake_answers_its_challenge_for_the_right_verify_token() -> None:
    # Meta's verification request: hub.mode=subscribe, hub.verify_token, hub.challenge
    # (developers.facebook.com/docs/graph-api/webhooks/getting-started).
    messenger = Messenger()
    ws = (await messenger.workspaces.create("acme")).id
    whatsapp = await messenger.connections.add(ws, "bizchat", credentials=BIZCHAT)
    sms = await messenger.connections.add(ws, "sms_a")
    query = {"hub.mode": "subscribe", "hub.verify_token": VERIFY_TOKEN, "hub.challenge": "1158"}

    answer = await messenger.reports.challenge(whatsapp.id, whatsapp.dlr_token, query)

    assert answer == "1158"
    wrong = {**query, "hub.verify_token": "guess"}
    assert await messenger.reports.challenge(whatsapp.id, whatsapp.dlr_token, wrong) is None
    assert await messenger.reports.challenge(sms.id, sms.dlr_token, query) is None  # none
    with pytest.raises(ResourceNotFound):
        await messenger.reports.challenge(whatsapp.id, sms.dlr_token, query)
