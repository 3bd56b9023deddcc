"""``sync_messenger.consents`` is the blocking twin of ``messenger.consents``: the same
public methods with the same parameters, and they work from a plain thread."""

from __future__ import annotations

import inspect

from unified_messaging import ManualClock, Messenger, SyncMessenger
from unified_messaging.consents import Consents
from unified_messaging.consents.sync import SyncConsents


def public(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_")
    }


def test_every_consents_method_has_a_blocking_twin_with_its_parameters() -> None:
    asynchronous, blocking = public(Consents), public(SyncConsents)

    assert sorted(blocking) == sorted(asynchronous)
    for name, signature in asynchronous.items():
        assert list(blocking[name].parameters) == list(signature.parameters), name


def test_a_sync_host_records_lists_and_reads_a_consent() -> None:
    with SyncMessenger(Messenger(clock=ManualClock())) as sync:
        workspace = sync.workspaces.create("Acme")
        sync.consents.set_policy(workspace.id, "local")
        live = sync.principal(workspace.id, livemode=True)

        created = sync.consents.create(
            live, {"recipient": "05321110001", "status": "ONAY", "source": "HS_FIZIKSEL_ORTAM"}
        )

        assert [c.id for c in sync.consents.list(live).data] == [created.id]
        assert [h.status for h in sync.consents.get(live, created.id).history] == ["ONAY"]
        assert sync.workspaces.get(workspace.id).consent_policy == "local"
