"""The webhook outbox (D19) end to end: emit, the worker, a real loopback receiver, and both
our verifier and the independent ``standardwebhooks`` package checking what arrives.

Time is a ``ManualClock`` driving the schedule; the sender signs with the real time, so the
verifiers' five-minute tolerance holds whatever the manual clock says.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

import pytest
from _webhook_support import LOOPBACK, Answer, Receiver, message_record, running_receiver
from standardwebhooks.webhooks import Webhook as ReferenceWebhook
from standardwebhooks.webhooks import WebhookVerificationError

from unified_messaging import ManualClock, Messenger
from unified_messaging._lifecycle.rules import EventType
from unified_messaging._lifecycle.worker import DEFAULT_LEASE, Worker
from unified_messaging._responses import status_record
from unified_messaging.store.base import Store, WebhookDelivery, WebhookEndpoint, WorkItem
from unified_messaging.store.memory import MemoryStore
from unified_messaging.store.sql import SqlStore
from unified_messaging.vault._core import Vault
from unified_messaging.webhooks import WebhookVerificationError as VerificationFailed
from unified_messaging.webhooks import verify
from unified_messaging.webhooks._outbox import WORK_KIND, WebhookOutbox, webhook_secrets
from unified_messaging.webhooks._sender import WebhookSender
from unified_messaging.webhooks._signing import format_timestamp

SECONDS = timedelta(seconds=1)


@dataclass
class Bed:
    clock: ManualClock
    vault: Vault
    store: Store
    messenger: Messenger
    sender: WebhookSender
    receiver: Receiver
    workspace_id: str
    db_path: Path | None

    def outbox(
        self,
        *,
        schedule: Sequence[timedelta] = (5 * SECONDS, 300 * SECONDS),
        disable_after: timedelta = timedelta(days=5),
        store: Store | None = None,
    ) -> WebhookOutbox:
        return WebhookOutbox(
            store or self.store,
            self.vault,
            self.clock,
            sender=self.sender,
            schedule=schedule,
            disable_after=disable_after,
        )

    def worker(self, outbox: WebhookOutbox, store: Store | None = None) -> Worker:
        return Worker(store or self.store, self.clock, {WORK_KIND: outbox.handle})

    async def add(self, *, events: Sequence[str] | None = None) -> tuple[str, str]:
        """A new endpoint on the receiver: (endpoint id, secret)."""
        created = await self.messenger.webhooks.create(
            self.workspace_id, self.receiver.url(), events=events
        )
        return created.endpoint.id, created.secret

    async def deliveries(self, endpoint_id: str) -> list[WebhookDelivery]:
        return await self.messenger.webhooks.list_deliveries(endpoint_id)

    async def get(self, endpoint_id: str) -> WebhookEndpoint:
        return await self.messenger.webhooks.get(endpoint_id)


@pytest.fixture(params=["memory", "sqlite"])
async def bed(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Bed]:
    clock = ManualClock()
    vault = Vault.generate()
    db_path = tmp_path / "store.db" if request.param == "sqlite" else None
    store: Store = MemoryStore() if db_path is None else SqlStore(f"sqlite+aiosqlite:///{db_path}")
    async with (
        running_receiver() as receiver,
        WebhookSender(policy=LOOPBACK) as sender,
        Messenger(store, clock=clock, vault=vault, webhook_policy=LOOPBACK) as messenger,
    ):
        workspace = await messenger.workspaces.create("Acme")
        yield Bed(clock, vault, store, messenger, sender, receiver, workspace.id, db_path)


async def emit_and_run(
    bed: Bed, outbox: WebhookOutbox, event: EventType = "message.delivered"
) -> int:
    queued = await outbox.emit(message_record(bed.workspace_id), event)
    await bed.worker(outbox).run_until_idle()
    return queued


async def advance_and_run(bed: Bed, outbox: WebhookOutbox, delta: timedelta) -> None:
    bed.clock.advance(delta)
    await bed.worker(outbox).run_until_idle()


# --------------------------------------------------------------------------- arrival


async def test_an_event_arrives_and_both_verifiers_accept_it(bed: Bed) -> None:
    endpoint_id, secret = await bed.add()

    assert await emit_and_run(bed, bed.outbox()) == 1

    [request] = bed.receiver.received
    verified = verify(request.body, request.headers, secret)
    ReferenceWebhook(secret).verify(request.body, request.headers)
    assert verified["type"] == "message.delivered"
    [delivery] = await bed.deliveries(endpoint_id)
    assert request.headers["webhook-id"] == delivery.event_id
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("delivered", 1, 200)


async def test_the_body_is_the_status_record_with_livemode(bed: Bed) -> None:
    await bed.add()

    await emit_and_run(bed, bed.outbox())

    event = json.loads(bed.receiver.received[0].body)
    assert list(event) == ["type", "timestamp", "data"]
    assert event["timestamp"] == "2026-01-01T00:00:00Z"
    assert event["data"]["job_id"] == "job_01TESTWEBHOOK"
    assert event["data"]["status"] == "delivered"
    assert event["data"]["livemode"] is False


async def test_one_event_has_one_webhook_id_at_every_endpoint(bed: Bed) -> None:
    first, _ = await bed.add()
    second, _ = await bed.add()

    assert await emit_and_run(bed, bed.outbox()) == 2

    ids = {request.headers["webhook-id"] for request in bed.receiver.received}
    assert len(bed.receiver.received) == 2
    assert len(ids) == 1
    [a], [b] = await bed.deliveries(first), await bed.deliveries(second)
    assert a.event_id == b.event_id and a.id != b.id


async def test_a_workspace_without_endpoints_queues_nothing(bed: Bed) -> None:
    assert await emit_and_run(bed, bed.outbox()) == 0
    assert bed.receiver.received == []


async def test_unsubscribed_events_are_not_sent(bed: Bed) -> None:
    failed_only, _ = await bed.add(events=["message.failed"])
    everything, _ = await bed.add()

    assert await emit_and_run(bed, bed.outbox(), "message.delivered") == 1
    assert await emit_and_run(bed, bed.outbox(), "message.failed") == 2

    assert [d.event_type for d in await bed.deliveries(failed_only)] == ["message.failed"]
    assert len(await bed.deliveries(everything)) == 2
    assert len(bed.receiver.received) == 3


async def test_a_disabled_endpoint_gets_nothing(bed: Bed) -> None:
    endpoint_id, _ = await bed.add()
    endpoint = await bed.get(endpoint_id)
    await bed.store.update_webhook_endpoint(replace(endpoint, enabled=False))

    assert await emit_and_run(bed, bed.outbox()) == 0
    assert bed.receiver.received == []


async def test_a_delivery_due_after_its_endpoint_was_disabled_is_not_sent(bed: Bed) -> None:
    endpoint_id, _ = await bed.add()
    outbox = bed.outbox()
    await outbox.emit(message_record(bed.workspace_id), "message.sent")
    endpoint = await bed.get(endpoint_id)
    await bed.store.update_webhook_endpoint(replace(endpoint, enabled=False))

    await bed.worker(outbox).run_until_idle()

    assert bed.receiver.received == []
    [delivery] = await bed.deliveries(endpoint_id)
    assert delivery.status == "disabled"


async def test_the_work_of_a_removed_endpoint_ends_quietly(bed: Bed) -> None:
    endpoint_id, _ = await bed.add()
    outbox = bed.outbox()
    await outbox.emit(message_record(bed.workspace_id), "message.sent")
    await bed.messenger.webhooks.remove(endpoint_id)

    await bed.worker(outbox).run_until_idle()

    assert bed.receiver.received == []
    assert (
        await bed.store.claim_due_work(
            now=bed.clock.now() + timedelta(days=30), worker_id="probe", lease=SECONDS, limit=10
        )
        == []
    )


# --------------------------------------------------------------------------- retries


async def test_failures_are_retried_on_the_schedule_under_the_same_webhook_id(bed: Bed) -> None:
    endpoint_id, secret = await bed.add()
    bed.receiver.answer(Answer(500), Answer(503))
    outbox = bed.outbox(schedule=(5 * SECONDS, 300 * SECONDS))

    await emit_and_run(bed, outbox)
    await advance_and_run(bed, outbox, 4 * SECONDS)
    assert len(bed.receiver.received) == 1
    await advance_and_run(bed, outbox, 1 * SECONDS)
    assert len(bed.receiver.received) == 2
    [delivery] = await bed.deliveries(endpoint_id)
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("pending", 2, 503)
    assert delivery.next_attempt_at == bed.clock.now() + 300 * SECONDS
    await advance_and_run(bed, outbox, 300 * SECONDS)

    requests = bed.receiver.received
    assert len(requests) == 3
    assert len({r.headers["webhook-id"] for r in requests}) == 1
    for request in requests:
        verify(request.body, request.headers, secret)
    [delivery] = await bed.deliveries(endpoint_id)
    assert (delivery.status, delivery.attempts, delivery.last_error) == ("delivered", 3, None)
    assert (await bed.get(endpoint_id)).failing_since is None


async def test_a_failure_marks_the_endpoint_failing_until_a_success(bed: Bed) -> None:
    endpoint_id, _ = await bed.add()
    bed.receiver.answer(Answer(500))
    outbox = bed.outbox()
    started = bed.clock.now()

    await emit_and_run(bed, outbox)
    assert (await bed.get(endpoint_id)).failing_since == started
    await advance_and_run(bed, outbox, 5 * SECONDS)
    assert (await bed.get(endpoint_id)).failing_since is None


async def test_retry_after_lengthens_the_wait(bed: Bed) -> None:
    endpoint_id, _ = await bed.add()
    bed.receiver.answer(Answer(429, headers={"retry-after": "60"}))
    outbox = bed.outbox(schedule=(5 * SECONDS, 300 * SECONDS))

    await emit_and_run(bed, outbox)
    [delivery] = await bed.deliveries(endpoint_id)
    assert delivery.next_attempt_at == bed.clock.now() + 60 * SECONDS
    await advance_and_run(bed, outbox, 59 * SECONDS)
    assert len(bed.receiver.received) == 1
    await advance_and_run(bed, outbox, 1 * SECONDS)
    assert len(bed.receiver.received) == 2


@pytest.mark.parametrize("value", ["\u00b2", "\u00b9\u00b3", "99999999999", "soon"])
async def test_an_unreadable_retry_after_is_a_failed_attempt_on_the_schedule(
    bed: Bed, value: str
) -> None:
    # "²".isdigit() is true and float("²") raises; the attempt must still
    # count (on the schedule, marking the endpoint failing), never raise out of the sender.
    endpoint_id, _ = await bed.add()
    bed.receiver.answer(Answer(503, headers={"retry-after": value}))
    outbox = bed.outbox(schedule=(5 * SECONDS, 300 * SECONDS))

    await emit_and_run(bed, outbox)
    [delivery] = await bed.deliveries(endpoint_id)
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("pending", 1, 503)
    wait = 300 * SECONDS if value.isascii() and value.isdigit() else 5 * SECONDS  # capped
    assert delivery.next_attempt_at == bed.clock.now() + wait
    assert (await bed.get(endpoint_id)).failing_since == bed.clock.now()


async def test_a_spent_schedule_fails_the_delivery_but_keeps_the_endpoint(bed: Bed) -> None:
    endpoint_id, _ = await bed.add()
    bed.receiver.answer(Answer(500), Answer(500))
    outbox = bed.outbox(schedule=(5 * SECONDS,))

    await emit_and_run(bed, outbox)
    await advance_and_run(bed, outbox, 5 * SECONDS)
    await advance_and_run(bed, outbox, timedelta(days=1))

    assert len(bed.receiver.received) == 2
    [delivery] = await bed.deliveries(endpoint_id)
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("failed", 2, 500)
    assert delivery.last_error is not None and delivery.last_error.startswith("HTTP 500")
    assert (await bed.get(endpoint_id)).enabled


async def test_a_redirect_is_not_followed_and_counts_as_a_failure(bed: Bed) -> None:
    endpoint_id, _ = await bed.add()
    bed.receiver.answer(Answer(301, headers={"location": "/elsewhere"}))

    await emit_and_run(bed, bed.outbox())

    assert [r.path for r in bed.receiver.received] == ["/hook"]
    [delivery] = await bed.deliveries(endpoint_id)
    assert (delivery.status, delivery.last_status_code) == ("pending", 301)


async def test_410_gone_disables_the_endpoint_at_once(bed: Bed) -> None:
    endpoint_id, _ = await bed.add()
    bed.receiver.answer(Answer(410))
    outbox = bed.outbox()

    await emit_and_run(bed, outbox)

    endpoint = await bed.get(endpoint_id)
    assert not endpoint.enabled and endpoint.disabled_at == bed.clock.now()
    [delivery] = await bed.deliveries(endpoint_id)
    assert (delivery.status, delivery.last_status_code) == ("failed", 410)
    assert await emit_and_run(bed, outbox) == 0
    assert len(bed.receiver.received) == 1


async def test_five_days_of_failure_disable_the_endpoint(bed: Bed) -> None:
    endpoint_id, _ = await bed.add()
    bed.receiver.answer(*[Answer(503)] * 20)
    outbox = bed.outbox(schedule=[timedelta(days=1)] * 10)

    await emit_and_run(bed, outbox)
    for _ in range(4):
        await advance_and_run(bed, outbox, timedelta(days=1))
    assert (await bed.get(endpoint_id)).enabled
    await advance_and_run(bed, outbox, timedelta(days=1))

    endpoint = await bed.get(endpoint_id)
    assert not endpoint.enabled
    [delivery] = await bed.deliveries(endpoint_id)
    assert (delivery.status, delivery.attempts) == ("failed", 6)
    await advance_and_run(bed, outbox, timedelta(days=1))
    assert len(bed.receiver.received) == 6


async def test_re_enabling_restarts_delivery(bed: Bed) -> None:
    endpoint_id, _ = await bed.add()
    bed.receiver.answer(Answer(410))
    outbox = bed.outbox()
    await emit_and_run(bed, outbox)

    await bed.messenger.webhooks.enable(endpoint_id)

    assert await emit_and_run(bed, outbox) == 1
    assert [d.status for d in await bed.deliveries(endpoint_id)] == ["failed", "delivered"]


# --------------------------------------------------------------------------- rotation


async def test_rotation_signs_with_both_secrets_until_the_overlap_ends(bed: Bed) -> None:
    endpoint_id, old = await bed.add()
    rotated = await bed.messenger.webhooks.rotate_secret(endpoint_id, overlap=timedelta(hours=1))
    new = rotated.secret
    outbox = bed.outbox()

    await emit_and_run(bed, outbox)
    during = bed.receiver.received[-1]
    assert len(during.headers["webhook-signature"].split()) == 2
    for secret in (old, new):
        verify(during.body, during.headers, secret)
        ReferenceWebhook(secret).verify(during.body, during.headers)

    bed.clock.advance(timedelta(hours=1))
    await emit_and_run(bed, outbox)
    after = bed.receiver.received[-1]
    assert len(after.headers["webhook-signature"].split()) == 1
    verify(after.body, after.headers, new)
    ReferenceWebhook(new).verify(after.body, after.headers)
    with pytest.raises(VerificationFailed):
        verify(after.body, after.headers, old)
    with pytest.raises(WebhookVerificationError):
        ReferenceWebhook(old).verify(after.body, after.headers)


async def test_rotation_without_overlap_retires_the_old_secret_at_once(bed: Bed) -> None:
    endpoint_id, old = await bed.add()
    rotated = await bed.messenger.webhooks.rotate_secret(endpoint_id, overlap=timedelta(0))

    assert webhook_secrets(bed.vault, rotated.endpoint, now=bed.clock.now()) == [rotated.secret]
    assert rotated.secret != old


# --------------------------------------------------------------------------- durability


@pytest.mark.parametrize("bed", ["sqlite"], indirect=True)
async def test_a_restart_continues_pending_deliveries(bed: Bed) -> None:
    assert bed.db_path is not None
    endpoint_id, secret = await bed.add()
    bed.receiver.answer(Answer(500))
    await emit_and_run(bed, bed.outbox())
    assert len(bed.receiver.received) == 1

    reopened = SqlStore(f"sqlite+aiosqlite:///{bed.db_path}")
    await reopened.open()
    try:
        outbox = bed.outbox(store=reopened)
        bed.clock.advance(5 * SECONDS)
        await bed.worker(outbox, reopened).run_until_idle()
        [delivery] = await reopened.list_webhook_deliveries(endpoint_id)
    finally:
        await reopened.close()

    first, second = bed.receiver.received
    assert first.headers["webhook-id"] == second.headers["webhook-id"] == delivery.event_id
    verify(second.body, second.headers, secret)
    assert (delivery.status, delivery.attempts) == ("delivered", 2)


async def test_handling_a_delivered_item_again_does_not_resend(bed: Bed) -> None:
    await bed.add()
    outbox = bed.outbox()
    await outbox.emit(message_record(bed.workspace_id), "message.sent")
    [item] = await bed.store.claim_due_work(
        now=bed.clock.now(), worker_id="w1", lease=SECONDS, limit=10
    )

    assert await outbox.handle(item) is None
    assert await outbox.handle(item) is None

    assert len(bed.receiver.received) == 1


async def test_handling_an_item_before_its_retry_is_due_does_not_send(bed: Bed) -> None:
    await bed.add()
    bed.receiver.answer(Answer(500))
    outbox = bed.outbox()
    await outbox.emit(message_record(bed.workspace_id), "message.sent")
    [item] = await bed.store.claim_due_work(
        now=bed.clock.now(), worker_id="w1", lease=SECONDS, limit=10
    )

    due = await outbox.handle(item)
    again = await outbox.handle(item)

    assert due == again == bed.clock.now() + 5 * SECONDS
    assert len(bed.receiver.received) == 1


# --------------------------------------------------------------------------- secrecy


async def test_secrets_never_appear_in_reprs_or_logs(
    bed: Bed, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    created = await bed.messenger.webhooks.create(bed.workspace_id, bed.receiver.url())
    rotated = await bed.messenger.webhooks.rotate_secret(created.endpoint.id)
    bed.receiver.answer(Answer(500), Answer(410))
    outbox = bed.outbox()
    await emit_and_run(bed, outbox)
    await advance_and_run(bed, outbox, 5 * SECONDS)
    endpoint = await bed.get(created.endpoint.id)
    deliveries = await bed.deliveries(endpoint.id)

    ours = [r.getMessage() for r in caplog.records if r.name.startswith("unified_messaging")]
    reprs = [repr(created), repr(rotated), repr(endpoint), repr(deliveries), repr(outbox)]
    assert any("disabled" in line for line in ours)  # the 410 was logged
    # Everything logged, the database driver's DEBUG lines included, never holds a secret.
    for secret in (created.secret, rotated.secret):
        assert secret.removeprefix("whsec_") not in caplog.text + " ".join(reprs)
    # Even the sealed form stays out of our own reprs and log lines.
    for token in (endpoint.secret_ciphertext, endpoint.previous_secret_ciphertext):
        assert token is not None
        assert token not in " ".join(ours + reprs)


# --------------------------------------------------------------------------- first attempt inline


async def pending_work(bed: Bed) -> list[str]:
    """Ids of every work item, whatever its due time or lease (claimed far in the future)."""
    later = bed.clock.now() + timedelta(days=30)
    items = await bed.store.claim_due_work(now=later, worker_id="probe", lease=SECONDS, limit=99)
    return [item.id for item in items]


async def emit_now(bed: Bed, outbox: WebhookOutbox) -> int:
    """What the lifecycle's event item does, run by a worker: queue and attempt at once."""
    document = status_record(message_record(bed.workspace_id)).to_dict()
    queued: list[int] = []

    async def event(item: WorkItem) -> None:
        queued.append(
            await outbox.emit_document(
                bed.workspace_id, "message.sent", document, event_id="evt_job_1_2_sent"
            )
        )

    now = bed.clock.now()
    await bed.store.enqueue_work(WorkItem("evt_1", "event", "job_1", due_at=now, created_at=now))
    # The event handler alone: a webhook work item can only be run inside it, inline.
    assert await Worker(bed.store, bed.clock, {"event": event}).run_once() == 1
    return queued[0]


