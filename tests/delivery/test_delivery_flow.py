"""The delivery lifecycle in process: reports, time-outs, fallback and the worker (D10).

A testbed on a ManualClock with zero report delay: ``settle()`` runs the work that is due.
The HTTP side (the DLR endpoint, webhooks to a real receiver) has its own tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import timedelta

import pytest

from unified_messaging import ManualClock, Messenger, ResourceNotFound
from unified_messaging._domain import Attempt, Connection, ErrorInfo
from unified_messaging._lifecycle.runtime import WORK_FALLBACK, WORK_SIMULATED, Lifecycle
from unified_messaging.providers.base import InboundCallback, ProviderReport
from unified_messaging.providers.simulator import Simulator, SimulatorSettings
from unified_messaging.store.base import WorkItem
from unified_messaging.testing import TestBed, create_testbed

NORMAL = "+905551234567"
MINUTE = timedelta(minutes=1)


def magic(suffix: int) -> str:
    return f"+9055500000{suffix:02d}"


def own_sender(provider: str) -> str:
    """Each connection's own default header ("SMSA" for sms_a …): a fallback hop that sent
    another connection's header would show in the outbox (D3)."""
    return provider.replace("_", "").upper()


SHARED = "ORTAK"  # a header every connection of the bed takes (none has an approved list)


@pytest.fixture
async def bed() -> TestBed:
    bed = await create_testbed(recipient_limit=None)  # many sends to a few magic numbers
    store = bed.messenger.store
    for connection in await store.list_connections(bed.workspace.id):
        # No approved list: the provider decides, so a wrong header would go out as it is.
        own = own_sender(connection.provider)
        await store.update_connection(
            replace(connection, dlr_timeout=MINUTE, default_sender=own, approved_senders=())
        )
    return bed


async def send(bed: TestBed, to: str, **extra: object) -> str:
    response = await bed.messenger.send(bed.principal, {"to": to, "body": "Merhaba", **extra})
    return response.job_id


async def record(bed: TestBed, job_id: str) -> dict[str, object]:
    return (await bed.messenger.get_message(bed.principal, job_id)).to_dict()


def trail(doc: dict[str, object]) -> list[tuple[object, object]]:
    attempts = doc["attempts"]
    assert isinstance(attempts, list)
    return [(a["provider"], a["status"]) for a in attempts]


# -- every magic number reaches its final state ------------------------------------------------

FINAL_BY_REPORT = [
    (NORMAL, "delivered", None),
    (magic(4), "expired", None),
    (magic(5), "rejected", "PROVIDER_REJECTED"),
    (magic(6), "failed", "RECIPIENT_UNREACHABLE"),
    (magic(7), "unknown", None),
]


@pytest.mark.parametrize(("to", "status", "code"), FINAL_BY_REPORT)
async def test_a_simulated_report_ends_the_message(
    bed: TestBed, to: str, status: str, code: str | None
) -> None:
    job_id = await send(bed, to)
    assert (await record(bed, job_id))["status"] == "sent"

    assert await bed.settle() >= 1

    doc = await record(bed, job_id)
    assert doc["status"] == status
    assert (doc["error"] or {}).get("code") == code  # type: ignore[union-attr]
    dlr = doc["dlr"]
    assert isinstance(dlr, dict)
    assert dlr["status"] == status
    assert dlr["provider_status"]
    assert doc["final_at"] is not None
    assert trail(doc) == [("sms_a", status)]


async def test_no_report_ends_unknown_at_the_dlr_timeout_and_not_before(bed: TestBed) -> None:
    job_id = await send(bed, magic(8))
    await bed.settle(MINUTE - timedelta(seconds=1))
    assert (await record(bed, job_id))["status"] == "sent"

    await bed.settle(timedelta(seconds=1))

    doc = await record(bed, job_id)
    assert (doc["status"], doc["dlr"], trail(doc)) == ("unknown", None, [("sms_a", "unknown")])


