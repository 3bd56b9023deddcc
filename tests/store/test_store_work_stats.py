"""``Store.work_stats`` (D30's queue gauges), on memory, SQLite and PostgreSQL alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from unified_messaging.store.base import Store, WorkItem, WorkStats

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def item(item_id: str, kind: str, due: float) -> WorkItem:
    return WorkItem(id=item_id, kind=kind, ref=f"msg_{item_id}", due_at=at(due), created_at=T0)


async def test_an_empty_store_has_no_work(store: Store) -> None:
    assert await store.work_stats(at(0)) == []


async def test_counts_items_by_kind_and_the_oldest_due_one(store: Store) -> None:
    await store.enqueue_work_many(
        [
            item("t1", "dlr_timeout", -30),
            item("t2", "dlr_timeout", -5),
            item("t3", "dlr_timeout", 3600),
            item("w1", "webhook", 60),
            item("f1", "fallback", 0),  # due exactly now counts as due
        ]
    )

    stats = await store.work_stats(at(0))

    assert stats == [
        WorkStats("dlr_timeout", items=3, due=2, oldest_due_at=at(-30)),
        WorkStats("fallback", items=1, due=1, oldest_due_at=at(0)),
        WorkStats("webhook", items=1, due=0, oldest_due_at=None),
    ]


async def test_claimed_items_still_count_until_completed(store: Store) -> None:
    await store.enqueue_work(item("t1", "dlr_timeout", -10))
    [claimed] = await store.claim_due_work(
        now=at(0), worker_id="A", lease=timedelta(seconds=30), limit=1
    )
    assert await store.work_stats(at(0)) == [WorkStats("dlr_timeout", 1, 1, at(-10))]

    await store.complete_work(claimed.id, "A")

    assert await store.work_stats(at(0)) == []


async def test_a_later_now_makes_scheduled_items_due(store: Store) -> None:
    await store.enqueue_work_many([item("t1", "dlr_timeout", 10), item("t2", "dlr_timeout", 20)])

    assert await store.work_stats(at(15)) == [WorkStats("dlr_timeout", 2, 1, at(10))]
    assert await store.work_stats(at(25)) == [WorkStats("dlr_timeout", 2, 2, at(10))]