async def test_outside_a_worker_emit_document_only_queues(bed: Bed) -> None:
    await bed.add()
    document = status_record(message_record(bed.workspace_id)).to_dict()
    outbox = bed.outbox()
    assert await outbox.emit_document(bed.workspace_id, "message.sent", document, event_id="e") == 1
    assert bed.receiver.received == []
    await bed.worker(outbox).run_until_idle()
    assert len(bed.receiver.received) == 1


async def test_an_event_handled_by_the_worker_is_delivered_within_the_handler(bed: Bed) -> None:
    first, _ = await bed.add()
    second, _ = await bed.add()

    assert await emit_now(bed, bed.outbox()) == 2

    assert len(bed.receiver.received) == 2  # no worker ran: both attempts were inline
    assert {r.headers["webhook-id"] for r in bed.receiver.received} == {"evt_job_1_2_sent"}
    for endpoint_id in (first, second):
        [delivery] = await bed.deliveries(endpoint_id)
        assert (delivery.status, delivery.attempts) == ("delivered", 1)
    assert await pending_work(bed) == []  # nothing left for a worker


async def test_a_failed_inline_attempt_is_retried_by_the_worker_on_schedule(bed: Bed) -> None:
    endpoint_id, _ = await bed.add()
    bed.receiver.answer(Answer(503))
    outbox = bed.outbox()

    await emit_now(bed, outbox)

    [delivery] = await bed.deliveries(endpoint_id)
    assert (delivery.status, delivery.attempts) == ("pending", 1)
    await bed.worker(outbox).run_until_idle()
    assert len(bed.receiver.received) == 1  # not due before the schedule's first step
    await advance_and_run(bed, outbox, 5 * SECONDS)
    [delivery] = await bed.deliveries(endpoint_id)
    assert (delivery.status, delivery.attempts) == ("delivered", 2)
    assert await pending_work(bed) == []


