"""The ``Store`` contract of a send's write path (D17, D22, crash recovery), on every backend:
the write-ahead transaction (``accept_messages``), the outcome's (``finish_messages``), the
compare-and-set of idempotency keys, and worker lease renewal.

A separate file from ``test_store_contract`` for size; the same ``store`` fixture runs it on
memory, SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from test_store_contract import LEASE, PERIOD, T0, a_message, a_record, a_workspace, an_item, at

from unified_messaging._errors import AlreadyExists, IdempotencyInProgress
from unified_messaging.store.base import IdempotencyClaim, ProviderRef, QuotaCharge, Store

CLAIM = IdempotencyClaim("ws_1", "key_1", "idem-1", owner="idk_a")


@pytest.fixture
async def ws(store: Store) -> Store:
    await store.create_workspace(a_workspace())
    return store


async def test_accept_stores_records_work_quota_and_binding_together(ws: Store) -> None:
    await ws.begin_idempotent(a_record(owner="idk_a"))
    accepted = await ws.accept_messages(
        [a_message("job_1"), a_message("job_2")],
        work=[an_item("sub_job_1")],
        quota=QuotaCharge("ws_1", PERIOD, 2, limit=5),
        claim=CLAIM,
    )
    assert accepted
    assert await ws.get_message("ws_1", True, "job_2") is not None
    assert await ws.quota_used("ws_1", PERIOD) == 2
    [item] = await ws.claim_due_work(now=T0, worker_id="w", lease=LEASE, limit=5)
    assert item.id == "sub_job_1"
    seen = await ws.begin_idempotent(a_record(owner="idk_b"))
    assert seen is not None
    assert (seen.owner, seen.job_ids) == ("idk_a", ("job_1", "job_2"))


async def test_accept_over_quota_stores_nothing(ws: Store) -> None:
    await ws.consume_quota("ws_1", PERIOD, 4, 5)
    refused = await ws.accept_messages(
        [a_message("job_1"), a_message("job_2")],
        work=[an_item("sub_job_1")],
        quota=QuotaCharge("ws_1", PERIOD, 2, limit=5),
    )
    assert refused is False
    assert await ws.get_message("ws_1", True, "job_1") is None
    assert await ws.quota_used("ws_1", PERIOD) == 4
    assert await ws.claim_due_work(now=at(999), worker_id="w", lease=LEASE, limit=5) == []


async def test_accept_with_a_key_taken_over_stores_nothing(ws: Store) -> None:
    await ws.begin_idempotent(a_record(owner="idk_a"))
    assert await ws.take_over_idempotent(a_record(owner="idk_b", created_at=at(1)), "idk_a")
    with pytest.raises(IdempotencyInProgress):
        await ws.accept_messages(
            [a_message("job_1")], quota=QuotaCharge("ws_1", PERIOD, 1), claim=CLAIM
        )
    assert await ws.get_message("ws_1", True, "job_1") is None
    assert await ws.quota_used("ws_1", PERIOD) == 0


async def test_accept_of_a_taken_job_id_stores_nothing(ws: Store) -> None:
    await ws.accept_messages([a_message("job_1")])
    with pytest.raises(AlreadyExists):
        await ws.accept_messages(
            [a_message("job_2"), a_message("job_1")], quota=QuotaCharge("ws_1", PERIOD, 2)
        )
    assert await ws.get_message("ws_1", True, "job_2") is None
    assert await ws.quota_used("ws_1", PERIOD) == 0


async def test_finish_replaces_only_rows_still_at_their_write_ahead_version(ws: Store) -> None:
    await ws.accept_messages(
        [a_message("job_1"), a_message("job_2")],
        work=[an_item("sub_job_1")],
        quota=QuotaCharge("ws_1", PERIOD, 2),
    )
    # Meanwhile something else (the submit check) moved job_2 on.
    settled = a_message("job_2", status="unknown", version=1)
    assert await ws.replace_message(settled)
    moved = await ws.finish_messages(
        [
            a_message("job_1", status="sent", version=1),
            a_message("job_2", status="sent", version=1),
        ],
        work=[replace(an_item("tmo_1"), ref="job_1"), replace(an_item("tmo_2"), ref="job_2")],
        refs=[ProviderRef("conn_1", "pm_1", "job_1", "ws_1", True)],
        done=["sub_job_1"],
        release=QuotaCharge("ws_1", PERIOD, 1),
    )
    assert moved == ["job_2"]
    one = await ws.get_message("ws_1", True, "job_1")
    two = await ws.get_message("ws_1", True, "job_2")
    assert (one and one.status, two and two.status) == ("sent", "unknown")
    assert await ws.quota_used("ws_1", PERIOD) == 1
    assert await ws.find_provider_ref("conn_1", "pm_1") is not None
    due = await ws.claim_due_work(now=at(999), worker_id="w", lease=LEASE, limit=9)
    assert [item.id for item in due] == ["tmo_1"]  # the check is done, job_2's work dropped


async def test_of_two_concurrent_takeovers_exactly_one_wins(ws: Store) -> None:
    await ws.begin_idempotent(a_record(owner="idk_dead"))
    wins = await asyncio.gather(
        *(
            ws.take_over_idempotent(a_record(owner=f"idk_{n}", created_at=at(300)), "idk_dead")
            for n in range(8)
        )
    )
    assert sum(wins) == 1
    seen = await ws.begin_idempotent(a_record(owner="idk_late"))
    assert seen is not None
    assert seen.owner == f"idk_{wins.index(True)}"


async def test_a_key_bound_to_jobs_is_not_taken_over_nor_dropped(ws: Store) -> None:
    await ws.begin_idempotent(a_record(owner="idk_a"))
    await ws.accept_messages([a_message("job_1")], claim=CLAIM)
    assert not await ws.take_over_idempotent(a_record(owner="idk_b"), "idk_a")
    assert not await ws.drop_idempotent("ws_1", "key_1", "idem-1")
    # Past its 24 hours it may go (the caller decides expiry): bound_ok.
    assert await ws.take_over_idempotent(a_record(owner="idk_b"), "idk_a", bound_ok=True)
    seen = await ws.begin_idempotent(a_record(owner="idk_c"))
    assert seen is not None
    assert (seen.owner, seen.job_ids) == ("idk_b", ())


async def test_a_key_without_owner_from_before_the_upgrade_can_be_taken_over(ws: Store) -> None:
    await ws.begin_idempotent(a_record(owner=None))
    assert not await ws.take_over_idempotent(a_record(owner="idk_b"), "idk_x")
    assert await ws.take_over_idempotent(a_record(owner="idk_b"), None)


async def test_renew_extends_only_the_leases_this_worker_holds(ws: Store) -> None:
    for item_id in ("w_1", "w_2"):
        await ws.enqueue_work(an_item(item_id))
    await ws.claim_due_work(now=T0, worker_id="A", lease=LEASE, limit=1)
    await ws.claim_due_work(now=T0, worker_id="B", lease=LEASE, limit=1)
    assert await ws.renew_work(["w_1", "w_2", "w_missing"], "A", at(120)) == ["w_1"]
    # A's item is still held after its first lease would have run out; B's is free again.
    [again] = await ws.claim_due_work(now=at(60), worker_id="C", lease=LEASE, limit=5)
    assert again.id == "w_2"


async def test_a_send_phase_moves_only_from_the_phase_it_is_in(ws: Store) -> None:
    """``move_send_phase`` is a compare-and-set on the stored phase: of a send waking from its
    wait and a submit check settling the same row, exactly one wins."""
    ahead = [replace(a_message(job), phase="accepted") for job in ("job_1", "job_2", "job_3")]
    assert await ws.accept_messages(ahead)

    held = await ws.move_send_phase(
        "ws_1", True, ["job_1", "job_2"], source="accepted", target="waiting"
    )
    assert sorted(held) == ["job_1", "job_2"]
    again = await ws.move_send_phase("ws_1", True, ["job_1"], source="accepted", target="waiting")
    assert again == []
    other_mode = await ws.move_send_phase(
        "ws_1", False, ["job_2"], source="waiting", target="accepted"
    )
    assert other_mode == []
    back = await ws.move_send_phase(
        "ws_1", True, ["job_2", "job_3"], source="waiting", target="accepted"
    )
    assert back == ["job_2"]
    stored = {job: await ws.get_message("ws_1", True, job) for job in ("job_1", "job_2", "job_3")}
    assert {job: (r.phase, r.version) for job, r in stored.items() if r} == {
        "job_1": ("waiting", 1),
        "job_2": ("accepted", 2),
        "job_3": ("accepted", 0),
    }