async def test_chatbot_success_is_final_at_once_and_queues_nothing(bed: TestBed) -> None:
    response = await bed.messenger.send(
        bed.principal, {"to": "@acme_channel", "body": "Selam", "provider": "chatbot"}
    )
    assert response.status == "sent"  # the send answer knows sent, queued, failed (SPEC 2.2)
    assert (await record(bed, response.job_id))["status"] == "delivered"
    assert await bed.settle(timedelta(days=2)) == 0


async def test_refusals_at_submit_queue_nothing(bed: TestBed) -> None:
    for suffix in (1, 2):
        response = await bed.messenger.send(bed.principal, {"to": magic(suffix), "body": "x"})
        assert response.status == "failed"
    assert await bed.settle(timedelta(days=2)) == 0


# -- fallback by report and by time-out -----------------------------------------------------------


@pytest.mark.parametrize(
    ("to", "fallback", "expected"),
    [
        (magic(6), ["sms_b"], [("sms_a", "failed"), ("sms_b", "failed")]),
        (magic(5), ["sms_b", "sms_c"],
         [("sms_a", "rejected"), ("sms_b", "rejected"), ("sms_c", "rejected")]),
    ],
)  # fmt: skip
async def test_a_failed_report_falls_back_under_the_same_job(
    bed: TestBed, to: str, fallback: list[str], expected: list[tuple[str, str]]
) -> None:
    job_id = await send(bed, to, fallback=fallback)

    await bed.settle()

    doc = await record(bed, job_id)
    assert doc["job_id"] == job_id
    assert trail(doc) == expected
    assert doc["provider"] == expected[-1][0]
    assert doc["status"] == expected[-1][1]
    assert [s.provider for s in list(bed.outbox)] == [p for p, _ in expected]
    # Every try was a new attempt number: the simulator saw 0, 1, 2 …
    assert [s.attempt for s in bed.outbox] == list(range(len(expected)))
    # D3 for every hop: each connection sent its own default header.
    assert [s.sender for s in bed.outbox] == [own_sender(p) for p, _ in expected]
    assert doc["sender"] == own_sender(expected[-1][0])


@pytest.mark.parametrize(
    ("fallback", "expected"),
    [
        (["sms_b"], [("sms_a", "unknown"), ("sms_b", "unknown")]),
        (["sms_b", "sms_c"], [("sms_a", "unknown"), ("sms_b", "unknown"), ("sms_c", "unknown")]),
    ],
)
async def test_a_dlr_timeout_falls_back_then_ends_unknown(
    bed: TestBed, fallback: list[str], expected: list[tuple[str, str]]
) -> None:
    job_id = await send(bed, magic(8), fallback=fallback)

    for hop in range(len(expected)):
        await bed.settle(MINUTE)
        doc = await record(bed, job_id)
        if hop < len(expected) - 1:
            assert doc["status"] == "sent"
            assert doc["provider"] == expected[hop + 1][0]

    doc = await record(bed, job_id)
    assert (doc["status"], trail(doc)) == ("unknown", expected)
    assert [s.sender for s in bed.outbox] == [own_sender(p) for p, _ in expected]
    assert await bed.settle(timedelta(days=3)) == 0  # nothing left behind


# -- the sender of a re-dispatch (D3) -----------------------------------------------------------


@pytest.mark.parametrize("to", [magic(6), magic(8)], ids=["by report", "by time-out"])
async def test_a_fallback_hop_sends_the_requested_sender_where_it_is_approved(
    bed: TestBed, to: str
) -> None:
    job_id = await send(bed, to, fallback=["sms_b"], sender=SHARED)

    await bed.settle(MINUTE)

    assert [(s.provider, s.sender) for s in bed.outbox] == [("sms_a", SHARED), ("sms_b", SHARED)]
    assert (await record(bed, job_id))["sender"] == SHARED


