"""``messenger.test_helpers.inbound``: a simulated reply takes a real one's path (a stop word
suppresses the sender in test mode); a live key is refused."""

from __future__ import annotations

import pytest

from unified_messaging import RequestInvalid, ResourceNotFound
from unified_messaging._errors import RecipientSuppressed  # not typed by the lazy export
from unified_messaging.testing import TestBed


async def test_a_stop_reply_suppresses_the_sender_in_test_mode(bed: TestBed) -> None:
    record = await bed.messenger.test_helpers.inbound(
        bed.principal, {"channel": "sms", "from": "0532 123 45 67", "text": "DUR"}
    )

    assert (record.channel, record.sender, record.text) == ("sms", "+905321234567", "DUR")
    with pytest.raises(RecipientSuppressed):
        await bed.messenger.send(bed.principal, {"to": "+905321234567", "body": "x"})
    page = await bed.messenger.suppressions.list(bed.principal)
    assert [(e.recipient, e.source) for e in page.data] == [("+905321234567", "sms")]


async def test_a_plain_reply_suppresses_nobody(bed: TestBed) -> None:
    await bed.messenger.test_helpers.inbound(
        bed.principal, {"channel": "sms", "from": "+905321234567", "text": "teşekkürler"}
    )
    assert (await bed.messenger.suppressions.list(bed.principal)).data == []


async def test_a_live_key_or_a_bad_field_is_refused(bed: TestBed) -> None:
    live = await bed.messenger.principal(bed.workspace.id, livemode=True)
    with pytest.raises(ResourceNotFound) as live_refused:
        await bed.messenger.test_helpers.inbound(
            live, {"channel": "sms", "from": "+905321234567", "text": "DUR"}
        )
    assert live_refused.value.code == "NOT_FOUND"
    with pytest.raises(RequestInvalid) as bad:
        await bed.messenger.test_helpers.inbound(bed.principal, {"channel": "sms", "text": "x"})
    assert bad.value.code == "VALIDATION_ERROR"
