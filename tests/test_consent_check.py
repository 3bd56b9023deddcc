"""The gate's consent check (D33 policy ``local``) through the library: a test key's bulk in
the simulator's world, where consents are the test world's own (D2), asks the store once for
all of a bulk's recipients; the policy is a workspace setting, audited."""

from __future__ import annotations

from collections.abc import Sequence

from unified_messaging import ManualClock, Messenger
from unified_messaging._types import RecipientType
from unified_messaging.consents.rules import ConsentStatus, ConsentType
from unified_messaging.store.memory import MemoryStore
from unified_messaging.testing import Outbox, create_testbed


class CountingStore(MemoryStore):
    """The memory store, counting the gate's consent lookups."""

    def __init__(self) -> None:
        super().__init__()
        self.lookups: list[list[str]] = []

    async def consent_statuses(
        self, workspace_id: str, livemode: bool, type_: ConsentType, recipients: Sequence[str]
    ) -> dict[tuple[str, RecipientType], ConsentStatus]:
        self.lookups.append(list(recipients))
        return await super().consent_statuses(workspace_id, livemode, type_, recipients)


async def test_a_bulk_asks_the_store_once_for_all_its_recipients() -> None:
    store, outbox = CountingStore(), Outbox()
    messenger = Messenger(store, clock=ManualClock(), on_simulated=outbox.record)
    async with messenger:
        bed = await create_testbed(messenger=messenger, recipient_limit=None)
        await messenger.consents.set_policy(bed.workspace.id, "local")
        test = await messenger.principal(bed.workspace.id, livemode=False)
        numbers = [f"+9053211100{n:02d}" for n in range(10)]
        for to in numbers[:4]:
            await messenger.consents.create(
                test, {"recipient": to, "status": "ONAY", "source": "HS_WEB"}
            )

        answer = await messenger.send_bulk(
            test,
            {"items": [{"to": to, "body": "Kampanya"} for to in numbers],
             "category": "commercial"},
        )  # fmt: skip

        assert [r.status for r in answer.results] == ["sent"] * 4 + ["failed"] * 6
        assert store.lookups == [numbers]
        assert sorted(outbox.recipients()) == numbers[:4]


async def test_a_live_onay_does_not_count_for_a_test_key() -> None:
    outbox = Outbox()
    async with Messenger(clock=ManualClock(), on_simulated=outbox.record) as messenger:
        bed = await create_testbed(messenger=messenger)
        await messenger.consents.set_policy(bed.workspace.id, "local")
        live = await messenger.principal(bed.workspace.id, livemode=True)
        to = "+905321110001"
        await messenger.consents.create(
            live, {"recipient": to, "status": "ONAY", "source": "HS_WEB"}
        )

        test = await messenger.principal(bed.workspace.id, livemode=False)
        answer = await messenger.send(test, {"to": to, "body": "Kampanya",
                                                      "category": "commercial"})  # fmt: skip

        assert (answer.status, answer.error and answer.error.code) == (
            "failed", "IYS_CONSENT_MISSING"
        )  # fmt: skip
        assert list(outbox) == []


async def test_a_principal_held_across_a_policy_change_sends_by_the_policy_of_now() -> None:
    """A library caller authenticates once and keeps its Principal: each send obeys the
    workspace's settings at its moment, not those read when the caller authenticated."""
    outbox = Outbox()
    async with Messenger(clock=ManualClock(), on_simulated=outbox.record) as messenger:
        bed = await create_testbed(messenger=messenger)
        held = await messenger.principal(bed.workspace.id, livemode=False)
        campaign = {"to": "+905321110002", "body": "Kampanya", "category": "commercial"}

        await messenger.consents.set_policy(bed.workspace.id, "local")
        refused = await messenger.send(held, campaign)
        await messenger.consents.set_policy(bed.workspace.id, "off")
        sent = await messenger.send(held, campaign)

        assert (refused.status, refused.error and refused.error.code) == (
            "failed", "IYS_CONSENT_MISSING"
        )  # fmt: skip
        assert held.workspace.consent_policy == "off"  # the caller's object is not changed
        assert sent.status in ("queued", "sent")
        assert outbox.recipients() == ["+905321110002"]


async def test_the_policy_is_a_workspace_setting_that_is_audited() -> None:
    async with Messenger(clock=ManualClock()) as messenger:
        workspace = await messenger.workspaces.create("Acme")
        assert workspace.consent_policy == "off"

        changed = await messenger.consents.set_policy(workspace.id, "local")

        assert changed.consent_policy == "local"
        assert (await messenger.workspaces.get(workspace.id)).consent_policy == "local"
        events = (await messenger.audit.list(limit=10)).data
        assert events[0].action == "workspace.consent_policy"
