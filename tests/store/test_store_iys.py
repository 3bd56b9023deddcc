"""The store's İYS slice (D33) on every backend: the connection and its compare-and-set
token and password, the pull cursors, each change's registration (attempts counted before
a call, undone, bulk requests and leaving them), settling once, İYS's transaction ids, and
changes pulled into a history."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from unified_messaging import ResourceNotFound
from unified_messaging._domain import Workspace
from unified_messaging.consents.models import Consent, ConsentChange
from unified_messaging.iys.records import (
    BULK_IN_FLIGHT,
    IysConnection,
    IysOutcome,
    IysToken,
)
from unified_messaging.store.base import Store

T0 = datetime(2026, 12, 2, 7, 0, tzinfo=UTC)


async def with_workspace(store: Store, workspace_id: str = "ws_1") -> None:
    await store.create_workspace(Workspace(id=workspace_id, name=workspace_id, created_at=T0))


def connection(**changes: object) -> IysConnection:
    base = IysConnection(
        workspace_id="ws_1", iys_code=710271, brand_code=710272, username="api",
        password="sealed-1", created_at=T0, updated_at=T0,
    )  # fmt: skip
    return replace(base, **changes)  # type: ignore[arg-type]


async def recorded(
    store: Store, n: int, *, status: str = "ONAY", livemode: bool = True,
    consent_id: str | None = None, previous: str | None = None, recipient: str | None = None,
) -> tuple[Consent, ConsentChange]:  # fmt: skip
    """A consent change recorded as the consents service records it."""
    cid = consent_id or f"cns_{n:04d}"
    when = T0 + timedelta(seconds=n)
    change = ConsentChange(cid, status, "HS_WEB", when, when, id=f"cnc_{n:04d}")  # type: ignore[arg-type]
    record = Consent(
        id=cid, workspace_id="ws_1", livemode=livemode, recipient=recipient or f"+9053200{n:05d}",
        type="MESAJ", recipient_type="BIREYSEL", status=status,  # type: ignore[arg-type]
        source="HS_WEB", consent_date=when, created_at=T0, updated_at=when,
        last_change_id=change.id,
    )  # fmt: skip
    assert await store.record_consent(record, change, previous=previous)  # type: ignore[arg-type]
    return record, change


async def test_a_connection_is_saved_replaced_and_deleted(store: Store) -> None:
    await with_workspace(store)
    with pytest.raises(ResourceNotFound):
        await store.save_iys_connection(connection(workspace_id="ws_missing"))
    first = connection(via_connection=None)
    await store.save_iys_connection(first)
    assert await store.get_iys_connection("ws_1") == first

    through = connection(iys_code=0, username="", via_connection="conn_1",
                         token=IysToken(version=1))  # fmt: skip
    await store.save_iys_connection(through)
    assert await store.get_iys_connection("ws_1") == through
    assert await store.delete_iys_connection("ws_1")
    assert not await store.delete_iys_connection("ws_1")
    assert await store.get_iys_connection("ws_1") is None


async def test_the_token_and_password_change_only_by_compare_and_set(store: Store) -> None:
    await with_workspace(store)
    await store.save_iys_connection(connection())
    grants = (T0, T0 + timedelta(minutes=1))
    token = IysToken(
        version=1, sealed="sealed-token", access_expires_at=T0 + timedelta(hours=2),
        refresh_expires_at=T0 + timedelta(hours=4), lease_by="p1",
        lease_until=T0 + timedelta(seconds=30), grants=grants,
    )  # fmt: skip

    assert await store.swap_iys_token("ws_1", 0, token)
    assert not await store.swap_iys_token("ws_1", 0, replace(token, version=9))  # stale
    assert not await store.swap_iys_token("ws_other", 0, token)  # no connection
    assert (await store.get_iys_connection("ws_1")).token == token  # type: ignore[union-attr]

    assert not await store.swap_iys_password("ws_1", "not-it", "sealed-2")
    assert await store.swap_iys_password("ws_1", "sealed-1", "sealed-2")
    assert not await store.swap_iys_password("ws_other", "sealed-1", "sealed-2")
    stored = await store.get_iys_connection("ws_1")
    assert stored is not None and stored.password == "sealed-2" and stored.token == token


async def test_each_pull_source_keeps_its_own_cursor(store: Store) -> None:
    await with_workspace(store)
    await store.set_iys_cursor("ws_1", "HS", "a1", T0)  # no connection yet: nothing
    assert await store.get_iys_connection("ws_1") is None
    await store.save_iys_connection(connection())
    await store.set_iys_cursor("ws_1", "HS", "hs-9", T0)
    await store.set_iys_cursor("ws_1", "IYS", "iys-4", T0 + timedelta(minutes=5))

    stored = await store.get_iys_connection("ws_1")
    assert stored is not None
    assert (stored.cursor("HS"), stored.cursor("IYS")) == ("hs-9", "iys-4")
    assert stored.pulled_at == T0 + timedelta(minutes=5)


async def test_an_attempt_is_counted_once_per_call_and_can_be_undone(store: Store) -> None:
    await with_workspace(store)
    consent, change = await recorded(store, 1)
    assert await store.consent_change(change.id) == (consent, change)
    assert await store.consent_change("cnc_missing") is None
    assert await store.iys_registration(change.id) is None

    assert await store.begin_iys_attempts([change.id, "cnc_missing"], now=T0) == {change.id: 0}
    assert await store.begin_iys_attempts([change.id], now=T0 + timedelta(minutes=1)) == {
        change.id: 1
    }
    registration = await store.iys_registration(change.id)
    assert registration is not None
    assert (registration.attempts, registration.attempted_at) == (2, T0 + timedelta(minutes=1))

    await store.undo_iys_attempt(change.id)  # the last one never went out
    registration = await store.iys_registration(change.id)
    assert registration is not None and registration.attempts == 1


async def test_a_bulk_request_holds_its_changes_until_they_leave_it(store: Store) -> None:
    await with_workspace(store)
    _, one = await recorded(store, 1)
    _, two = await recorded(store, 2, consent_id="cns_0002")

    counted = await store.begin_iys_attempts([one.id, two.id], now=T0, bulk=True)
    assert counted == {one.id: 0, two.id: 0}
    in_flight = await store.iys_registration(one.id)
    assert in_flight is not None and in_flight.request_id == BULK_IN_FLIGHT
    assert in_flight.bulk_in_doubt
    # In a bulk: not counted again, on its own or in another bulk.
    assert await store.begin_iys_attempts([one.id], now=T0) == {}

    await store.set_iys_request("req-1", {one.id: "sub-1", two.id: "sub-2"})
    answered = await store.iys_registration(two.id)
    assert answered is not None
    assert (answered.request_id, answered.subrequest_id) == ("req-1", "sub-2")
    assert not answered.bulk_in_doubt

    await store.leave_iys_bulk(one.id)  # İYS's request id is known: it stays in its bulk
    assert (await store.iys_registration(one.id)).request_id == "req-1"  # type: ignore[union-attr]

    _, three = await recorded(store, 3, consent_id="cns_0003")
    await store.begin_iys_attempts([three.id], now=T0, bulk=True)
    await store.leave_iys_bulk(three.id)  # a bulk never answered: on its own from now
    left = await store.iys_registration(three.id)
    assert left is not None and left.request_id is None and left.attempts == 1
    assert await store.begin_iys_attempts([three.id], now=T0) == {three.id: 1}

    _, four = await recorded(store, 4, consent_id="cns_0004")
    await store.begin_iys_attempts([four.id], now=T0, bulk=True)
    await store.undo_iys_attempt(four.id)  # refused before it went: out of the bulk too
    undone = await store.iys_registration(four.id)
    assert undone is not None and (undone.attempts, undone.request_id) == (0, None)


async def test_a_change_is_settled_once_and_on_its_consent_while_current(store: Store) -> None:
    await with_workspace(store)
    consent, onay = await recorded(store, 1)
    pending = await store.pending_iys_changes("ws_1", True, 10)
    assert [c.id for c in pending] == [onay.id]
    assert await store.pending_iys_changes("ws_1", False, 10) == []

    assert await store.settle_iys_registration(onay.id, IysOutcome("registered", "tx-1"))
    assert not await store.settle_iys_registration(onay.id, IysOutcome("refused", None, "H1"))
    assert await store.pending_iys_changes("ws_1", True, 10) == []
    found = await store.consent_change(onay.id)
    assert found is not None
    assert (found[0].iys_state, found[0].iys_transaction_id) == ("registered", "tx-1")
    assert (found[1].iys_state, found[1].iys_transaction_id) == ("registered", "tx-1")

    # A newer change is current: settling an older one leaves the consent alone.
    ret_consent, ret = await recorded(store, 2, status="RET", consent_id=consent.id,
                                      previous="ONAY", recipient=consent.recipient)  # fmt: skip
    outcome = IysOutcome("refused", error_code="H174", error_message="Geçersiz.")
    assert await store.settle_iys_registration(ret.id, outcome)
    now = await store.consent_change(ret.id)
    assert now is not None
    assert (now[0].iys_state, now[0].iys_error_code, now[0].iys_error_message) == (
        "refused", "H174", "Geçersiz."
    )  # fmt: skip
    assert now[1].iys_state == "refused" and ret_consent.id == consent.id


async def test_transaction_ids_are_found_and_filled_once(store: Store) -> None:
    await with_workspace(store)
    _, change = await recorded(store, 1)
    await store.settle_iys_registration(change.id, IysOutcome("registered"))  # no id given
    assert await store.find_iys_transaction("ws_1", True, "tx-9") is None

    await store.fill_iys_transaction(change.id, "tx-9")
    await store.fill_iys_transaction(change.id, "tx-other")  # filled already: kept
    await store.fill_iys_transaction("cnc_missing", "tx-1")

    found = await store.find_iys_transaction("ws_1", True, "tx-9")
    assert found is not None and found.id == change.id and found.iys_transaction_id == "tx-9"
    assert await store.find_iys_transaction("ws_1", False, "tx-9") is None
    consent = await store.consent_change(change.id)
    assert consent is not None and consent[0].iys_transaction_id == "tx-9"


async def test_an_older_pulled_change_joins_the_history_only(store: Store) -> None:
    await with_workspace(store)
    consent, change = await recorded(store, 10)
    older = ConsentChange(
        consent.id, "RET", "IYS_MOBIL", T0, T0 + timedelta(minutes=1), id="cnc_pulled",
        iys_state="registered", iys_transaction_id="tx-iys",
    )  # fmt: skip
    await store.add_consent_change(older)
    with pytest.raises(ResourceNotFound):
        await store.add_consent_change(replace(older, consent_id="cns_missing", id="cnc_x"))

    history = await store.consent_history(consent.id)
    assert [h.id for h in history] == [change.id, "cnc_pulled"]
    assert history[1] == older
    still = await store.consent_change(change.id)
    assert still is not None and still[0].status == "ONAY"  # the consent did not change
    assert await store.find_iys_transaction("ws_1", True, "tx-iys") == older