async def test_a_fallback_hop_whose_connection_no_longer_approves_the_sender_is_refused(
    bed: TestBed,
) -> None:
    job_id = await send(bed, magic(6), fallback=["sms_b", "sms_c"], sender=SHARED)
    store = bed.messenger.store
    for connection in await store.list_connections(bed.workspace.id):
        if connection.provider == "sms_b":  # its approved list changed after the send
            await store.update_connection(replace(connection, approved_senders=("SMSB",)))

    await bed.settle()

    doc = await record(bed, job_id)
    assert trail(doc)[:3] == [("sms_a", "failed"), ("sms_b", "rejected"), ("sms_c", "failed")]
    refused = doc["attempts"][1]  # type: ignore[index]
    assert refused["error"]["code"] == "SENDER_NOT_APPROVED"
    # sms_b was never called with a header it does not approve, nor with another one.
    assert [(s.provider, s.sender) for s in bed.outbox] == [("sms_a", SHARED), ("sms_c", SHARED)]


async def test_a_live_fallback_after_a_report_counts_one_quota_unit() -> None:
    clock = ManualClock()

    def simulated_live(connection: Connection, credentials: Mapping[str, str]) -> Simulator:
        # A live adapter that behaves like the simulator: the live path without a network.
        return Simulator(connection.provider, clock=clock,
                         settings=SimulatorSettings(report_delay=timedelta(0)))  # fmt: skip

    messenger = Messenger(
        clock=clock, live_adapters=dict.fromkeys(("sms_a", "sms_b"), simulated_live)
    )
    workspace = await messenger.workspaces.create("Acme", monthly_quota=5)
    for code in ("sms_a", "sms_b"):
        await messenger.connections.add(workspace.id, code, default_sender="ACME",
                                       credentials={"any": "thing"})  # fmt: skip
    key = await messenger.keys.create(workspace.id, livemode=True)
    auth = await messenger.authenticate(key.secret)
    sent = await messenger.send(auth, {"to": magic(6), "body": "x", "fallback": ["sms_b"]})

    # sms_a has no push reports (NetGSM): the worker polls it once a minute.
    assert await messenger.worker().run_until_idle() == 0
    clock.advance(timedelta(minutes=1))
    await messenger.worker().run_until_idle()

    doc = (await messenger.get_message(auth, sent.job_id)).to_dict()
    assert trail(doc) == [("sms_a", "failed"), ("sms_b", "accepted")]
    assert doc["livemode"] is True
    assert await messenger.store.quota_used(workspace.id, clock.now().strftime("%Y-%m")) == 1


async def test_first_n_reject_numbers_count_attempts_across_redispatch(bed: TestBed) -> None:
    # 12: the first two providers tried reject at submit, the third accepts.
    job_id = await send(bed, magic(12), fallback=["sms_b", "sms_c"])
    doc = await record(bed, job_id)
    assert trail(doc) == [("sms_a", "rejected"), ("sms_b", "rejected"), ("sms_c", "accepted")]
    await bed.settle()
    assert trail(await record(bed, job_id))[-1] == ("sms_c", "delivered")


# -- reports pushed in through the façade ----------------------------------------------------------


async def _connection(bed: TestBed, provider: str) -> tuple[str, str]:
    for connection in await bed.messenger.connections.list(bed.workspace.id):
        if connection.provider == provider:
            return connection.id, connection.dlr_token
    raise AssertionError(provider)


def _push(message_id: str, status: str) -> InboundCallback:
    body = f'{{"provider_message_id": "{message_id}", "status": "{status}"}}'.encode()
    return InboundCallback("POST", {"content-type": "application/json"}, {}, body)


async def test_ingest_dlr_applies_a_pushed_report_once(bed: TestBed) -> None:
    job_id = await send(bed, magic(8))
    message_id = (await record(bed, job_id))["attempts"][0]["provider_message_id"]  # type: ignore[index]
    connection_id, token = await _connection(bed, "sms_a")

    results = await asyncio.gather(
        *(bed.messenger.reports.ingest(connection_id, token, _push(message_id, "delivered"))
          for _ in range(10))
    )  # fmt: skip

    assert sum(r.changed for r in results) == 1
    assert all(r.matched == 1 for r in results)
    late = await bed.messenger.reports.ingest(connection_id, token, _push(message_id, "failed"))
    assert late.changed == 0
    assert (await record(bed, job_id))["status"] == "delivered"