class FailingUpdates:
    """A store whose next ``update_webhook_delivery`` fails, as a crash after the receiver
    answered but before the outcome was written would."""

    def __init__(self, inner: Store) -> None:
        self._inner = inner
        self.failures = 1

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    async def update_webhook_delivery(self, delivery: WebhookDelivery) -> None:
        if self.failures:
            self.failures -= 1
            raise ConnectionError("the database went away")
        await self._inner.update_webhook_delivery(delivery)


async def test_an_inline_attempt_cut_off_is_made_again_once_its_lease_runs_out(
    bed: Bed, caplog: pytest.LogCaptureFixture
) -> None:
    endpoint_id, _ = await bed.add()
    flaky = FailingUpdates(bed.store)
    outbox = bed.outbox(store=flaky)  # type: ignore[arg-type]

    await emit_now(bed, outbox)

    assert len(bed.receiver.received) == 1
    assert "left to the worker" in caplog.text
    await bed.worker(outbox).run_until_idle()
    assert len(bed.receiver.received) == 1  # leased: no worker takes it yet
    await advance_and_run(bed, outbox, DEFAULT_LEASE)
    assert len(bed.receiver.received) == 2  # at least once, under the same webhook-id
    assert len({r.headers["webhook-id"] for r in bed.receiver.received}) == 1
    [delivery] = await bed.deliveries(endpoint_id)
    assert delivery.status == "delivered"
    assert await pending_work(bed) == []


