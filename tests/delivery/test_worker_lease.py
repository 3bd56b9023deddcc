"""The worker's heartbeat: an item that runs past its lease is not run by a second worker."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from unified_messaging import ManualClock, Worker
from unified_messaging._clock import SystemClock
from unified_messaging._lifecycle.worker import DEFAULT_LEASE
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


async def test_the_simulator_forgets_a_report_once_the_lifecycle_stored_it() -> None:
    # A long-running serve with test keys: every planned report moves into a durable work
    # item, so the simulator's memory does not grow with the sends.
    from unified_messaging.providers.simulator import Simulator
    from unified_messaging.testing import create_testbed

    bed = await create_testbed()
    sent = [
        await bed.messenger.send(bed.principal, {"to": f"+90555{2000000 + n:07d}", "body": "x"})
        for n in range(200)
    ]
    connection = (await bed.messenger.store.list_connections(bed.workspace.id))[0]
    simulator = bed.messenger._adapters.for_connection(connection, livemode=False)
    assert isinstance(simulator, Simulator)
    ids = [
        (await bed.messenger.get_message(bed.principal, s.job_id)).attempts[0].provider_message_id
        for s in sent
    ]
    assert all(ids)
    assert [simulator.planned_report(i or "") for i in ids] == [None] * 200
    await bed.settle()
    record = await bed.messenger.get_message(bed.principal, sent[-1].job_id)
    assert record.status == "delivered"  # the report still arrives, from the work item


async def test_a_slow_item_does_not_hold_back_work_that_becomes_due_meanwhile() -> None:
    # The worker is a pipeline: while one item waits on a slow receiver, the other slots
    # claim and run what comes due (batches would wait for the slow one to end first).
    store = MemoryStore()
    clock = SystemClock()
    now = datetime.now(UTC)
    await store.enqueue_work(WorkItem("w_slow", "slow", "job_0", due_at=now, created_at=now))
    started, release = asyncio.Event(), asyncio.Event()
    done: list[str] = []

    async def slow(item: WorkItem) -> datetime | None:
        started.set()
        await release.wait()
        done.append(item.id)
        return None

    all_fast_done = asyncio.Event()

    async def fast(item: WorkItem) -> datetime | None:
        done.append(item.id)
        if len(done) == 10:
            all_fast_done.set()
        return None

    worker = Worker(store, clock, {"slow": slow, "fast": fast}, concurrency=4, idle_interval=0.01)
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    await asyncio.wait_for(started.wait(), timeout=5)
    later = datetime.now(UTC)
    fast_ids = [f"w_fast_{n}" for n in range(10)]
    for item_id in fast_ids:
        await store.enqueue_work(WorkItem(item_id, "fast", "job_1", due_at=later, created_at=later))
    await asyncio.wait_for(all_fast_done.wait(), timeout=10)  # batches would wait forever
    assert sorted(done) == sorted(fast_ids)  # all ran, the slow one still waiting
    release.set()
    stop.set()
    await asyncio.wait_for(running, timeout=5)  # stopping lets the running item end
    assert done[-1] == "w_slow"
    assert (
        await store.claim_due_work(now=datetime.now(UTC), worker_id="x", lease=LEASE, limit=9) == []
    )


async def test_an_item_the_worker_claims_back_while_running_it_is_not_run_twice() -> None:
    # Its heartbeat could not reach the store for a whole lease, so the lease ran out and the
    # same worker's next claim took the item back: the run in progress stays the only one.
    store = MemoryStore()
    clock = ManualClock()
    now = clock.now()
    await store.enqueue_work(WorkItem("w_1", "slow", "job_1", due_at=now, created_at=now))
    started, release = asyncio.Event(), asyncio.Event()
    runs: list[str] = []

    async def slow(item: WorkItem) -> datetime | None:
        runs.append(item.id)
        started.set()
        if len(runs) == 1:
            await release.wait()
        return None

    worker = Worker(store, clock, {"slow": slow}, worker_id="w")
    first = asyncio.create_task(worker.run_once())
    await started.wait()
    clock.advance(DEFAULT_LEASE + timedelta(seconds=1))
    try:
        assert await worker.run_once() == 1  # claimed back by the same worker...
        assert runs == ["w_1"]  # ...and not started a second time
    finally:
        release.set()
    assert await first == 1
    later = clock.now() + timedelta(days=1)
    assert await store.claim_due_work(now=later, worker_id="x", lease=LEASE, limit=9) == []
