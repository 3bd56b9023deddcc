"""The ``Store`` contract of a batch of changes made by work items (``get_messages``,
``replace_messages``; the worker's simulated reports), on every backend."""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_store_contract import LEASE, T0, a_message, a_workspace, an_item, at

from unified_messaging._domain import MessageRecord
from unified_messaging.store.base import MessageChange, ProviderRef, Store


@pytest.fixture
async def ws(store: Store) -> Store:
    await store.create_workspace(a_workspace())
    await store.create_workspace(a_workspace("ws_2"))
    await store.insert_messages([a_message("job_1"), a_message("job_2"), a_message("job_3")])
    return store


async def claimed(store: Store, *item_ids: str, worker: str = "w") -> None:
    """Store the items (due at once) and let ``worker`` claim them."""
    await store.enqueue_work_many([an_item(i) for i in item_ids])
    got = await store.claim_due_work(now=T0, worker_id=worker, lease=LEASE, limit=50)
    assert {i.id for i in got} == set(item_ids)


def delivered(job_id: str, version: int = 1) -> MessageRecord:
    return replace(a_message(job_id), status="delivered", version=version, updated_at=at(5))


async def left_work(store: Store) -> set[str]:
    items = await store.claim_due_work(now=at(999), worker_id="later", lease=LEASE, limit=50)
    return {i.id for i in items}


async def test_get_messages_reads_many_each_in_its_own_workspace_and_mode(ws: Store) -> None:
    found = await ws.get_messages(
        [("ws_1", True, "job_1"), ("ws_1", True, "job_2"), ("ws_2", True, "job_3"),
         ("ws_1", False, "job_3"), ("ws_1", True, "job_9")]
    )  # fmt: skip
    assert sorted(found) == ["job_1", "job_2"]
    assert found["job_1"] == await ws.get_message("ws_1", True, "job_1")
    assert await ws.get_messages([]) == {}


async def test_a_batch_stores_every_change_its_work_and_deletes_its_items(ws: Store) -> None:
    await ws.add_provider_refs([ProviderRef("con_1", "pm_1", "job_1", "ws_1", True)])
    await claimed(ws, "a", "b", "c")
    event = an_item("evt_1", kind="event")
    written = await ws.replace_messages(
        [
            MessageChange(delivered("job_1"), work=[event], closed=[("con_1", "pm_1")], done="a"),
            MessageChange(delivered("job_2"), done="b"),
        ],
        worker_id="w",
        done=["c"],  # finished with nothing to change
    )
    assert (written.moved, written.lost) == ((), ())
    for job_id in ("job_1", "job_2"):
        stored = await ws.get_message("ws_1", True, job_id)
        assert stored is not None and (stored.status, stored.version) == ("delivered", 1)
    assert await left_work(ws) == {"evt_1"}
    ref = await ws.find_provider_ref("con_1", "pm_1")
    assert ref is not None and ref.open is False


async def test_a_moved_message_is_not_written_and_keeps_its_item(ws: Store) -> None:
    await claimed(ws, "a", "b")
    # Another writer (a cancel, a pushed report) changed job_2 first.
    assert await ws.replace_message(replace(a_message("job_2"), status="failed", version=1))
    written = await ws.replace_messages(
        [
            MessageChange(delivered("job_1"), done="a"),
            MessageChange(delivered("job_2"), work=[an_item("evt_2", kind="event")], done="b"),
        ],
        worker_id="w",
    )
    assert written.moved == ("job_2",) and written.lost == ()
    job_2 = await ws.get_message("ws_1", True, "job_2")
    assert job_2 is not None and job_2.status == "failed"
    assert (await ws.get_message("ws_1", True, "job_1")).status == "delivered"  # type: ignore[union-attr]
    assert await left_work(ws) == {"b"}  # no event of a change not stored; b to run again


async def test_a_gone_message_counts_as_moved(ws: Store) -> None:
    await claimed(ws, "a")
    written = await ws.replace_messages(
        [MessageChange(delivered("job_9"), done="a")], worker_id="w"
    )
    assert written.moved == ("job_9",)
    assert await left_work(ws) == {"a"}


async def test_an_item_lost_to_another_worker_writes_nothing(ws: Store) -> None:
    await claimed(ws, "a", "b")
    # b's lease ran out and another worker claimed it.
    await ws.enqueue_work_many([an_item("c")])
    taken = await ws.claim_due_work(now=at(LEASE.total_seconds() + 1), worker_id="other",
                                    lease=LEASE, limit=50)  # fmt: skip
    assert {i.id for i in taken} == {"a", "b", "c"}
    assert await ws.renew_work(["a"], "w", at(200)) == []  # a too: taken over
    # Give a back to w to mix a held and a lost item in one batch.
    assert await ws.reschedule_work("a", "other", T0)
    await ws.claim_due_work(now=at(LEASE.total_seconds() + 2), worker_id="w", lease=LEASE,
                            limit=1)  # fmt: skip
    written = await ws.replace_messages(
        [
            MessageChange(delivered("job_1"), done="a"),
            MessageChange(delivered("job_2"), work=[an_item("evt_2", kind="event")], done="b"),
        ],
        worker_id="w",
        done=["c"],
    )
    assert set(written.lost) == {"b", "c"} and written.moved == ()
    assert (await ws.get_message("ws_1", True, "job_1")).status == "delivered"  # type: ignore[union-attr]
    job_2 = await ws.get_message("ws_1", True, "job_2")
    assert job_2 is not None and (job_2.status, job_2.version) == ("queued", 0)
    later = await ws.claim_due_work(now=at(999), worker_id="x", lease=LEASE, limit=50)
    assert {i.id for i in later} == {"b", "c"}  # still there for their holder; no evt_2


async def test_a_change_without_an_item_is_a_plain_compare_and_set(ws: Store) -> None:
    written = await ws.replace_messages([MessageChange(delivered("job_1"))], worker_id="w")
    assert written.moved == ()
    again = await ws.replace_messages([MessageChange(delivered("job_1"))], worker_id="w")
    assert again.moved == ("job_1",)  # version 1 is stored: the same change moved on


async def test_two_changes_of_one_message_are_refused(ws: Store) -> None:
    with pytest.raises(ValueError, match="one change per job"):
        await ws.replace_messages(
            [MessageChange(delivered("job_1")), MessageChange(delivered("job_1", 2))],
            worker_id="w",
        )


async def test_find_reported_message_reads_the_ref_and_its_message(ws: Store) -> None:
    await ws.add_provider_refs(
        [
            ProviderRef("con_1", "pm_1", "job_1", "ws_1", True),
            ProviderRef("con_1", "pm_gone", "job_9", "ws_1", True),
            ProviderRef("con_1", "pm_test", "job_2", "ws_1", False),  # the message is live
        ]
    )
    found = await ws.find_reported_message("con_1", "pm_1")
    assert found is not None
    ref, message = found
    assert ref == await ws.find_provider_ref("con_1", "pm_1")
    assert message == await ws.get_message("ws_1", True, "job_1")
    gone = await ws.find_reported_message("con_1", "pm_gone")
    assert gone is not None and gone[1] is None
    other_mode = await ws.find_reported_message("con_1", "pm_test")
    assert other_mode is not None and other_mode[1] is None  # never across modes (D11)
    assert await ws.find_reported_message("con_1", "pm_unknown") is None
    assert await ws.find_reported_message("con_2", "pm_1") is None
