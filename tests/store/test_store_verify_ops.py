"""The store's part of Verify's operations (D34) on every backend: the pumping guard's
settings (a rule off is kept off), conversion counts grouped by hour, channel and mode, and a
workspace's newest verifications."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from unified_messaging import ResourceNotFound
from unified_messaging._domain import Workspace
from unified_messaging.store.base import Store
from unified_messaging.verifications import GuardSettings, Velocity, Verification

T0 = datetime(2026, 12, 2, 7, 0, tzinfo=UTC)


def verification(n: int, at: datetime, *, livemode: bool = True, workspace: str = "ws_1",
                 status: str = "pending") -> Verification:  # fmt: skip
    return Verification(
        id=f"ver_{n:04d}", workspace_id=workspace, livemode=livemode, to=f"+9053200{n:05d}",
        channel="sms", status=status, code_digest="k1.x", code_length=6, locale="tr",  # type: ignore[arg-type]
        created_at=at, updated_at=at, expires_at=at + timedelta(minutes=10), max_checks=5,
    )  # fmt: skip


@pytest.fixture
async def ready(store: Store) -> Store:
    for name in ("ws_1", "ws_2"):
        await store.create_workspace(Workspace(id=name, name=name, created_at=T0))
    return store


async def test_guard_settings_round_trip_with_a_rule_off(ready: Store) -> None:
    assert await ready.get_verification_guard("ws_1") is None
    settings = GuardSettings(
        prefix_limit=Velocity(7, timedelta(seconds=90)), prefix_digits=4, address_limit=None
    )

    await ready.put_verification_guard("ws_1", settings)
    await ready.put_verification_guard("ws_1", replace(settings, prefix_digits=5))

    found = await ready.get_verification_guard("ws_1")
    assert found == replace(settings, prefix_digits=5)
    assert found is not None and str(found.prefix_limit) == "7/90s"
    assert await ready.get_verification_guard("ws_2") is None


async def test_guard_settings_of_an_unknown_workspace_are_refused(ready: Store) -> None:
    with pytest.raises(ResourceNotFound):
        await ready.put_verification_guard("ws_none", GuardSettings())


async def test_counts_are_grouped_by_hour_channel_and_mode(ready: Store) -> None:
    rows = [
        verification(1, T0 + timedelta(minutes=5), status="approved"),
        verification(2, T0 + timedelta(minutes=59, seconds=59)),
        verification(3, T0 + timedelta(hours=1), status="approved"),
        verification(4, T0 + timedelta(hours=1, minutes=1), livemode=False, status="approved"),
        verification(5, T0 + timedelta(hours=1), workspace="ws_2"),
        verification(6, T0 - timedelta(minutes=1)),  # before ``since``
    ]
    for row in rows:
        assert await ready.add_verification(row)

    mine = await ready.verification_counts(T0, workspace_id="ws_1", livemode=True)
    every = await ready.verification_counts(T0)

    assert [(c.hour, c.started, c.approved) for c in mine] == [
        (T0, 2, 1),
        (T0 + timedelta(hours=1), 1, 1),
    ]
    assert {(c.hour, c.livemode): c.started for c in every} == {
        (T0, True): 2,
        (T0 + timedelta(hours=1), True): 2,
        (T0 + timedelta(hours=1), False): 1,
    }
    assert all(c.channel == "sms" for c in every)


async def test_recent_verifications_are_newest_first_per_workspace_and_mode(
    ready: Store,
) -> None:
    for n in range(5):
        await ready.add_verification(verification(n, T0 + timedelta(seconds=n)))
    await ready.add_verification(verification(9, T0 + timedelta(hours=1), livemode=False))

    found = await ready.recent_verifications("ws_1", True, 3)

    assert [v.id for v in found] == ["ver_0004", "ver_0003", "ver_0002"]
    assert [v.id for v in await ready.recent_verifications("ws_1", False, 10)] == ["ver_0009"]
    assert await ready.recent_verifications("ws_2", True, 10) == []
