"""D17's rule in one module (``_quota``): who pays, in which month, and which units come back."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_lifecycle import record

from unified_messaging._domain import Workspace
from unified_messaging._quota import charge, quota_period, release_unit, units_to_release
from unified_messaging.store.memory import MemoryStore

MOMENTS = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)


@given(MOMENTS)
def test_the_period_is_the_utc_month_of_the_moment(moment: datetime) -> None:
    assert quota_period(moment) == f"{moment.year:04d}-{moment.month:02d}"


def test_a_message_made_in_the_last_second_of_a_month_counts_in_that_month() -> None:
    last = datetime(2026, 11, 30, 23, 59, 59, tzinfo=UTC)
    assert quota_period(last) == "2026-11"
    assert quota_period(last + timedelta(seconds=1)) == "2026-12"


def test_a_charge_is_of_the_month_the_messages_were_made_in() -> None:
    made = replace(record(), created_at=datetime(2026, 12, 31, 23, 0, tzinfo=UTC))
    taken = charge("ws_1", True, [made], 3, limit=100)
    assert taken is not None
    assert (taken.workspace_id, taken.period, taken.units, taken.limit) == (
        "ws_1",
        "2026-12",
        3,
        100,
    )


@pytest.mark.parametrize(
    ("livemode", "units", "records"),
    [(False, 3, 1), (True, 0, 1), (True, 3, 0)],
    ids=["test mode is free", "no unit", "no message"],
)
def test_nothing_to_count_is_no_charge(livemode: bool, units: int, records: int) -> None:
    assert charge("ws_1", livemode, [record()] * records, units) is None


@pytest.mark.parametrize(
    ("statuses", "released"),
    [
        ((), 0),
        (("sent", "delivered", "queued"), 0),
        (("failed",), 1),
        (("sent", "failed", "queued", "failed"), 2),
    ],
)
def test_only_a_failed_message_gives_its_unit_back(
    statuses: tuple[str, ...], released: int
) -> None:
    records = [
        replace(record(), status=status, attempts=() if status == "failed" else record().attempts)  # type: ignore[call-arg]
        for status in statuses
    ]
    assert units_to_release(records) == released


def test_a_failed_message_a_provider_took_keeps_its_unit() -> None:
    """A fallback that failed after the first provider accepted (then reported it failed)."""
    taken = replace(record(), status="failed")
    assert taken.attempts[-1].provider_message_id is not None
    assert units_to_release([taken]) == 0


async def test_a_released_unit_comes_back_only_in_live_mode() -> None:
    store = MemoryStore()
    live = record()
    await store.create_workspace(Workspace(live.workspace_id, "acme", live.created_at))
    period = quota_period(live.created_at)
    taken = charge(live.workspace_id, True, [live], 2)
    assert taken is not None
    assert await store.accept_messages([live], quota=taken)
    given_up = replace(live, status="failed", attempts=())
    await release_unit(store, given_up)
    assert await store.quota_used(live.workspace_id, period) == 1
    await release_unit(store, replace(given_up, livemode=False))
    assert await store.quota_used(live.workspace_id, period) == 1
    await release_unit(store, replace(live, status="failed"))  # a provider took this one
    assert await store.quota_used(live.workspace_id, period) == 1
