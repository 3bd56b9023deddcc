"""The simulated reports of test sends, applied in batches by the worker: one read
and one transaction for many, with the one-at-a-time path's guarantees (compare-and-set per
message, leases, events with the change, at least once, one bad item isolated)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from unified_messaging import ManualClock, Messenger, Vault
from unified_messaging._lifecycle.runtime import WORK_SIMULATED
from unified_messaging._lifecycle.worker import DEFAULT_LEASE, Batch, Leases
from unified_messaging.providers.simulator import SimulatorSettings, simulated_report
from unified_messaging.store.base import Store, WorkItem
from unified_messaging.store.memory import MemoryStore
from unified_messaging.store.sql import SqlStore
from unified_messaging.testing import TestBed, create_testbed
from unified_messaging.webhooks._sender import TargetPolicy

Hook = Callable[[], Awaitable[None]]


class Spy:
    """The store, counting calls, and running a hook once just before a named call."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()
        self.before: dict[str, Hook] = {}

    def __getattr__(self, name: str) -> object:
        attr = getattr(self.inner, name)
        if not asyncio.iscoroutinefunction(attr):
            return attr

        async def call(*args: object, **kwargs: object) -> object:
            self.calls[name] += 1
            hook = self.before.pop(name, None)
            if hook is not None:
                await hook()
            return await attr(*args, **kwargs)

        return call


@pytest.fixture(params=["memory", "sqlite"])
async def spy(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Spy]:
    inner: Store = (
        MemoryStore()
        if request.param == "memory"
        else SqlStore(f"sqlite+aiosqlite:///{tmp_path / 'um.db'}")
    )
    yield Spy(inner)
    await inner.close()


@pytest.fixture
async def bed(spy: Spy) -> TestBed:
    messenger = Messenger(
        spy,  # type: ignore[arg-type]
        clock=ManualClock(),
        vault=Vault.generate(),
        webhook_policy=TargetPolicy(allow_private=True),
        simulator_settings=SimulatorSettings(report_delay=timedelta(0)),
    )
    bed = await create_testbed(messenger=messenger, recipient_limit=None)
    # Nobody listens: events are stored as work, which is what these tests look at.
    await messenger.webhooks.create(bed.workspace.id, "http://127.0.0.1:9/hook")
    return bed


async def send(bed: TestBed, count: int) -> list[str]:
    return [
        (await bed.messenger.send(bed.principal, {"to": f"+90555{3000000 + n:07d}", "body": "x"}))
        .job_id
        for n in range(count)
    ]  # fmt: skip


async def statuses(bed: TestBed, job_ids: list[str]) -> list[tuple[str, int]]:
    store = bed.messenger.store
    found = [await store.get_message(bed.workspace.id, False, j) for j in job_ids]
    return [(m.status, m.version) if m else ("gone", -1) for m in found]


async def stored_work(spy: Spy) -> list[WorkItem]:
    """Every stored item, claimed by a throwaway worker far in the future (the end of a
    test: nothing runs after it)."""
    far = datetime(2100, 1, 1, tzinfo=UTC)
    return await spy.inner.claim_due_work(now=far, worker_id="peek", lease=DEFAULT_LEASE,
                                          limit=1000)  # fmt: skip


def delivered_events(items: list[WorkItem], job_id: str) -> int:
    return sum(
        1
        for i in items
        if i.kind == "event" and i.ref == job_id and i.payload.get("event") == "message.delivered"
    )


async def simulated_items(spy: Spy, bed: TestBed, *, keep: bool = False) -> list[WorkItem]:
    """The due simulated reports, claimed by ``w``; given back unless ``keep``."""
    now = bed.clock.now()
    items = await spy.inner.claim_due_work(now=now, worker_id="w", lease=DEFAULT_LEASE, limit=100)
    if not keep:
        for item in items:
            await spy.inner.reschedule_work(item.id, "w", item.due_at)
    return [i for i in items if i.kind == WORK_SIMULATED]


async def test_a_batch_is_one_read_and_one_transaction(bed: TestBed, spy: Spy) -> None:
    job_ids = await send(bed, 6)
    spy.calls.clear()
    await bed.messenger.worker(batch=50).run_once()
    calls = dict(spy.calls)
    assert await statuses(bed, job_ids) == [("delivered", 2)] * 6
    assert calls["get_messages"] == calls["replace_messages"] == 1
    assert "get_message" not in calls and "replace_message" not in calls
    work = await stored_work(spy)
    assert all(delivered_events(work, j) == 1 for j in job_ids)  # stored with the change
    assert not [i for i in work if i.kind == WORK_SIMULATED]  # completed in the same write