async def test_a_delivery_queued_after_a_renewal_is_held_under_the_renewed_lease(
    bed: Bed,
) -> None:
    # The event item ran past its first lease and the heartbeat renewed it;
    # its deliveries must be stored under the renewed lease, not the one it was claimed with,
    # or a second worker claims them while the inline attempt is still at the receiver.
    await bed.add()
    release = asyncio.Event()
    bed.receiver.answer(Answer(200, release=release))
    outbox = bed.outbox()
    document = status_record(message_record(bed.workspace_id)).to_dict()

    async def event(item: WorkItem) -> None:
        bed.clock.advance(DEFAULT_LEASE * 3 / 4)  # a slow event item...
        await first.renew_leases()  # ...whose heartbeat kept its lease
        await outbox.emit_document(bed.workspace_id, "message.sent", document, event_id="evt_1")

    first = Worker(bed.store, bed.clock, {"event": event}, worker_id="first")
    second = Worker(bed.store, bed.clock, {WORK_KIND: outbox.handle}, worker_id="second")
    now = bed.clock.now()
    await bed.store.enqueue_work(WorkItem("evt_1", "event", "job_1", due_at=now, created_at=now))
    running = asyncio.create_task(first.run_once())
    try:
        await bed.receiver.arrived.wait()  # the inline attempt is at the receiver
        bed.clock.advance(DEFAULT_LEASE / 2)  # past the claimed lease, within the renewed one
        assert await second.run_once() == 0
    finally:
        release.set()
        assert await running == 1
    assert len(bed.receiver.received) == 1


