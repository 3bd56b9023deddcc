"""The store's consents (D33) on every backend: one record per workspace, mode, address, type
and recipient type; a change is a compare-and-set on the status it was checked against, also
from two engines at once; the history; the list's order and filters; the gate's lookup."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from _databases import Database

from unified_messaging import ManualClock, Messenger, ResourceNotFound, Vault
from unified_messaging._domain import Workspace
from unified_messaging.consents import ConsentUnchanged
from unified_messaging.consents.models import Consent, ConsentChange
from unified_messaging.consents.store import ConsentQuery
from unified_messaging.store.base import Store

T0 = datetime(2026, 12, 2, 7, 0, tzinfo=UTC)


def consent(n: int, *, recipient: str | None = None, livemode: bool = True,
            recipient_type: str = "BIREYSEL", status: str = "ONAY") -> Consent:  # fmt: skip
    return Consent(
        id=f"cns_{n:04d}",
        workspace_id="ws_1",
        livemode=livemode,
        recipient=recipient or f"+9053200{n:05d}",
        type="MESAJ",
        recipient_type=recipient_type,  # type: ignore[arg-type]
        status=status,  # type: ignore[arg-type]
        source="HS_WEB",
        consent_date=T0 + timedelta(seconds=n),
        created_at=T0 + timedelta(seconds=n),
        updated_at=T0 + timedelta(seconds=n),
    )


def change_of(record: Consent) -> ConsentChange:
    return ConsentChange(
        record.id, record.status, record.source, record.consent_date, record.updated_at
    )


async def with_workspace(store: Store) -> None:
    await store.create_workspace(Workspace(id="ws_1", name="ws_1", created_at=T0))


async def test_a_record_is_new_once_and_changes_only_from_the_status_checked(
    store: Store,
) -> None:
    await with_workspace(store)
    first = consent(1)

    assert await store.record_consent(first, change_of(first), previous=None)
    assert not await store.record_consent(consent(2, recipient=first.recipient),
                                          change_of(first), previous=None)  # fmt: skip
    ret = replace(first, status="RET", updated_at=T0 + timedelta(minutes=1))
    assert not await store.record_consent(ret, change_of(ret), previous="RET")  # stale check
    assert await store.record_consent(ret, change_of(ret), previous="ONAY")

    key = (first.recipient, "MESAJ", "BIREYSEL")
    assert await store.find_consent("ws_1", True, key) == ret  # type: ignore[arg-type]
    assert await store.find_consent("ws_1", False, key) is None  # type: ignore[arg-type]
    assert await store.get_consent("ws_1", True, first.id) == ret
    assert await store.get_consent("ws_1", False, first.id) is None
    history = await store.consent_history(first.id)
    assert [(h.status, h.recorded_at) for h in history] == [
        ("ONAY", first.updated_at), ("RET", ret.updated_at)
    ]  # fmt: skip


async def test_a_record_for_a_missing_workspace_is_refused(store: Store) -> None:
    with pytest.raises(ResourceNotFound):
        await store.record_consent(consent(1), change_of(consent(1)), previous=None)


async def test_the_list_is_newest_first_with_filters_and_a_cursor(store: Store) -> None:
    await with_workspace(store)
    records = [consent(n) for n in range(5)]
    records[2] = replace(records[2], status="RET")
    for record in [*records, consent(9, livemode=False)]:
        assert await store.record_consent(record, change_of(record), previous=None)

    every = await store.list_consents(ConsentQuery("ws_1", True))
    below = await store.list_consents(
        ConsentQuery("ws_1", True, older_than=(records[3].created_at, records[3].id), limit=2)
    )
    refused = await store.list_consents(ConsentQuery("ws_1", True, status="RET"))
    one = await store.list_consents(ConsentQuery("ws_1", True, recipients=(records[1].recipient,)))

    assert [c.id for c in every] == [r.id for r in reversed(records)]
    assert [c.id for c in below] == [records[2].id, records[1].id]
    assert [c.id for c in refused] == [records[2].id]
    assert [c.id for c in one] == [records[1].id]


async def test_the_gate_lookup_answers_both_recipient_types_of_many_addresses(
    store: Store,
) -> None:
    await with_workspace(store)
    to = "+905320000001"
    for record in (consent(1, recipient=to), consent(2, recipient=to, recipient_type="TACIR",
                                                     status="RET"), consent(3)):  # fmt: skip
        await store.record_consent(record, change_of(record), previous=None)

    found = await store.consent_statuses("ws_1", True, "MESAJ", [to, "+905329999999"])

    assert found == {(to, "BIREYSEL"): "ONAY", (to, "TACIR"): "RET"}
    assert await store.consent_statuses("ws_1", True, "MESAJ", []) == {}
    assert await store.consent_statuses("ws_1", True, "EPOSTA", [to]) == {}
    # One recipient (a single send) takes the SQL store's prebuilt path: the same answer.
    one = await store.consent_statuses("ws_1", True, "MESAJ", [to])
    assert one == {(to, "BIREYSEL"): "ONAY", (to, "TACIR"): "RET"}
    assert await store.consent_statuses("ws_1", False, "MESAJ", [to]) == {}
    assert await store.consent_statuses("ws_1", True, "MESAJ", ["+905329999999"]) == {}


async def test_two_engines_recording_one_onay_at_once_store_one(sql_database: Database) -> None:
    first, second = sql_database.store(), sql_database.store()
    await first.open()
    await second.open()
    try:
        await first.create_workspace(Workspace(id="ws_1", name="ws_1", created_at=T0))
        clock = ManualClock(T0)
        vault = Vault.generate()
        messengers = [Messenger(store, clock=clock, vault=vault) for store in (first, second)]
        principal = await messengers[0].principal("ws_1", livemode=True)
        body = {"recipient": "+905320000042", "status": "ONAY", "source": "HS_WEB"}

        async def one(n: int) -> str:
            try:
                return (await messengers[n % 2].consents.create(principal, body)).id
            except ConsentUnchanged:
                return "unchanged"

        results = await asyncio.gather(*(one(n) for n in range(8)))

        assert results.count("unchanged") == 7
        stored = await first.list_consents(ConsentQuery("ws_1", True))
        assert [c.id for c in stored] == [r for r in results if r != "unchanged"]
        assert len(await first.consent_history(stored[0].id)) == 1
    finally:
        await first.close()
        await second.close()
