"""The worker's batch handlers: the claimed items of a kind handed over together, the items
a batch handler leaves (or all of them, when it raises) run one at a time."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from unified_messaging import ManualClock, Worker
from unified_messaging._lifecycle.worker import Batch
from unified_messaging.store.base import WorkItem
from unified_messaging.store.memory import MemoryStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)
FAR = datetime(2100, 1, 1, tzinfo=UTC)


async def a_store(*item_ids: str, kind: str = "report") -> MemoryStore:
    store = MemoryStore()
    for item_id in item_ids:
        await store.enqueue_work(WorkItem(item_id, kind, "job", due_at=T0, created_at=T0))
    return store


async def left_ids(store: MemoryStore) -> list[str]:
    items = await store.claim_due_work(now=FAR, worker_id="peek", lease=timedelta(1), limit=99)
    return sorted(i.id for i in items)


async def test_items_of_a_kind_go_to_its_batch_handler_together() -> None:
    store = await a_store("a", "b", "c")
    batches: list[list[str]] = []
    alone: list[str] = []

    async def one(item: WorkItem) -> datetime | None:
        alone.append(item.id)
        return None

    async def many(batch: Batch) -> list[WorkItem]:
        batches.append([i.id for i in batch.items])
        assert all(batch.holds(i.id) for i in batch.items)
        for item in batch.items[:2]:  # what a handler finishing them in its write does
            assert await store.complete_work(item.id, batch.worker_id)
        return [batch.items[2]]  # left: run alone

    worker = Worker(store, ManualClock(T0), {"report": one}, batch_handlers={"report": many})
    assert await worker.run_once() == 3
    assert batches == [["a", "b", "c"]]
    assert alone == ["c"]
    assert await left_ids(store) == []


async def test_a_batch_handler_that_raises_leaves_every_item_to_run_alone() -> None:
    store = await a_store("a", "b", "poison")
    alone: list[str] = []

    async def one(item: WorkItem) -> datetime | None:
        alone.append(item.id)
        if item.id == "poison":
            raise ValueError("a bad item")
        return None

    async def many(batch: Batch) -> list[WorkItem]:
        raise RuntimeError("the batch's write failed")

    clock = ManualClock(T0)
    worker = Worker(store, clock, {"report": one}, batch_handlers={"report": many})
    assert await worker.run_once() == 3
    assert sorted(alone) == ["a", "b", "poison"]
    [poison] = await store.claim_due_work(now=FAR, worker_id="x", lease=timedelta(1), limit=9)
    assert poison.id == "poison" and poison.due_at > T0  # backed off alone


async def test_one_item_of_a_kind_runs_through_its_ordinary_handler() -> None:
    store = await a_store("a")
    alone: list[str] = []

    async def one(item: WorkItem) -> datetime | None:
        alone.append(item.id)
        return None

    async def many(batch: Batch) -> list[WorkItem]:
        raise AssertionError("not for one item")

    worker = Worker(store, ManualClock(T0), {"report": one}, batch_handlers={"report": many})
    assert await worker.run_once() == 1
    assert alone == ["a"]


async def test_the_pipeline_counts_a_batch_as_its_items() -> None:
    store = await a_store(*(f"i{n:02d}" for n in range(30)))
    sizes: list[int] = []

    async def one(item: WorkItem) -> datetime | None:
        return None

    async def many(batch: Batch) -> list[WorkItem]:
        sizes.append(len(batch.items))
        for item in batch.items:
            await store.complete_work(item.id, batch.worker_id)
        return []

    stop = asyncio.Event()
    worker = Worker(store, ManualClock(T0), {"report": one}, batch_handlers={"report": many},
                    batch=10, idle_interval=0.01)  # fmt: skip
    running = asyncio.create_task(worker.run(stop))
    for _ in range(200):
        if sum(sizes) == 30:
            break
        await asyncio.sleep(0.01)
    stop.set()
    await running
    assert sum(sizes) == 30 and max(sizes) <= 10
    assert await left_ids(store) == []