async def test_an_event_item_whose_lease_was_lost_queues_and_sends_nothing(bed: Bed) -> None:
    # The heartbeat learns that another worker claimed the event item: this worker writes no
    # delivery under the lost lease and makes no attempt (the new holder does both).
    endpoint_id, _ = await bed.add()
    outbox = bed.outbox()
    document = status_record(message_record(bed.workspace_id)).to_dict()

    async def event(item: WorkItem) -> None:
        bed.clock.advance(DEFAULT_LEASE + SECONDS)  # the heartbeat could not reach the store
        later = bed.clock.now()
        taken = await bed.store.claim_due_work(now=later, worker_id="other", lease=DEFAULT_LEASE,
                                               limit=9)  # fmt: skip
        assert [t.id for t in taken] == ["evt_1"]
        await first.renew_leases()  # the store says: another worker has it
        await outbox.emit_document(bed.workspace_id, "message.sent", document, event_id="evt_1")

    first = Worker(bed.store, bed.clock, {"event": event}, worker_id="first")
    now = bed.clock.now()
    await bed.store.enqueue_work(WorkItem("evt_1", "event", "job_1", due_at=now, created_at=now))
    assert await first.run_once() == 1
    assert bed.receiver.received == []
    assert await bed.deliveries(endpoint_id) == []
    assert await pending_work(bed) == ["evt_1"]  # still the other worker's to finish


