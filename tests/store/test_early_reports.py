"""Early delivery reports on every backend (memory, SQLite, PostgreSQL).

13.2: a report for a provider message id that is not stored yet is kept in the store (as a
work item) and applied once the send storing that id has committed, by whichever process
runs the worker. 13.3: the sender a request asked for is stored with its message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from unified_messaging import ManualClock, Messenger, Vault, generate_key_spec
from unified_messaging._domain import Connection, ErrorInfo
from unified_messaging._lifecycle.runtime import WORK_ORPHAN
from unified_messaging.providers.base import ProviderReport, SubmitOutcome, SubmitRequest
from unified_messaging.providers.simulator import Simulator, SimulatorSettings
from unified_messaging.store.base import Store

TO = "+905321234567"


class NamedIds(Simulator):
    """A live stand-in whose provider answers each submit with the next id it was given."""

    def __init__(self, connection: Connection, clock: ManualClock, ids: list[str]) -> None:
        super().__init__(connection.provider, clock=clock,
                         settings=SimulatorSettings(report_delay=timedelta(days=9)))  # fmt: skip
        self.ids = ids

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        return SubmitOutcome.accepted(self.ids.pop(0))


@dataclass
class Setup:
    clock: ManualClock
    #: Two messengers on the one store: two processes, as far as the store can tell.
    reporter: Messenger
    sender: Messenger
    connection: Connection
    workspace_id: str
    api_key: str


async def _setup(store: Store, ids: list[str]) -> Setup:
    clock = ManualClock()
    spec = generate_key_spec()

    def live(connection: Connection, credentials: Mapping[str, str]) -> NamedIds:
        return NamedIds(connection, clock, ids)

    reporter, sender = (
        Messenger(store, clock=clock, vault=Vault.from_spec(spec), live_adapters={"sms_c": live})
        for _ in range(2)
    )
    workspace = await sender.workspaces.create("Acme")
    connection = await sender.connections.add(workspace.id, "sms_c", default_sender="ACME",
                                             approved_senders=("ACME", "ACME2"),
                                             credentials={"any": "thing"})  # fmt: skip
    key = await sender.keys.create(workspace.id, livemode=True)
    return Setup(clock, reporter, sender, connection, workspace.id, key.secret)


async def test_a_report_before_its_id_is_stored_is_applied_once_it_is(store: Store) -> None:
    setup = await _setup(store, ["camp-1:905321234567"])
    early = ProviderReport("camp-1:905321234567", "failed", "NOT_DELIVERED",
                           error=ErrorInfo("RECIPIENT_UNREACHABLE", "Not delivered."))  # fmt: skip

    kept = await setup.reporter._lifecycle.ingest(setup.connection, [early], livemode=True)
    again = await setup.reporter._lifecycle.ingest(setup.connection, [early], livemode=True)

    assert (kept.matched, again.matched) == (0, 0)
    auth = await setup.sender.authenticate(setup.api_key)
    sent = await setup.sender.send(auth, {"to": TO, "body": "x", "sender": "ACME2"})
    assert sent.status == "sent"
    due = await store.claim_due_work(now=setup.clock.now() + timedelta(seconds=1),
                                     worker_id="census", lease=timedelta(0), limit=100)  # fmt: skip
    assert [item.kind for item in due].count(WORK_ORPHAN) == 1  # kept once, in the store

    setup.clock.advance(timedelta(seconds=1))
    assert await setup.sender.worker().run_until_idle() >= 1

    record = await setup.sender.get_message(auth, sent.job_id)
    assert record.status == "failed"
    assert record.error is not None and record.error.code == "RECIPIENT_UNREACHABLE"
    assert record.dlr is not None and record.dlr.provider_status == "NOT_DELIVERED"
    stored = await store.get_message(setup.workspace_id, True, sent.job_id)
    assert stored is not None and stored.requested_sender == "ACME2"  # 13.3: kept as asked
    setup.clock.advance(timedelta(days=2))
    ran = [await m.worker().run_until_idle() for m in (setup.reporter, setup.sender)]
    assert ran == [1, 0]  # only the DLR time-out was left, and it finds the message ended


async def test_a_report_whose_id_never_comes_is_dropped_after_ten_minutes(store: Store) -> None:
    setup = await _setup(store, [])
    stray = ProviderReport("camp-9:905320000000", "delivered", "DELIVERED")
    await setup.reporter._lifecycle.ingest(setup.connection, [stray], livemode=True)

    looks = 0
    for _ in range(11):
        setup.clock.advance(timedelta(minutes=1))
        looks += await setup.sender.worker().run_until_idle()
    assert looks >= 1
    setup.clock.advance(timedelta(minutes=1))
    assert await setup.sender.worker().run_until_idle() == 0
    assert await store.claim_due_work(now=setup.clock.now() + timedelta(days=30),
                                      worker_id="census", lease=timedelta(0),
                                      limit=100) == []  # fmt: skip


async def test_a_pending_or_test_mode_report_is_not_applied_to_a_live_message(
    store: Store,
) -> None:
    setup = await _setup(store, ["camp-2:905321234567"])
    connection = setup.connection
    pending = ProviderReport("camp-2:905321234567", "pending", "WAITING")
    simulated = ProviderReport("camp-2:905321234567", "delivered", "DELIVERED")
    await setup.reporter._lifecycle.ingest(connection, [pending], livemode=True)
    await setup.reporter._lifecycle.ingest(connection, [simulated], livemode=False)
    auth = await setup.sender.authenticate(setup.api_key)
    sent = await setup.sender.send(auth, {"to": TO, "body": "x"})

    setup.clock.advance(timedelta(seconds=1))
    await setup.sender.worker().run_until_idle()

    assert (await setup.sender.get_message(auth, sent.job_id)).status == "sent"
