"""The worker's heartbeat: an item that runs past its lease is not run by a second worker."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from unified_messaging import Worker
from unified_messaging._clock import SystemClock
from unified_messaging.store.base import WorkItem
from unified_messaging.store.memory import MemoryStore

LEASE = timedelta(milliseconds=300)


async def test_a_slow_item_keeps_its_lease_while_it_runs() -> None:
    store = MemoryStore()
    clock = SystemClock()
    now = datetime.now(UTC)
    await store.enqueue_work(WorkItem("w_1", "slow", "job_1", due_at=now, created_at=now))
    started, release = asyncio.Event(), asyncio.Event()
    runs: list[str] = []

    async def slow(item: WorkItem) -> datetime | None:
        runs.append(item.id)
        started.set()
        await release.wait()
        return None

    first = Worker(store, clock, {"slow": slow}, worker_id="first", lease=LEASE)
    second = Worker(store, clock, {"slow": slow}, worker_id="second", lease=LEASE)
    running = asyncio.create_task(first.run_once())
    await started.wait()
    for _ in range(3):  # three whole leases go by while the first still runs it
        await asyncio.sleep(LEASE.total_seconds())
        # Bounded: without the heartbeat the second would claim it and wait with the first.
        assert await asyncio.wait_for(second.run_once(), timeout=5) == 0
    release.set()
    assert await running == 1
    assert runs == ["w_1"]
    assert await second.run_once() == 0  # done: deleted, not released