async def test_a_hanging_endpoint_does_not_delay_another_on_the_same_host(bed: Bed) -> None:
    # The in-flight bound was per host:port, so deliveries hanging at one
    # endpoint took every slot and a healthy endpoint on the same host waited behind them.
    release = asyncio.Event()
    bed.receiver.hold("/hang", release)
    create = bed.messenger.webhooks.create
    await create(bed.workspace_id, bed.receiver.url("/hang"), events=["message.failed"])
    await create(bed.workspace_id, bed.receiver.url("/ok"), events=["message.delivered"])
    record = message_record(bed.workspace_id)
    async with WebhookSender(policy=LOOPBACK, per_endpoint=2) as sender:
        outbox = WebhookOutbox(bed.store, bed.vault, bed.clock, sender=sender)
        for _ in range(2):  # every slot of the hanging endpoint, claimed first
            await outbox.emit(record, "message.failed")
        await outbox.emit(record, "message.delivered")
        running = asyncio.create_task(bed.worker(outbox).run_once())
        try:
            # Bounded: with one bound per host the healthy delivery waits for the release.
            await asyncio.wait_for(bed.receiver.seen("/ok").wait(), timeout=10)
            assert not running.done()  # the hanging ones are still held
        finally:
            release.set()
        assert await running == 3
    paths = sorted(r.path for r in bed.receiver.received)
    assert paths == ["/hang", "/hang", "/ok"]


