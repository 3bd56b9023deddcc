"""The flood guard's count (D28) in ``Store.accept_messages`` on memory, SQLite and PostgreSQL.

The limit is checked in the write-ahead transaction from the stored messages themselves, so
every backend must count the same ones (same workspace, mode and recipient, inside the
window, the guard's own refusals left out) and refuse with nothing stored. Two writers on
one database must never both take the last place: SQLite serializes them with its write
lock, PostgreSQL with a per-recipient advisory lock, and the test below races them.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from _databases import Database

from unified_messaging import RecipientRateLimited
from unified_messaging._access.flood_guard import RECIPIENT_RATE_LIMITED, RecipientLimit
from unified_messaging._domain import ErrorInfo, MessageRecord, Workspace
from unified_messaging.store.base import Store

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
TO = "+905321234567"
THREE_PER_MINUTE = RecipientLimit(3, timedelta(minutes=1))


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def a_message(job_id: str, **changes: Any) -> MessageRecord:
    message = MessageRecord(
        job_id=job_id,
        workspace_id="ws_1",
        livemode=True,
        status="sent",
        to=TO,
        channel="sms",
        provider="sms_a",
        created_at=T0,
        updated_at=T0,
        text="Merhaba",
    )
    return replace(message, **changes)


async def with_workspaces(store: Store, *ids: str) -> None:
    for workspace_id in ids:
        await store.create_workspace(Workspace(id=workspace_id, name=workspace_id, created_at=T0))


async def accept(store: Store, *records: MessageRecord, limit: RecipientLimit | None) -> bool:
    return await store.accept_messages(list(records), recipient_limit=limit)


async def test_the_limit_admits_exactly_n_in_the_window_and_stores_nothing_past_it(
    store: Store,
) -> None:
    await with_workspaces(store, "ws_1")
    for i in range(3):
        assert await accept(store, a_message(f"msg_{i}", created_at=at(i)), limit=THREE_PER_MINUTE)

    with pytest.raises(RecipientRateLimited) as refused:
        await accept(store, a_message("msg_3", created_at=at(10)), limit=THREE_PER_MINUTE)

    assert refused.value.code == RECIPIENT_RATE_LIMITED
    assert refused.value.http_status == 429
    # The oldest of the three (at 0 s) leaves the 60 s window at 60 s: 50 s from 10 s.
    assert refused.value.retry_after == pytest.approx(50.0)
    [refusal] = refused.value.refusals
    assert (refusal.to, refusal.free) == (TO, 0)
    assert await store.get_message("ws_1", True, "msg_3") is None


async def test_the_window_slides(store: Store) -> None:
    await with_workspaces(store, "ws_1")
    await store.insert_messages([a_message(f"old_{i}", created_at=at(i)) for i in range(3)])

    with pytest.raises(RecipientRateLimited):
        await accept(store, a_message("msg_early", created_at=at(59)), limit=THREE_PER_MINUTE)
    # At 60.5 s the message of 0 s has left the window: one place, and only one.
    assert await accept(store, a_message("msg_late", created_at=at(60.5)), limit=THREE_PER_MINUTE)
    with pytest.raises(RecipientRateLimited):
        await accept(store, a_message("msg_next", created_at=at(60.6)), limit=THREE_PER_MINUTE)


async def test_other_recipients_workspaces_and_modes_are_counted_apart(store: Store) -> None:
    await with_workspaces(store, "ws_1", "ws_2")
    await store.insert_messages([a_message(f"old_{i}", created_at=at(i)) for i in range(3)])

    others = [
        a_message("msg_other_to", to="+905329999999", created_at=at(5)),
        a_message("msg_other_ws", workspace_id="ws_2", created_at=at(5)),
        a_message("msg_test_mode", livemode=False, created_at=at(5)),
    ]
    for record in others:
        assert await accept(store, record, limit=THREE_PER_MINUTE)


async def test_items_refused_before_any_provider_do_not_count(store: Store) -> None:
    await with_workspaces(store, "ws_1")
    flooded = ErrorInfo(RECIPIENT_RATE_LIMITED, "flood guard")
    missing = ErrorInfo("TEMPLATE_VARIABLE_MISSING", "no code")
    failed = ErrorInfo("PROVIDER_REJECTED", "no")
    refused = {"status": "failed", "phase": "refused"}
    await store.insert_messages(
        [
            a_message("refused_0", error=flooded, created_at=at(0), **refused),
            a_message("refused_1", error=missing, created_at=at(1), **refused),
            # A provider's refusal is a message that was sent: it counts.
            a_message("failed_0", status="failed", error=failed, created_at=at(2)),
        ]
    )

    assert await accept(
        store,
        a_message("msg_a", created_at=at(3)),
        a_message("msg_b", created_at=at(3)),
        limit=THREE_PER_MINUTE,
    )
    with pytest.raises(RecipientRateLimited):
        await accept(store, a_message("msg_c", created_at=at(4)), limit=THREE_PER_MINUTE)


async def test_refused_items_in_the_same_batch_do_not_count(store: Store) -> None:
    await with_workspaces(store, "ws_1")
    invalid = ErrorInfo("INVALID_RECIPIENT", "not a number")
    items = [
        a_message(f"bad_{i}", status="failed", phase="refused", error=invalid, created_at=at(0))
        for i in range(5)
    ]

    assert await accept(store, *items, a_message("msg_a", created_at=at(0)), limit=THREE_PER_MINUTE)
    assert await accept(store, a_message("msg_b", created_at=at(1)), limit=THREE_PER_MINUTE)


async def test_a_batch_is_refused_whole_and_says_how_many_still_fit(store: Store) -> None:
    await with_workspaces(store, "ws_1")
    await store.insert_messages([a_message("old_0", created_at=at(0))])
    batch = [a_message(f"msg_{i}", created_at=at(1)) for i in range(4)]
    batch.append(a_message("msg_else", to="+905320000077", created_at=at(1)))

    with pytest.raises(RecipientRateLimited) as refused:
        await accept(store, *batch, limit=THREE_PER_MINUTE)

    assert [(r.to, r.free) for r in refused.value.refusals] == [(TO, 2)]
    for record in batch:
        assert await store.get_message("ws_1", True, record.job_id) is None


async def test_no_limit_counts_nothing(store: Store) -> None:
    await with_workspaces(store, "ws_1")
    batch = [a_message(f"msg_{i}", created_at=at(0)) for i in range(50)]
    assert await accept(store, *batch, limit=None)
    assert await accept(store, a_message("msg_more", created_at=at(1)), limit=None)


@pytest.mark.parametrize("to", ["'; DROP TABLE um_messages; --", "+90532🙂", "x" * 64])
async def test_odd_recipients_are_counted_as_text(store: Store, to: str) -> None:
    await with_workspaces(store, "ws_1")
    for i in range(3):
        assert await accept(store, a_message(f"msg_{i}", to=to, created_at=at(i)),
                            limit=THREE_PER_MINUTE)  # fmt: skip
    with pytest.raises(RecipientRateLimited):
        await accept(store, a_message("msg_3", to=to, created_at=at(3)), limit=THREE_PER_MINUTE)


async def test_two_stores_on_one_database_never_both_take_the_last_place(
    sql_database: Database,
) -> None:
    """20 sends to one recipient race from two engines (two pools, as two processes would
    have); with a limit of 5, exactly 5 are stored whatever the interleaving."""
    first, second = sql_database.store(), sql_database.store()
    await first.open()
    await second.open()
    try:
        await with_workspaces(first, "ws_1")
        limit = RecipientLimit(5, timedelta(hours=1))

        async def one(index: int) -> bool:
            store = (first, second)[index % 2]
            record = a_message(f"msg_{index:02d}", created_at=at(index / 100))
            try:
                return await accept(store, record, limit=limit)
            except RecipientRateLimited:
                return False

        results = await asyncio.gather(*(one(i) for i in range(20)))

        assert sum(results) == 5
        stored = [
            index
            for index in range(20)
            if await first.get_message("ws_1", True, f"msg_{index:02d}") is not None
        ]
        assert len(stored) == 5
    finally:
        await first.close()
        await second.close()
