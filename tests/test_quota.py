"""D17's rule in one module (``_quota``): who pays, in which month, and which units come back."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_lifecycle import record

from unified_messaging._domain import Workspace
from unified_messaging._quota import charge, keeps_unit, quota_period, release_unit
from unified_messaging._routing.dispatch import Job
from unified_messaging.providers.base import SubmitOutcome
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


def _job(*kinds: str, paced: bool = False) -> Job:
    job = Job(job_id="msg_1", to="+905551234567", text="hi", workspace_id="ws_1")
    job.outcome_kinds = list(kinds)  # type: ignore[arg-type]
    if kinds:
        job.last_outcome = SubmitOutcome(kind=kinds[-1])  # type: ignore[arg-type]
    if paced:
        job.paced_until = datetime(2026, 1, 1, tzinfo=UTC)
    return job


@pytest.mark.parametrize(
    ("job", "queue", "kept"),
    [
        (_job("rejected", "accepted"), False, True),
        (_job("rejected"), True, False),
        (_job("unavailable", "unavailable"), False, False),
        (_job("unavailable", "unavailable"), True, True),
        (_job("unavailable", "rejected"), True, False),
        (_job(paced=True), False, True),
    ],
    ids=[
        "accepted after a fallback",
        "rejected",
        "unreachable, no D7 retries",
        "unreachable, queued for D7 retries",
        "one provider rejected it: no retry",
        "waiting for its D27 slot",
    ],
)
def test_a_unit_is_kept_while_a_provider_has_or_may_yet_take_the_message(
    job: Job, queue: bool, kept: bool
) -> None:
    assert keeps_unit(job, queue=queue) is kept


async def test_a_released_unit_comes_back_only_in_live_mode() -> None:
    store = MemoryStore()
    live = record()
    await store.create_workspace(Workspace(live.workspace_id, "acme", live.created_at))
    period = quota_period(live.created_at)
    taken = charge(live.workspace_id, True, [live], 2)
    assert taken is not None
    assert await store.accept_messages([live], quota=taken)
    await release_unit(store, live)
    assert await store.quota_used(live.workspace_id, period) == 1
    await release_unit(store, replace(live, livemode=False))
    assert await store.quota_used(live.workspace_id, period) == 1