async def test_a_process_not_allowed_private_targets_never_disables_their_endpoint(
    bed: Bed, caplog: pytest.LogCaptureFixture
) -> None:
    # The endpoint was created by a process with UM_WEBHOOK_ALLOW_PRIVATE=1 (bed's messenger);
    # this worker's sender runs with the default policy, which refuses loopback.
    endpoint_id, _ = await bed.add()
    async with WebhookSender() as strict:
        outbox = WebhookOutbox(
            bed.store, bed.vault, bed.clock, sender=strict,
            schedule=(5 * SECONDS, 300 * SECONDS), disable_after=timedelta(seconds=1),
        )  # fmt: skip
        await emit_and_run(bed, outbox)
        for step in (5 * SECONDS, 300 * SECONDS, timedelta(days=6)):
            await advance_and_run(bed, outbox, step)

    assert bed.receiver.received == []  # refusing to deliver is fine...
    [delivery] = await bed.deliveries(endpoint_id)
    assert (delivery.status, delivery.attempts) == ("failed", 3)
    assert delivery.last_error is not None and "UM_WEBHOOK_ALLOW_PRIVATE=1" in delivery.last_error
    endpoint = await bed.get(endpoint_id)
    assert endpoint.enabled and endpoint.failing_since is None  # ...disabling it is not
    assert "UM_WEBHOOK_ALLOW_PRIVATE" in caplog.text
    # A process allowed to, delivers the next event to the same endpoint.
    assert await emit_and_run(bed, bed.outbox()) == 1
    assert len(bed.receiver.received) == 1


# --------------------------------------------------------------------------- a fresh event:
# the first attempt before any write, then one write


class Counting:
    """A store that counts the calls of each method, and can die (``Crash``, a
    ``BaseException`` the worker does not catch, as a SIGKILL) at the next
    ``record_webhook_attempt`` before it is made."""

    def __init__(self, inner: Store) -> None:
        self._inner = inner
        self.calls: Counter[str] = Counter()
        self.die_before_record = False

    def __getattr__(self, name: str) -> object:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def counted(*args: object, **kwargs: object) -> object:
            self.calls[name] += 1
            if name == "record_webhook_attempt" and self.die_before_record:
                self.die_before_record = False
                raise Crash
            return attr(*args, **kwargs)

        return counted


class Crash(BaseException):
    """The process died here."""


def event_item(bed: Bed) -> WorkItem:
    now = bed.clock.now()
    document = status_record(message_record(bed.workspace_id)).to_dict()
    return WorkItem(
        "evt_1", "event", "job_1", due_at=now, created_at=now - 3 * SECONDS,
        payload={"workspace_id": bed.workspace_id, "event": "message.sent", "record": document},
    )  # fmt: skip


def event_worker(bed: Bed, outbox: WebhookOutbox, store: Store | None = None) -> Worker:
    """A worker running event items as the lifecycle's ``handle_event`` does."""

    async def event(item: WorkItem) -> None:
        await outbox.emit_document(
            bed.workspace_id, "message.sent", item.payload["record"],  # type: ignore[arg-type]
            event_id=item.id, fresh=item.attempts <= 1, occurred_at=item.created_at,
        )  # fmt: skip

    return Worker(store or bed.store, bed.clock, {"event": event, WORK_KIND: outbox.handle})


async def test_a_fresh_event_is_sent_then_stored_in_one_write_that_ends_its_item(bed: Bed) -> None:
    endpoint_id, _ = await bed.add()
    counting = Counting(bed.store)
    outbox = bed.outbox(store=counting)  # type: ignore[arg-type]
    await bed.store.enqueue_work(event_item(bed))

    assert await event_worker(bed, outbox, counting).run_once() == 1  # type: ignore[arg-type]

    [request] = bed.receiver.received
    assert request.headers["webhook-id"] == "evt_1"
    assert json.loads(request.body)["timestamp"] == format_timestamp(event_item(bed).created_at)
    [delivery] = await bed.deliveries(endpoint_id)
    assert (delivery.status, delivery.attempts, delivery.event_id) == ("delivered", 1, "evt_1")
    assert delivery.payload == request.body
    assert await pending_work(bed) == []
    writes = {k: n for k, n in counting.calls.items() if k != "claim_due_work"}
    assert writes == {"list_webhook_endpoints": 1, "record_webhook_attempt": 1}


