"""``Messenger.list_messages`` and ``connection_stats`` for library callers, async and sync:
the same rules and errors as the REST edge, which calls the same methods."""

from __future__ import annotations

from datetime import datetime

import pytest

from unified_messaging import (
    MessageNotFound,
    RequestInvalid,
    ResourceNotFound,
    SyncMessenger,
)
from unified_messaging._search import MessageSearch
from unified_messaging.testing import TestBed, build_testbed

NORMAL = "+905551234567"


async def test_a_mapping_or_a_model_asks_the_same(bed: TestBed) -> None:
    failed = await bed.messenger.send(bed.principal, {"to": "+905550000001", "body": "x"})
    await bed.messenger.send(bed.principal, {"to": NORMAL, "body": "x"})

    by_mapping = await bed.messenger.list_messages(bed.principal, {"status": "failed"})
    by_model = await bed.messenger.list_messages(bed.principal, MessageSearch(status="failed"))

    assert [r.job_id for r in by_mapping.data] == [failed.job_id]
    assert by_model == by_mapping


async def test_bad_values_are_request_invalid_naming_each_field(bed: TestBed) -> None:
    naive = datetime(2026, 1, 1)
    with pytest.raises(RequestInvalid) as caught:
        await bed.messenger.list_messages(
            bed.principal, {"limit": 0, "created_after": naive, "colour": "red"}
        )

    assert sorted(d.field for d in caught.value.details) == ["colour", "created_after", "limit"]


async def test_a_cursor_of_another_mode_is_message_not_found(bed: TestBed) -> None:
    sent = await bed.messenger.send(bed.principal, {"to": NORMAL, "body": "x"})
    live = await bed.messenger.principal(bed.workspace.id, livemode=True)

    with pytest.raises(MessageNotFound):
        await bed.messenger.list_messages(live, {"starting_after": sent.job_id})


async def test_connection_stats_needs_an_aware_time_and_a_known_workspace(bed: TestBed) -> None:
    with pytest.raises(RequestInvalid):
        await bed.messenger.connections.stats(bed.workspace.id, since=datetime(2026, 1, 1))
    with pytest.raises(ResourceNotFound):
        await bed.messenger.connections.stats("ws_nope", since=bed.clock.now())


def test_the_sync_twins_list_and_score() -> None:
    bed = build_testbed()
    with SyncMessenger(bed.messenger) as sync:
        start = sync.clock.now()
        sent = sync.send(bed.principal, {"to": NORMAL, "body": "x", "provider": "sms_c"})
        page = sync.list_messages(bed.principal, {"provider": "sms_c"})
        stats = sync.connections.stats(bed.workspace.id, since=start, livemode=False)

    assert [r.job_id for r in page.data] == [sent.job_id]
    assert [(s.provider, s.sent, s.pending) for s in stats] == [("sms_c", 1, 1)]
