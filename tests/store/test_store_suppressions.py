"""The store's suppression list on every backend: one entry per workspace, mode,
channel and recipient; idempotent adds, also from two engines at once; the list's order and
cursor; the admission lookup."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from _databases import Database

from unified_messaging import ResourceNotFound
from unified_messaging._domain import Workspace
from unified_messaging.store.base import Store, SuppressionQuery
from unified_messaging.suppressions._rules import Suppression

T0 = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)


def entry(n: int, *, recipient: str | None = None, livemode: bool = True,
          channel: str = "sms", workspace_id: str = "ws_1") -> Suppression:  # fmt: skip
    return Suppression(
        id=f"sup_{n:04d}",
        workspace_id=workspace_id,
        livemode=livemode,
        channel=channel,  # type: ignore[arg-type]
        recipient=recipient or f"+9055500{n:05d}",
        reason=f"reason {n}",
        source="api",
        created_at=T0 + timedelta(seconds=n),
    )


async def with_workspace(store: Store, workspace_id: str = "ws_1") -> None:
    await store.create_workspace(Workspace(id=workspace_id, name=workspace_id, created_at=T0))


async def test_adding_twice_keeps_the_first_entry(store: Store) -> None:
    await with_workspace(store)
    first, new = await store.add_suppression(entry(1, recipient="+905550000001"))
    again, new_again = await store.add_suppression(entry(2, recipient="+905550000001"))

    assert (new, new_again) == (True, False)
    assert again == first
    assert await store.list_suppressions(SuppressionQuery("ws_1", True)) == [first]


async def test_an_unknown_workspace_is_refused(store: Store) -> None:
    with pytest.raises(ResourceNotFound):
        await store.add_suppression(entry(1, workspace_id="ws_nope"))


async def test_the_lookup_sees_its_own_workspace_mode_and_channel_only(store: Store) -> None:
    await with_workspace(store)
    await with_workspace(store, "ws_2")
    to = "+905550000009"
    await store.add_suppression(entry(1, recipient=to))
    await store.add_suppression(entry(2, recipient=to, livemode=False, channel="bizchat"))
    await store.add_suppression(entry(3, recipient=to, workspace_id="ws_2", channel="bizchat"))

    assert await store.suppressed("ws_1", True, "sms", [to, "+905550000010"]) == {to}
    assert await store.suppressed("ws_1", False, "sms", [to]) == set()
    assert await store.suppressed("ws_1", True, "bizchat", [to]) == set()
    assert await store.suppressed("ws_1", False, "bizchat", [to]) == {to}
    assert await store.suppressed("ws_1", True, "sms", []) == set()


async def test_the_list_is_newest_first_with_a_keyset_cursor_and_filters(store: Store) -> None:
    await with_workspace(store)
    for n in range(5):
        await store.add_suppression(entry(n, channel="chatbot" if n == 2 else "sms"))
    query = SuppressionQuery("ws_1", True, limit=2)

    page = await store.list_suppressions(query)
    cursor = (page[-1].created_at, page[-1].id)
    rest = await store.list_suppressions(SuppressionQuery("ws_1", True, older_than=cursor))
    chat = await store.list_suppressions(SuppressionQuery("ws_1", True, channel="chatbot"))
    one = await store.list_suppressions(
        SuppressionQuery("ws_1", True, recipients=("+905550000003",))
    )

    assert [e.id for e in page] == ["sup_0004", "sup_0003"]
    assert [e.id for e in rest] == ["sup_0002", "sup_0001", "sup_0000"]
    assert [e.id for e in chat] == ["sup_0002"]
    assert [e.id for e in one] == ["sup_0003"]
    assert await store.get_suppression("ws_1", True, "sup_0003") == page[1]
    assert await store.get_suppression("ws_1", False, "sup_0003") is None


async def test_removing_returns_the_entry_once(store: Store) -> None:
    await with_workspace(store)
    added, _ = await store.add_suppression(entry(1))

    assert await store.remove_suppression("ws_1", True, "sms", added.recipient) == added
    assert await store.remove_suppression("ws_1", True, "sms", added.recipient) is None
    assert await store.suppressed("ws_1", True, "sms", [added.recipient]) == set()


async def test_two_engines_adding_one_recipient_at_once_leave_one_row(
    sql_database: Database,
) -> None:
    first, second = sql_database.store(), sql_database.store()
    await first.open()
    await second.open()
    try:
        await with_workspace(first)
        to = "+905550000042"

        async def one(n: int) -> tuple[Suppression, bool]:
            return await (first, second)[n % 2].add_suppression(entry(n, recipient=to))

        results = await asyncio.gather(*(one(n) for n in range(10)))

        assert sum(1 for _, new in results if new) == 1
        assert len({stored.id for stored, _ in results}) == 1
        assert len(await first.list_suppressions(SuppressionQuery("ws_1", True))) == 1
    finally:
        await first.close()
        await second.close()