async def test_a_fresh_failed_attempt_is_stored_with_its_retry_item(bed: Bed) -> None:
    endpoint_id, _ = await bed.add()
    bed.receiver.answer(Answer(503))
    outbox = bed.outbox()
    await bed.store.enqueue_work(event_item(bed))

    await event_worker(bed, outbox).run_until_idle()

    [delivery] = await bed.deliveries(endpoint_id)
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("pending", 1, 503)
    assert delivery.next_attempt_at == bed.clock.now() + 5 * SECONDS
    # The event item is done; the retry item waits (pending_work would claim it).
    [stats] = await bed.store.work_stats(bed.clock.now())
    assert (stats.kind, stats.items, stats.due) == (WORK_KIND, 1, 0)
    assert (await bed.get(endpoint_id)).failing_since == bed.clock.now()
    await advance_and_run(bed, outbox, 4 * SECONDS)
    assert len(bed.receiver.received) == 1  # not due yet
    await advance_and_run(bed, outbox, SECONDS)
    [delivery] = await bed.deliveries(endpoint_id)
    assert (delivery.status, delivery.attempts) == ("delivered", 2)
    first, second = bed.receiver.received
    assert first.body == second.body
    assert first.headers["webhook-id"] == second.headers["webhook-id"] == "evt_1"
    assert await pending_work(bed) == []


async def test_death_between_a_fresh_attempt_and_its_write_sends_again_the_same_bytes(
    bed: Bed,
) -> None:
    endpoint_id, _ = await bed.add()
    counting = Counting(bed.store)
    counting.die_before_record = True
    outbox = bed.outbox(store=counting)  # type: ignore[arg-type]
    await bed.store.enqueue_work(event_item(bed))

    with pytest.raises(Crash):
        await event_worker(bed, outbox, counting).run_once()  # type: ignore[arg-type]

    assert len(bed.receiver.received) == 1  # sent, and nothing stored
    assert await bed.deliveries(endpoint_id) == []
    survivor = event_worker(bed, bed.outbox())
    await survivor.run_until_idle()
    assert len(bed.receiver.received) == 1  # the event item is still leased
    bed.clock.advance(DEFAULT_LEASE)
    await survivor.run_until_idle()  # its second run: queued, then attempted inline
    first, second = bed.receiver.received
    assert first.body == second.body  # at least once: one webhook-id, the very same body
    assert first.headers["webhook-id"] == second.headers["webhook-id"] == "evt_1"
    [delivery] = await bed.deliveries(endpoint_id)
    assert (delivery.status, delivery.attempts) == ("delivered", 1)
    assert await pending_work(bed) == []


async def test_a_fresh_attempt_whose_lease_was_lost_meanwhile_writes_nothing(bed: Bed) -> None:
    endpoint_id, _ = await bed.add()
    release = asyncio.Event()
    bed.receiver.answer(Answer(200, release=release))
    outbox = bed.outbox()
    await bed.store.enqueue_work(event_item(bed))

    running = asyncio.create_task(event_worker(bed, outbox).run_once())
    try:
        await bed.receiver.arrived.wait()  # the attempt is at the receiver
        bed.clock.advance(DEFAULT_LEASE + SECONDS)  # no heartbeat reached the store
        later = bed.clock.now()
        taken = await bed.store.claim_due_work(now=later, worker_id="other", lease=DEFAULT_LEASE,
                                               limit=9)  # fmt: skip
        assert [t.id for t in taken] == ["evt_1"]
    finally:
        release.set()
    assert await running == 1

    assert await bed.deliveries(endpoint_id) == []  # nothing written under the lost lease
    assert await pending_work(bed) == ["evt_1"]  # still the other worker's to finish


async def test_a_fresh_event_to_two_endpoints_is_ended_by_the_worker(bed: Bed) -> None:
    first, _ = await bed.add()
    second, _ = await bed.add()
    bed.receiver.answer(Answer(204), Answer(500))
    counting = Counting(bed.store)
    outbox = bed.outbox(store=counting)  # type: ignore[arg-type]
    await bed.store.enqueue_work(event_item(bed))

    assert await event_worker(bed, outbox, counting).run_once() == 1  # type: ignore[arg-type]

    deliveries = [*await bed.deliveries(first), *await bed.deliveries(second)]
    assert sorted((d.status, d.attempts) for d in deliveries) == [("delivered", 1), ("pending", 1)]
    retries = [f"wh_{d.id}" for d in deliveries if d.status == "pending"]
    assert await pending_work(bed) == retries  # the event item was completed by the worker
    assert (counting.calls["record_webhook_attempt"], counting.calls["complete_work"]) == (2, 1)


async def test_a_fresh_event_to_a_removed_endpoint_stores_nothing_and_ends(bed: Bed) -> None:
    endpoint_id, _ = await bed.add()
    release = asyncio.Event()
    bed.receiver.answer(Answer(200, release=release))
    outbox = bed.outbox()
    await bed.store.enqueue_work(event_item(bed))

    running = asyncio.create_task(event_worker(bed, outbox).run_once())
    try:
        await bed.receiver.arrived.wait()
        await bed.messenger.webhooks.remove(endpoint_id)
    finally:
        release.set()
    assert await running == 1

    assert await bed.store.list_webhook_deliveries(endpoint_id) == []
    assert await pending_work(bed) == []
