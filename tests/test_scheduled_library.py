"""Scheduled sends and cancel through the library: ``Messenger`` on the testbed's
ManualClock (test mode: the simulator takes the hand-over), and ``SyncMessenger``, its twin."""

from __future__ import annotations

from datetime import timedelta

import pytest

from unified_messaging import MessageNotCancelable, SyncMessenger
from unified_messaging.testing import TestBed, create_testbed

NUMBER = "+905321234567"
UNREACHABLE = "+905550000003"  # the simulated provider times out


async def test_a_scheduled_send_is_handed_over_at_its_time_and_delivered(
    um_testbed: TestBed,
) -> None:
    bed = um_testbed
    due = bed.clock.now() + timedelta(hours=1)

    answer = await bed.messenger.send(bed.principal, {"to": NUMBER, "body": "x", "send_at": due})

    assert (answer.status, answer.send_at) == ("queued", due)
    await bed.settle(timedelta(minutes=59))
    assert len(bed.outbox) == 0
    assert (await bed.messenger.get_message(bed.principal, answer.job_id)).status == "queued"
    await bed.settle(timedelta(minutes=1))
    record = await bed.messenger.get_message(bed.principal, answer.job_id)
    assert (record.status, record.send_at, len(bed.outbox)) == ("delivered", due, 1)
    assert record.sent_at == due


async def test_a_message_waiting_for_a_retry_can_be_canceled_and_is_not_retried() -> None:
    bed = await create_testbed()
    await bed.messenger.workspaces.set_retry_unavailable(bed.workspace.id, True)
    principal = await bed.messenger.principal(bed.workspace.id, livemode=False)
    queued = await bed.messenger.send(principal, {"to": UNREACHABLE, "body": "x"})
    assert queued.status == "queued"
    tries = len(bed.outbox)

    canceled = await bed.messenger.cancel_message(principal, queued.job_id)
    await bed.settle(timedelta(minutes=15))

    assert canceled.error is not None and canceled.error.code == "CANCELED"
    record = await bed.messenger.get_message(principal, queued.job_id)
    assert (record.status, len(record.attempts)) == ("failed", tries)
    assert len(bed.outbox) == tries  # no retry after the cancel


def test_the_sync_twin_schedules_and_cancels(um_testbed: TestBed) -> None:
    bed = um_testbed
    due = bed.clock.now() + timedelta(days=2)
    with SyncMessenger(bed.messenger) as sync:
        waiting = sync.send(bed.principal, {"to": NUMBER, "body": "x", "send_at": due})
        bulk = sync.send_bulk(bed.principal, {"items": [{"to": NUMBER, "body": "y"}],
                                              "send_at": due.isoformat()})  # fmt: skip
        canceled = sync.cancel_message(bed.principal, waiting.job_id)
        sent = sync.send(bed.principal, {"to": "+905321234568", "body": "now"})
        with pytest.raises(MessageNotCancelable):
            sync.cancel_message(bed.principal, sent.job_id)

    assert waiting.status == bulk.results[0].status == "queued"
    assert canceled.error is not None and canceled.error.code == "CANCELED"