@pytest.mark.parametrize("token", ["", "x", "' OR 1=1 --", "ş" * 40, "a" * 10_000])
async def test_ingest_dlr_with_a_wrong_token_is_not_found(bed: TestBed, token: str) -> None:
    job_id = await send(bed, magic(8))
    message_id = (await record(bed, job_id))["attempts"][0]["provider_message_id"]  # type: ignore[index]
    connection_id, right = await _connection(bed, "sms_a")
    with pytest.raises(ResourceNotFound):
        await bed.messenger.reports.ingest(connection_id, token, _push(message_id, "delivered"))
    with pytest.raises(ResourceNotFound):
        await bed.messenger.reports.ingest("conn_unknown", right, _push(message_id, "delivered"))
    assert (await record(bed, job_id))["status"] == "sent"


async def test_a_report_for_another_connection_changes_nothing(bed: TestBed) -> None:
    job_id = await send(bed, magic(8))
    message_id = (await record(bed, job_id))["attempts"][0]["provider_message_id"]  # type: ignore[index]
    other_id, other_token = await _connection(bed, "sms_b")
    result = await bed.messenger.reports.ingest(
        other_id, other_token, _push(message_id, "delivered")
    )
    assert (result.received, result.matched, result.changed) == (1, 0, 0)


async def test_a_late_report_replaces_unknown(bed: TestBed) -> None:
    job_id = await send(bed, magic(8))
    message_id = (await record(bed, job_id))["attempts"][0]["provider_message_id"]  # type: ignore[index]
    await bed.settle(MINUTE)
    assert (await record(bed, job_id))["status"] == "unknown"
    connection_id, token = await _connection(bed, "sms_a")

    await bed.messenger.reports.ingest(connection_id, token, _push(message_id, "delivered"))

    assert (await record(bed, job_id))["status"] == "delivered"


async def test_a_report_for_a_superseded_attempt_updates_that_attempt_only(bed: TestBed) -> None:
    job_id = await send(bed, magic(8), fallback=["sms_b"])
    first_id = (await record(bed, job_id))["attempts"][0]["provider_message_id"]  # type: ignore[index]
    await bed.settle(MINUTE)  # time-out: fallback to sms_b
    connection_id, token = await _connection(bed, "sms_a")

    await bed.messenger.reports.ingest(connection_id, token, _push(first_id, "failed"))

    doc = await record(bed, job_id)
    assert doc["status"] == "sent"
    assert trail(doc) == [("sms_a", "failed"), ("sms_b", "accepted")]


# -- crash safety of the re-dispatch --------------------------------------------------------------


async def test_a_redispatch_cut_off_mid_call_is_not_sent_again(bed: TestBed) -> None:
    job_id = await send(bed, magic(6), fallback=["sms_b"])
    store = bed.messenger.store
    stored = await store.get_message(bed.workspace.id, False, job_id)
    assert stored is not None
    # What a worker killed after writing its placeholder, mid-call to sms_b, leaves behind.
    failed = replace(stored.attempts[0], status="failed")
    placeholder = Attempt(
        "sms_b", "unknown", bed.clock.now(), None,
        ErrorInfo("SUBMIT_IN_PROGRESS", "Being handed to the provider."),
    )  # fmt: skip
    assert await store.replace_message(
        replace(stored, attempts=(failed, placeholder), version=stored.version + 1)
    )
    now = bed.clock.now()
    await store.enqueue_work(
        WorkItem("fb_again", WORK_FALLBACK, job_id, now, now,
                 {"workspace_id": bed.workspace.id, "livemode": False, "attempt": 0})
    )  # fmt: skip
    sent_before = len(list(bed.outbox))

    await bed.messenger.worker().run_until_idle()

    doc = await record(bed, job_id)
    assert doc["status"] == "unknown"
    assert doc["error"]["code"] == "SUBMIT_INTERRUPTED"  # type: ignore[index]
    assert len(list(bed.outbox)) == sent_before  # sms_b was not called again


