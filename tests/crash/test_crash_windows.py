"""A worker (or API process) that dies between two writes of one step, at exact points.

Each test lets the process "die" (``Crash``) right after one committed write, then runs a
fresh worker once the lease has run out, and asks for what D10/D19 promise: the message
still reaches a final state, and every status change is still announced. The SIGKILL test
in ``test_worker_crash.py`` hits these windows at random; here each is hit on purpose.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from _crash_support import Crash, CrashingStore

from unified_messaging import ManualClock, Messenger, Vault
from unified_messaging._errors import StorageUnavailable
from unified_messaging.providers.simulator import SimulatorSettings
from unified_messaging.store.memory import MemoryStore
from unified_messaging.testing import TestBed, create_testbed
from unified_messaging.webhooks._sender import TargetPolicy

TIMES_OUT = "+905550000008"
NORMAL = "+905551234567"
DLR_TIMEOUT = timedelta(minutes=1)
AFTER_LEASE = timedelta(minutes=3)  # the default lease is 2 minutes


@pytest.fixture
def store() -> CrashingStore:
    return CrashingStore(MemoryStore())


@pytest.fixture
async def bed(store: CrashingStore) -> TestBed:
    messenger = Messenger(
        store,  # type: ignore[arg-type]
        clock=ManualClock(),
        vault=Vault.generate(),  # a wrapped store is taken for a durable one (D21)
        webhook_policy=TargetPolicy(allow_private=True),
        simulator_settings=SimulatorSettings(report_delay=timedelta(0)),
        # A store "down" here stays down: the outcome write is not retried (see
        # test_an_outcome_write_waits_for_a_store_down_for_a_moment for when it comes back).
        outcome_retry=timedelta(0),
    )
    bed = await create_testbed(messenger=messenger)
    for connection in await messenger.store.list_connections(bed.workspace.id):
        await messenger.store.update_connection(replace(connection, dlr_timeout=DLR_TIMEOUT))
    # Nobody listens there: deliveries fail and are retried, which is all these tests need.
    await messenger.webhooks.create(bed.workspace.id, "http://127.0.0.1:9/hook")
    return bed


async def send(bed: TestBed, to: str, **extra: object) -> str:
    response = await bed.messenger.send(bed.principal, {"to": to, "body": "Merhaba", **extra})
    return response.job_id


async def die_in_next_item(bed: TestBed) -> None:
    """Run due items one by one (webhook items may come first) until the armed one dies."""
    worker = bed.messenger.worker(batch=1)
    with pytest.raises(Crash):  # noqa: PT012 - the loop ends in the crash
        for _ in range(20):
            await worker.run_once()


async def recover(bed: TestBed, rounds: int = 4) -> None:
    """Fresh workers after the lease ran out, until every time-out has passed."""
    for _ in range(rounds):
        await bed.settle(AFTER_LEASE)


async def status(bed: TestBed, job_id: str) -> tuple[str, list[tuple[str, str]]]:
    record = await bed.messenger.get_message(bed.principal, job_id)
    return record.status, [(a.provider, a.status) for a in record.attempts]


async def announced(bed: TestBed) -> list[str]:
    endpoint = (await bed.messenger.webhooks.list(bed.workspace.id))[0]
    return [d.event_type for d in await bed.messenger.webhooks.list_deliveries(endpoint.id)]


async def test_the_fixture_recovers_when_nothing_dies(bed: TestBed) -> None:
    job_id = await send(bed, TIMES_OUT, fallback=["sms_b"])
    await recover(bed)
    assert await status(bed, job_id) == ("unknown", [("sms_a", "unknown"), ("sms_b", "unknown")])


async def test_death_after_a_timeout_is_stored_still_falls_back(
    bed: TestBed, store: CrashingStore
) -> None:
    job_id = await send(bed, TIMES_OUT, fallback=["sms_b"])
    bed.clock.advance(DLR_TIMEOUT)  # type: ignore[attr-defined]
    store.arm("replace_message")

    await die_in_next_item(bed)
    await recover(bed)

    assert await status(bed, job_id) == ("unknown", [("sms_a", "unknown"), ("sms_b", "unknown")])


async def test_death_after_a_redispatch_is_stored_still_times_out(
    bed: TestBed, store: CrashingStore
) -> None:
    job_id = await send(bed, TIMES_OUT, fallback=["sms_b"])
    bed.clock.advance(DLR_TIMEOUT)  # type: ignore[attr-defined]
    # 1: the time-out, 2: the placeholder of the re-dispatch, 3: its accepted attempt.
    store.arm("replace_message", after=3)

    await die_in_next_item(bed)
    await recover(bed)

    assert await status(bed, job_id) == ("unknown", [("sms_a", "unknown"), ("sms_b", "unknown")])


async def test_death_after_a_report_is_stored_still_announces_it(
    bed: TestBed, store: CrashingStore
) -> None:
    job_id = await send(bed, NORMAL)
    store.arm("replace_message")

    await die_in_next_item(bed)  # the simulated report (delay 0) is due at once
    await recover(bed)

    assert (await status(bed, job_id))[0] == "delivered"
    assert "message.delivered" in await announced(bed)


async def test_death_after_a_batch_of_reports_is_stored_still_announces_them(
    bed: TestBed, store: CrashingStore
) -> None:
    # The simulated reports of many sends are stored in one transaction with
    # their events and their items' completion; dying right after it loses none of them.
    job_ids = [await send(bed, NORMAL), await send(bed, "+905551234568")]
    store.arm("replace_messages")

    worker = bed.messenger.worker(batch=50)
    with pytest.raises(Crash):
        await worker.run_once()
    await recover(bed)

    assert [(await status(bed, j))[0] for j in job_ids] == ["delivered", "delivered"]
    assert (await announced(bed)).count("message.delivered") == 2


async def test_death_after_a_delivery_row_is_stored_still_delivers_it(
    bed: TestBed, store: CrashingStore
) -> None:
    # The event is a work item stored with the send; the worker makes the first attempt,
    # then the delivery row (its retry item with it, the receiver being down) in one write
    # that also ends the event item, and dies right after it.
    await send(bed, NORMAL)
    store.arm("record_webhook_attempt")

    await die_in_next_item(bed)
    await recover(bed)

    endpoint = (await bed.messenger.webhooks.list(bed.workspace.id))[0]
    deliveries = await bed.messenger.webhooks.list_deliveries(endpoint.id)
    assert [(d.event_type, d.attempts > 0) for d in deliveries][:1] == [("message.sent", True)]


# -- the send path: write-ahead, outcome, and what a retry sees


async def test_death_after_the_write_ahead_ends_unknown_and_announces_it(
    bed: TestBed, store: CrashingStore
) -> None:
    store.arm("accept_messages")
    with pytest.raises(Crash):
        await send(bed, NORMAL)
    [record] = list(store._inner._messages.values())  # type: ignore[attr-defined]
    assert record.status == "queued"

    await recover(bed)

    assert await status(bed, record.job_id) == ("unknown", [("sms_a", "unknown")])
    final = await bed.messenger.get_message(bed.principal, record.job_id)
    assert final.error is not None
    assert final.error.code == "SUBMIT_INTERRUPTED"
    assert "message.unknown" in await announced(bed)


async def test_an_outcome_write_waits_for_a_store_down_for_a_moment(
    store: CrashingStore,
) -> None:
    # The default bound (half the submit time-out): the store refuses twice, then answers.
    messenger = Messenger(store, clock=ManualClock(), vault=Vault.generate())  # type: ignore[arg-type]
    bed = await create_testbed(messenger=messenger)
    inner = store._inner  # type: ignore[attr-defined]
    kept, refusals = inner.finish_messages, []

    async def down_twice(*args: object, **kwargs: object) -> list[str]:
        if len(refusals) < 2:
            refusals.append(1)
            raise StorageUnavailable("The message store is unavailable: down for the test")
        return await kept(*args, **kwargs)  # type: ignore[no-any-return]

    inner.finish_messages = down_twice
    response = await messenger.send(bed.principal, {"to": NORMAL, "body": "Merhaba"})

    assert len(refusals) == 2
    assert response.status == "sent"
    assert await status(bed, response.job_id) == ("sent", [("sms_a", "accepted")])
    await messenger.aclose()


async def test_an_outcome_the_store_could_not_keep_is_settled_by_its_check(
    bed: TestBed, store: CrashingStore
) -> None:
    async def store_down(*args: object, **kwargs: object) -> list[str]:
        raise StorageUnavailable("The message store is unavailable: down for the test")

    inner = store._inner  # type: ignore[attr-defined]
    kept = inner.finish_messages
    inner.finish_messages = store_down
    response = await bed.messenger.send(bed.principal, {"to": NORMAL, "body": "Merhaba"})
    inner.finish_messages = kept
    # The caller hears what the provider said; the row is still as written ahead...
    assert response.status == "sent"
    assert await status(bed, response.job_id) == ("queued", [])

    await recover(bed)  # ...until the store is back and the check has run.

    # One attempt: it was never handed over again.
    assert await status(bed, response.job_id) == ("unknown", [("sms_a", "unknown")])


async def test_an_outcome_after_the_check_replaces_submit_interrupted(
    bed: TestBed, store: CrashingStore
) -> None:
    # A provider slower than the submit time-out: the check ends the row first, then the
    # send's own outcome, the truth, replaces it.
    inner = store._inner  # type: ignore[attr-defined]
    kept = inner.finish_messages

    async def check_runs_first(*args: object, **kwargs: object) -> list[str]:
        inner.finish_messages = kept
        await bed.settle(AFTER_LEASE)
        return await kept(*args, **kwargs)  # type: ignore[no-any-return]

    inner.finish_messages = check_runs_first
    job_id = await send(bed, NORMAL)

    record = await bed.messenger.get_message(bed.principal, job_id)
    assert (record.status, record.error) == ("sent", None)
    assert [a.status for a in record.attempts] == ["accepted"]
    await bed.settle()  # its simulated report still finds it
    assert (await status(bed, job_id))[0] == "delivered"