async def test_a_report_racing_another_on_the_same_message_is_decided_again(
    bed: TestBed, spy: Spy
) -> None:
    job_ids = await send(bed, 3)
    raced = await spy.inner.get_message(bed.workspace.id, False, job_ids[1])
    assert raced is not None
    message_id = raced.attempts[0].provider_message_id
    assert message_id is not None
    [connection] = [
        c
        for c in await spy.inner.list_connections(bed.workspace.id)
        if c.provider == raced.attempts[0].provider
    ]

    async def pushed_first() -> None:  # the same report, pushed, lands first
        report = simulated_report(message_id, "delivered")
        await bed.messenger._lifecycle.ingest(connection, [report], livemode=False)

    spy.before["replace_messages"] = pushed_first
    spy.calls.clear()
    await bed.messenger.worker(batch=50).run_once()
    assert spy.calls["replace_messages"] == 2  # the raced one read again: changes nothing
    assert await statuses(bed, job_ids) == [("delivered", 2)] * 3  # applied once each
    work = await stored_work(spy)
    assert [delivered_events(work, j) for j in job_ids] == [1, 1, 1]
    assert not [i for i in work if i.kind == WORK_SIMULATED]


async def test_a_lease_lost_mid_batch_writes_nothing_for_that_item(bed: TestBed, spy: Spy) -> None:
    job_ids = await send(bed, 3)
    worker = bed.messenger.worker(batch=50, worker_id="first")
    lost_item = f"sim_{job_ids[0]}_0"

    async def taken_over() -> None:  # its lease ran out; another worker claimed it
        await spy.inner.reschedule_work(lost_item, "first", bed.clock.now())
        got = await spy.inner.claim_due_work(
            now=bed.clock.now(), worker_id="second", lease=DEFAULT_LEASE, limit=1
        )
        assert [i.id for i in got] == [lost_item]

    spy.before["replace_messages"] = taken_over
    await worker.run_once()
    assert await statuses(bed, job_ids) == [("sent", 1), ("delivered", 2), ("delivered", 2)]
    # The second worker's lease runs out unfinished: the report is applied all the same,
    # once (no event of the batch's own change for it, which was not stored).
    bed.clock.advance(DEFAULT_LEASE * 2)  # type: ignore[attr-defined]
    await bed.messenger.worker(batch=50).run_once()
    assert (await statuses(bed, job_ids))[0] == ("delivered", 2)
    assert delivered_events(await stored_work(spy), job_ids[0]) == 1


async def test_an_item_the_worker_knows_it_lost_is_not_written_nor_left(
    bed: TestBed, spy: Spy
) -> None:
    job_ids = await send(bed, 3)
    items = await simulated_items(spy, bed, keep=True)
    leases = Leases("w", bed.clock)
    for item in items:
        leases.hold(item.id, bed.clock.now() + DEFAULT_LEASE)
    gone = f"sim_{job_ids[2]}_0"
    leases.renewed([gone], [], bed.clock.now() + DEFAULT_LEASE)  # the heartbeat lost it
    left = await bed.messenger._lifecycle.handle_simulated_batch(Batch(tuple(items), leases))
    assert left == []
    assert await statuses(bed, job_ids) == [("delivered", 2), ("delivered", 2), ("sent", 1)]


async def test_an_item_whose_message_is_gone_is_completed(bed: TestBed, spy: Spy) -> None:
    job_ids = await send(bed, 2)
    [template] = [i for i in await simulated_items(spy, bed) if i.ref == job_ids[0]]
    ghost = replace(template, id="sim_msg_gone_0", ref="msg_gone", claimed_by=None,
                    lease_until=None, attempts=0)  # fmt: skip
    await spy.inner.enqueue_work(ghost)
    await bed.messenger.worker(batch=50).run_once()
    assert await statuses(bed, job_ids) == [("delivered", 2)] * 2
    assert not [i for i in await stored_work(spy) if i.kind == WORK_SIMULATED]


async def test_a_poison_item_fails_alone(bed: TestBed, spy: Spy) -> None:
    job_ids = await send(bed, 3)
    [template] = [i for i in await simulated_items(spy, bed) if i.ref == job_ids[0]]
    poison = replace(template, id="sim_poison_0", ref=job_ids[1], claimed_by=None,
                     lease_until=None, attempts=0,
                     payload={**template.payload, "status": "no such status"})  # fmt: skip
    await spy.inner.enqueue_work(poison)
    await bed.messenger.worker(batch=50).run_once()
    assert await statuses(bed, job_ids) == [("delivered", 2)] * 3
    [left] = [i for i in await stored_work(spy) if i.kind == WORK_SIMULATED]
    assert left.id == "sim_poison_0"
    assert left.due_at > bed.clock.now()  # backed off, to be retried alone
