"""The store's part of Verify (``VerificationStore``), on memory, SQLite and PostgreSQL alike.

One pending verification per workspace, mode and recipient; every change a compare-and-set
on ``version``; settings per workspace. What is stored comes back exactly, every field.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from unified_messaging._domain import Workspace
from unified_messaging._errors import ResourceNotFound
from unified_messaging.store.base import Store
from unified_messaging.verifications._records import CodeSend, Verification, VerificationSettings

ISTANBUL = timezone(timedelta(hours=3))
T0 = datetime(2026, 12, 2, 9, 30, 0, 123456, tzinfo=ISTANBUL)
TO = "+905551234567"


def a_verification(verification_id: str = "ver_1", **changes: object) -> Verification:
    verification = Verification(
        id=verification_id,
        workspace_id="ws_1",
        livemode=True,
        to=TO,
        channel="sms",
        status="pending",
        code_digest="k1.3f2a9c",
        code_length=6,
        locale="tr",
        created_at=T0,
        updated_at=T0 + timedelta(microseconds=1),
        expires_at=T0 + timedelta(minutes=10),
        max_checks=5,
    )
    return replace(verification, **changes)  # type: ignore[arg-type]


@pytest.fixture
async def ws(store: Store) -> Store:
    await store.create_workspace(Workspace("ws_1", "Acme", T0))
    return store


async def test_a_verification_round_trips_every_field(ws: Store) -> None:
    sends = (
        CodeSend("job_1", "sms", "sms_a", T0),
        CodeSend("job_2", "whatsapp", "whatsapp", T0 + timedelta(seconds=31)),
    )
    full = a_verification(
        locale="en", wrong_checks=2, sends=sends, version=3, code_length=10, max_checks=100
    )

    assert await ws.add_verification(full) is True
    found = await ws.get_verification("ws_1", True, "ver_1")

    assert found == full  # the moments equal as instants, whatever zone they come back in
    assert found is not None
    assert all(m.tzinfo is not None for m in (found.created_at, found.sends[1].created_at))


async def test_a_verification_is_invisible_to_other_workspaces_and_modes(ws: Store) -> None:
    await ws.create_workspace(Workspace("ws_2", "Other", T0))
    await ws.add_verification(a_verification())

    assert await ws.get_verification("ws_2", True, "ver_1") is None
    assert await ws.get_verification("ws_1", False, "ver_1") is None
    assert await ws.get_verification("ws_1", True, "ver_unknown") is None
    assert await ws.pending_verification("ws_2", True, TO) is None
    assert await ws.pending_verification("ws_1", False, TO) is None


async def test_a_verification_needs_its_workspace(store: Store) -> None:
    with pytest.raises(ResourceNotFound):
        await store.add_verification(a_verification())


async def test_a_recipient_has_one_pending_verification_at_a_time(ws: Store) -> None:
    assert await ws.add_verification(a_verification("ver_1")) is True

    assert await ws.add_verification(a_verification("ver_2")) is False

    assert await ws.get_verification("ws_1", True, "ver_2") is None
    pending = await ws.pending_verification("ws_1", True, TO)
    assert pending is not None and pending.id == "ver_1"
    # Another recipient, or the other mode, is another key.
    assert await ws.add_verification(a_verification("ver_3", to="+905551234568")) is True
    assert await ws.add_verification(a_verification("ver_4", livemode=False)) is True


async def test_concurrent_starts_for_one_recipient_store_one(ws: Store) -> None:
    started = await asyncio.gather(
        *(ws.add_verification(a_verification(f"ver_{n}")) for n in range(8))
    )

    assert sorted(started) == [False] * 7 + [True]


async def test_a_finished_verification_is_no_longer_pending(ws: Store) -> None:
    first = a_verification("ver_1")
    await ws.add_verification(first)

    approved = replace(first, status="approved", version=1, updated_at=T0 + timedelta(seconds=9))
    assert await ws.replace_verification(approved) is True

    assert await ws.pending_verification("ws_1", True, TO) is None
    assert await ws.get_verification("ws_1", True, "ver_1") == approved
    assert await ws.add_verification(a_verification("ver_2")) is True
    pending = await ws.pending_verification("ws_1", True, TO)
    assert pending is not None and pending.id == "ver_2"


async def test_replace_compares_versions(ws: Store) -> None:
    first = a_verification()
    await ws.add_verification(first)
    wrong_once = replace(first, wrong_checks=1, version=1)
    assert await ws.replace_verification(wrong_once) is True

    stale = replace(first, status="approved", version=1)  # computed from version 0
    assert await ws.replace_verification(stale) is False
    skipping = replace(first, status="approved", version=3)
    assert await ws.replace_verification(skipping) is False

    assert await ws.get_verification("ws_1", True, "ver_1") == wrong_once
    assert await ws.replace_verification(a_verification("ver_unknown", version=1)) is False


async def test_concurrent_replacements_of_one_version_let_exactly_one_win(ws: Store) -> None:
    first = a_verification()
    await ws.add_verification(first)
    changes = [replace(first, wrong_checks=n, version=1) for n in range(1, 7)]

    won = await asyncio.gather(*(ws.replace_verification(c) for c in changes))

    assert sorted(won) == [False] * 5 + [True]
    stored = await ws.get_verification("ws_1", True, "ver_1")
    assert stored == changes[won.index(True)]


async def test_verifications_started_are_the_recipients_since_a_moment(ws: Store) -> None:
    await ws.create_workspace(Workspace("ws_2", "Other", T0))
    moments = [T0 + timedelta(minutes=n) for n in range(4)]
    for n, moment in enumerate(moments):
        # Each finished at once, so the next one can start.
        await ws.add_verification(a_verification(f"ver_{n}", created_at=moment, status="expired"))
    await ws.add_verification(a_verification("ver_other", to="+905551234568", created_at=T0))
    await ws.add_verification(a_verification("ver_test", livemode=False, created_at=T0))
    await ws.add_verification(a_verification("ver_ws2", workspace_id="ws_2", created_at=T0))

    started = await ws.verifications_started("ws_1", True, TO, moments[0])

    assert sorted(started) == moments[1:]
    assert all(moment.tzinfo is not None for moment in started)
    assert await ws.verifications_started("ws_1", True, TO, moments[3]) == []


async def test_settings_are_none_until_put_then_round_trip(ws: Store) -> None:
    assert await ws.get_verification_settings("ws_1") is None
    settings = VerificationSettings(
        max_checks=3, max_sends=2, resend_cooldown=timedelta(seconds=90), hourly_limit=10_000
    )

    await ws.put_verification_settings("ws_1", settings)
    await ws.put_verification_settings("ws_1", replace(settings, max_sends=4))

    assert await ws.get_verification_settings("ws_1") == replace(settings, max_sends=4)
    assert await ws.get_verification_settings("ws_unknown") is None


async def test_settings_need_their_workspace(store: Store) -> None:
    with pytest.raises(ResourceNotFound):
        await store.put_verification_settings("ws_1", VerificationSettings())


async def test_a_closed_store_opened_again_keeps_what_it_stored(ws: Store) -> None:
    await ws.add_verification(a_verification())

    await ws.close()
    await ws.close()  # closing twice is harmless
    await ws.open()

    assert await ws.get_verification("ws_1", True, "ver_1") == a_verification()
    assert await ws.get_workspace("ws_1") == Workspace("ws_1", "Acme", T0)
