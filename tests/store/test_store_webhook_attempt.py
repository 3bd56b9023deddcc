"""``Store.record_webhook_attempt``: a first attempt's delivery row, its retry item and the end
of the event item that made it, in one transaction guarded by that item's lease."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from test_store_contract import a_delivery, a_workspace, an_endpoint, an_item, at

from unified_messaging._errors import AlreadyExists, ResourceNotFound
from unified_messaging.store.base import Store, WorkItem

LEASE = timedelta(seconds=60)


@pytest.fixture
async def held(store: Store) -> Store:
    """A store with workspace ``ws_1``, its endpoint ``we_1`` and the event item ``evt``
    claimed by worker ``w`` until ``at(60)``."""
    ws = store
    await ws.create_workspace(a_workspace())
    await ws.add_webhook_endpoint(an_endpoint())
    await ws.enqueue_work(an_item("evt", kind="event"))
    [item] = await ws.claim_due_work(now=at(0), worker_id="w", lease=LEASE, limit=1)
    assert item.id == "evt"
    return ws


async def all_work(store: Store) -> dict[str, WorkItem]:
    items = await store.claim_due_work(now=at(10**6), worker_id="probe", lease=LEASE, limit=99)
    return {item.id: item for item in items}


def a_retry(delivery_id: str = "wd_1") -> WorkItem:
    return WorkItem(
        id=f"wh_{delivery_id}", kind="webhook", ref=delivery_id, due_at=at(5), created_at=at(1)
    )


async def test_a_delivered_attempt_is_stored_and_ends_the_held_item(held: Store) -> None:
    delivered = a_delivery(status="delivered", attempts=1, last_status_code=204)

    recorded = await held.record_webhook_attempt(
        delivered, retry=None, held="evt", worker_id="w", now=at(1), complete=True
    )

    assert recorded
    assert await held.get_webhook_delivery("wd_1") == delivered
    assert await all_work(held) == {}


async def test_a_failed_attempt_is_stored_with_its_retry_item(held: Store) -> None:
    pending = a_delivery(attempts=1, last_status_code=503, next_attempt_at=at(5))

    recorded = await held.record_webhook_attempt(
        pending, retry=a_retry(), held="evt", worker_id="w", now=at(1), complete=True
    )

    assert recorded
    assert await held.get_webhook_delivery("wd_1") == pending
    work = await all_work(held)
    assert set(work) == {"wh_wd_1"}
    assert (work["wh_wd_1"].due_at, work["wh_wd_1"].ref, work["wh_wd_1"].attempts) == (
        at(5),
        "wd_1",
        1,  # the probe's claim: it was stored unclaimed
    )


async def test_without_complete_the_held_item_stays_held(held: Store) -> None:
    recorded = await held.record_webhook_attempt(
        a_delivery(status="delivered", attempts=1),
        retry=None,
        held="evt",
        worker_id="w",
        now=at(1),
        complete=False,
    )

    assert recorded
    assert await held.get_webhook_delivery("wd_1") is not None
    assert await held.complete_work("evt", "w")  # still this worker's


@pytest.mark.parametrize("complete", [True, False])
async def test_an_item_held_by_another_worker_writes_nothing(
    held: Store, *, complete: bool
) -> None:
    [taken] = await held.claim_due_work(now=at(61), worker_id="other", lease=LEASE, limit=1)
    assert taken.id == "evt"

    recorded = await held.record_webhook_attempt(
        a_delivery(attempts=1, next_attempt_at=at(66)),
        retry=a_retry(),
        held="evt",
        worker_id="w",
        now=at(61),
        complete=complete,
    )

    assert not recorded
    assert await held.get_webhook_delivery("wd_1") is None
    work = await all_work(held)
    assert set(work) == {"evt"}  # the other worker's still; no retry item


@pytest.mark.parametrize("complete", [True, False])
async def test_a_lease_run_out_unrenewed_writes_nothing(held: Store, *, complete: bool) -> None:
    recorded = await held.record_webhook_attempt(
        a_delivery(status="delivered", attempts=1),
        retry=None,
        held="evt",
        worker_id="w",
        now=at(60),  # the lease ends now: another worker may claim it at any moment
        complete=complete,
    )

    assert not recorded
    assert await held.get_webhook_delivery("wd_1") is None
    assert set(await all_work(held)) == {"evt"}


async def test_a_removed_endpoint_writes_nothing_and_keeps_the_item_held(held: Store) -> None:
    with pytest.raises(ResourceNotFound):
        await held.record_webhook_attempt(
            a_delivery(endpoint_id="we_missing", attempts=1, next_attempt_at=at(5)),
            retry=a_retry(),
            held="evt",
            worker_id="w",
            now=at(1),
            complete=True,
        )

    assert await held.complete_work("evt", "w")  # not deleted by the failed write
    assert await all_work(held) == {}  # and no retry item


async def test_an_event_already_at_the_endpoint_writes_nothing(held: Store) -> None:
    await held.add_webhook_delivery(a_delivery("wd_0", event_id="evt_1"))
    again = replace(a_delivery("wd_1", event_id="evt_1"), status="delivered", attempts=1)

    with pytest.raises(AlreadyExists):
        await held.record_webhook_attempt(
            again, retry=None, held="evt", worker_id="w", now=at(1), complete=True
        )

    assert await held.get_webhook_delivery("wd_1") is None
    assert await held.complete_work("evt", "w")
