"""D7's opt-in: with ``retry_unavailable``, an unreachable chain answers ``queued`` and the
worker keeps trying it with backoff until the TTL (10 min), then ends it ``failed``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta

import pytest

from unified_messaging import ManualClock, Messenger, ProviderUnavailable, RequestInvalid
from unified_messaging._domain import Connection
from unified_messaging.providers.base import SubmitOutcome, SubmitRequest
from unified_messaging.providers.simulator import Simulator, SimulatorSettings
from unified_messaging.testing import TestBed, create_testbed

UNREACHABLE = "+905550000003"


class FlakyAdapter(Simulator):
    """A live adapter whose provider is down for the first ``down`` submissions."""

    def __init__(self, connection: Connection, clock: ManualClock, down: int) -> None:
        super().__init__(connection.provider, clock=clock, settings=SimulatorSettings())
        self.down = down
        self.calls: list[int] = []

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        self.calls.append(request.attempt)
        if len(self.calls) <= self.down:
            return SubmitOutcome.unavailable("down (test)")
        return await super().submit(request)

    async def submit_batch(self, requests: Sequence[SubmitRequest]) -> list[SubmitOutcome]:
        return [await self.submit(r) for r in requests]


async def test_an_unreachable_chain_is_queued_and_fails_at_the_ttl() -> None:
    bed: TestBed = await create_testbed()
    await bed.messenger.workspaces.set_retry_unavailable(bed.workspace.id, True)
    principal = await bed.messenger.principal(bed.workspace.id, livemode=False)

    sent = await bed.messenger.send(principal, {"to": UNREACHABLE, "body": "x"})

    assert sent.status == "queued"
    rounds = 0
    while (await bed.messenger.get_message(principal, sent.job_id)).status == "queued":
        assert rounds < 20, "still queued long after the TTL"
        await bed.settle(timedelta(seconds=30))
        rounds += 1
    record = await bed.messenger.get_message(principal, sent.job_id)
    assert record.status == "failed"
    assert record.error is not None and record.error.code == "PROVIDER_UNAVAILABLE"
    assert bed.clock.now() - record.created_at >= timedelta(minutes=10)
    assert bed.clock.now() - record.created_at <= timedelta(minutes=11)
    assert len(record.attempts) >= 4  # backoff: 5 s, 10 s, 20 s … within 10 minutes
    assert [s.attempt for s in bed.outbox] == list(range(len(record.attempts)))


async def test_without_the_opt_in_it_is_still_502(um_testbed: TestBed) -> None:
    with pytest.raises(ProviderUnavailable):
        await um_testbed.messenger.send(um_testbed.principal, {"to": UNREACHABLE, "body": "x"})


@pytest.mark.parametrize("down", [1, 3])
async def test_a_provider_back_up_takes_the_queued_message_for_one_quota_unit(down: int) -> None:
    clock = ManualClock()
    adapters: dict[str, FlakyAdapter] = {}

    def flaky(connection: Connection, credentials: Mapping[str, str]) -> FlakyAdapter:
        return adapters.setdefault(connection.id, FlakyAdapter(connection, clock, down))

    messenger = Messenger(clock=clock, live_adapters={"sms_a": flaky})
    workspace = await messenger.workspaces.create("Acme", monthly_quota=3)
    await messenger.workspaces.set_retry_unavailable(workspace.id, True)
    await messenger.connections.add(workspace.id, "sms_a", default_sender="ACME",
                                   credentials={"any": "thing"})  # fmt: skip
    key = await messenger.keys.create(workspace.id, livemode=True)
    auth = await messenger.authenticate(key.secret)
    period = clock.now().strftime("%Y-%m")

    sent = await messenger.send(auth, {"to": "+905551234567", "body": "x"})
    assert sent.status == "queued"
    assert await messenger.store.quota_used(workspace.id, period) == 1  # held while queued

    worker = messenger.worker()
    for _ in range(down + 2):
        clock.advance(timedelta(seconds=60))
        await worker.run_until_idle()

    record = await messenger.get_message(auth, sent.job_id)
    assert record.status in ("sent", "delivered")  # delivered once a poll found its report
    assert [a.status for a in record.attempts][:down] == ["unavailable"] * down
    assert len(record.attempts) == down + 1
    (adapter,) = adapters.values()
    assert adapter.calls == list(range(down + 1))  # each try once, numbered in order
    assert await messenger.store.quota_used(workspace.id, period) == 1


async def test_a_live_message_given_up_gives_its_quota_unit_back() -> None:
    clock = ManualClock()

    def down(connection: Connection, credentials: Mapping[str, str]) -> FlakyAdapter:
        return FlakyAdapter(connection, clock, down=10**6)

    messenger = Messenger(clock=clock, live_adapters={"sms_a": down})
    workspace = await messenger.workspaces.create("Acme", monthly_quota=3)
    await messenger.workspaces.set_retry_unavailable(workspace.id, True)
    await messenger.connections.add(workspace.id, "sms_a", default_sender="ACME",
                                   credentials={"any": "thing"})  # fmt: skip
    key = await messenger.keys.create(workspace.id, livemode=True)
    auth = await messenger.authenticate(key.secret)
    sent = await messenger.send(auth, {"to": "+905551234567", "body": "x"})

    worker = messenger.worker()
    for _ in range(30):
        clock.advance(timedelta(seconds=30))
        await worker.run_until_idle()

    assert (await messenger.get_message(auth, sent.job_id)).status == "failed"
    assert await messenger.store.quota_used(workspace.id, clock.now().strftime("%Y-%m")) == 0


@pytest.mark.parametrize("ttl", [timedelta(minutes=2), timedelta(minutes=25)])
async def test_a_queued_message_is_retried_for_its_workspaces_queue_ttl(ttl: timedelta) -> None:
    bed: TestBed = await create_testbed()
    await bed.messenger.workspaces.set_retry_unavailable(bed.workspace.id, True)
    await bed.messenger.workspaces.set_queue_ttl(bed.workspace.id, ttl)
    principal = await bed.messenger.principal(bed.workspace.id, livemode=False)
    sent = await bed.messenger.send(principal, {"to": UNREACHABLE, "body": "x"})

    await bed.settle(ttl - timedelta(seconds=1))
    await bed.settle()
    assert (await bed.messenger.get_message(principal, sent.job_id)).status == "queued"
    await bed.settle(timedelta(seconds=1))
    await bed.settle()  # the last round, due at the TTL itself

    record = await bed.messenger.get_message(principal, sent.job_id)
    assert record.status == "failed"
    assert record.final_at is not None and record.final_at - record.created_at == ttl


@pytest.mark.parametrize("ttl", [timedelta(0), timedelta(seconds=-1), timedelta(days=8)])
async def test_a_queue_ttl_out_of_range_is_refused_and_changes_nothing(
    um_testbed: TestBed, ttl: timedelta
) -> None:
    with pytest.raises(RequestInvalid) as refused:
        await um_testbed.messenger.workspaces.set_queue_ttl(um_testbed.workspace.id, ttl)
    assert refused.value.details[0].field == "queue_ttl"
    with pytest.raises(RequestInvalid):
        await um_testbed.messenger.workspaces.create("Acme", queue_ttl=ttl)
    stored = await um_testbed.messenger.workspaces.get(um_testbed.workspace.id)
    assert stored.queue_ttl == timedelta(minutes=10)


async def test_a_chatbot_message_the_worker_hands_over_is_delivered_at_once() -> None:
    """D10 for the chatbot channel: the bot API's success is the final answer, whoever makes
    the call. A message queued by D7 and sent by the worker used to end ``sent``, then
    ``unknown`` when its (never coming) report timed out."""
    clock = ManualClock()
    adapters: dict[str, FlakyAdapter] = {}

    def flaky(connection: Connection, credentials: Mapping[str, str]) -> FlakyAdapter:
        return adapters.setdefault(connection.id, FlakyAdapter(connection, clock, 1))

    messenger = Messenger(clock=clock, live_adapters={"chatbot": flaky})
    workspace = await messenger.workspaces.create("Acme")
    await messenger.workspaces.set_retry_unavailable(workspace.id, True)
    await messenger.connections.add(workspace.id, "chatbot", credentials={"bot_token": "1:a"})
    key = await messenger.keys.create(workspace.id, livemode=True)
    auth = await messenger.authenticate(key.secret)

    sent = await messenger.send(auth, {"to": "@acme_channel", "body": "Selam"})
    assert sent.status == "queued"
    worker = messenger.worker()
    clock.advance(timedelta(seconds=60))
    await worker.run_until_idle()

    record = await messenger.get_message(auth, sent.job_id)
    assert record.status == "delivered"
    assert record.final_at is not None and record.sent_at == record.final_at
    assert [a.status for a in record.attempts] == ["unavailable", "delivered"]
    clock.advance(timedelta(hours=25))  # past the DLR time-out (24 h)
    await worker.run_until_idle()
    assert (await messenger.get_message(auth, sent.job_id)).status == "delivered"