async def test_two_workers_share_the_work_without_doing_an_item_twice(bed: TestBed) -> None:
    jobs = [await send(bed, magic(6), fallback=["sms_b"]) for _ in range(20)]
    first, second = bed.messenger.worker(batch=3), bed.messenger.worker(batch=3)

    await asyncio.gather(first.run_until_idle(), second.run_until_idle())
    await bed.settle()

    for job_id in jobs:
        doc = await record(bed, job_id)
        assert trail(doc) == [("sms_a", "failed"), ("sms_b", "failed")]
    submissions = [s.provider for s in list(bed.outbox)]
    assert submissions.count("sms_b") == 20


async def test_polling_goes_round_the_open_messages_in_batches() -> None:
    clock = ManualClock()
    polled: list[list[str]] = []

    class Recording(Simulator):
        async def poll_reports(self, provider_message_ids: Sequence[str]) -> list[ProviderReport]:
            polled.append(sorted(provider_message_ids))
            return []  # these messages never get a report: the backlog a poller must not stall on

    def live(connection: Connection, credentials: Mapping[str, str]) -> Simulator:
        return Recording(connection.provider, clock=clock, settings=SimulatorSettings())

    messenger = Messenger(clock=clock, live_adapters={"sms_a": live})
    messenger._lifecycle = Lifecycle(  # a small batch, to see the rounds
        messenger.store, clock, messenger._adapters, poll_batch=2
    )
    workspace = await messenger.workspaces.create("Acme")
    await messenger.connections.add(workspace.id, "sms_a", default_sender="ACME",
                                   credentials={"any": "thing"})  # fmt: skip
    key = await messenger.keys.create(workspace.id, livemode=True)
    auth = await messenger.authenticate(key.secret)
    ids = []
    for _ in range(5):
        sent = await messenger.send(auth, {"to": NORMAL, "body": "x"})
        record = await messenger.get_message(auth, sent.job_id)
        ids.append(record.attempts[0].provider_message_id)

    worker = messenger.worker()
    for _ in range(4):
        clock.advance(MINUTE)
        await worker.run_until_idle()

    assert [len(batch) for batch in polled] == [2, 2, 2, 2]
    assert {i for batch in polled[:3] for i in batch} == set(ids)  # everyone asked in a round
    # Round robin: what was asked waits behind what was not (the fifth before the first two).
    assert polled[2] == sorted([ids[4], ids[0]])


# -- a simulated report's work item knows its message -------------------------------


@pytest.mark.parametrize("knows_workspace", [True, False], ids=["as-queued-now", "older-item"])
async def test_a_simulated_report_item_applies_with_or_without_its_workspace(
    bed: TestBed, knows_workspace: bool
) -> None:
    # magic(8): accepted, and the simulator plans no report: only this item can deliver it.
    job_id = await send(bed, magic(8))
    stored = await bed.messenger.store.get_message(bed.workspace.id, False, job_id)
    assert stored is not None and stored.status == "sent"
    message_id = stored.attempts[0].provider_message_id
    assert message_id is not None
    [connection] = [
        c for c in await bed.messenger.store.list_connections(bed.workspace.id)
        if c.provider == "sms_a"
    ]  # fmt: skip
    payload: dict[str, object] = {
        "connection_id": connection.id, "provider_message_id": message_id,
        "status": "delivered", "to": stored.to,
    }  # fmt: skip
    if knows_workspace:  # queued with its workspace: the ref is not looked up
        payload["workspace_id"] = bed.workspace.id
    now = bed.clock.now()
    await bed.messenger.store.enqueue_work(
        WorkItem(f"sim_{job_id}_0", WORK_SIMULATED, job_id, now, now, payload)  # type: ignore[arg-type]
    )

    await bed.messenger.worker().run_until_idle()

    doc = await record(bed, job_id)
    assert doc["status"] == "delivered"
    assert trail(doc) == [("sms_a", "delivered")]
