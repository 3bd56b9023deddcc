"""A write-ahead that fails takes no quota unit, on every backend.

The unit (D17) is taken inside the write-ahead transaction (``Store.accept_messages(...,
quota=)``), so when the insert of the records fails after the quota row was updated, the
whole transaction, the unit with it, is rolled back. The store below makes the real insert
fail inside that transaction (a record repeating a job id), not before it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, cast

import pytest

from unified_messaging import AlreadyExists, ManualClock, Messenger, Vault, generate_key_spec
from unified_messaging._access.flood_guard import RecipientLimit
from unified_messaging._domain import Connection, MessageRecord
from unified_messaging.providers.simulator import Simulator, SimulatorSettings
from unified_messaging.store.base import IdempotencyClaim, QuotaCharge, Store, WorkItem
from unified_messaging.testing import Outbox


class InsertFails:
    """The real store, except that a write-ahead's insert repeats a job id while ``armed``."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.armed = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def accept_messages(
        self,
        messages: Sequence[MessageRecord],
        *,
        work: Sequence[WorkItem] = (),
        quota: QuotaCharge | None = None,
        claim: IdempotencyClaim | None = None,
        recipient_limit: RecipientLimit | None = None,
    ) -> bool:
        rows = [*messages, messages[0]] if self.armed else list(messages)
        return await self.inner.accept_messages(
            rows, work=work, quota=quota, claim=claim, recipient_limit=recipient_limit
        )


async def test_a_failed_write_ahead_leaves_the_quota_as_it_was(store: Store) -> None:
    clock = ManualClock()
    outbox = Outbox()

    def live(connection: Connection, credentials: Mapping[str, str]) -> Simulator:
        return Simulator(connection.provider, clock=clock,
                         settings=SimulatorSettings(report_delay=timedelta(0)))  # fmt: skip

    failing = InsertFails(store)
    messenger = Messenger(cast(Store, failing), clock=clock, live_adapters={"sms_a": live},
                          vault=Vault.from_spec(generate_key_spec()),
                          on_simulated=outbox.record)  # fmt: skip
    workspace = await messenger.workspaces.create("Acme", monthly_quota=2)
    await messenger.connections.add(workspace.id, "sms_a", default_sender="ACME",
                                   credentials={"any": "thing"})  # fmt: skip
    key = await messenger.keys.create(workspace.id, livemode=True)
    auth = await messenger.authenticate(key.secret)
    period = clock.now().strftime("%Y-%m")
    request = {"to": "+905551234567", "body": "x"}

    for _ in range(3):  # more failures than the quota has units
        with pytest.raises(AlreadyExists):
            await messenger.send(auth, request)
        with pytest.raises(AlreadyExists):
            await messenger.send_bulk(auth, {"items": [request, request]})

    assert await store.quota_used(workspace.id, period) == 0
    assert await store.claim_due_work(now=clock.now() + timedelta(days=1), worker_id="w",
                                      lease=timedelta(minutes=1), limit=10) == []  # fmt: skip
    failing.armed = False
    sent = await messenger.send(auth, request)
    assert sent.status == "sent"
    assert await store.quota_used(workspace.id, period) == 1
