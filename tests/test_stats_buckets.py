"""The units of the delivery figures, as properties: UTC hours, delivery-time buckets and the
percentiles read back from them, the split of a window into days and edge hours, and the
buckets of each window in any time zone."""

from __future__ import annotations

import bisect
import itertools
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, available_timezones

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unified_messaging.stats._buckets import (
    DAY_HOURS,
    EPOCH,
    LATENCY_BOUNDS_MS,
    bucket_bound,
    hour_of,
    hour_start,
    latency_bucket,
    percentile_bound,
    split_hours,
)
from unified_messaging.stats._windows import WINDOWS, plan_window

moments = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)
ZONES = sorted(available_timezones() - {"Factory", "localtime"})
zones = st.sampled_from(ZONES).map(ZoneInfo)


@given(moments)
def test_a_moment_falls_in_the_hour_it_names(moment: datetime) -> None:
    hour = hour_of(moment)
    assert hour_start(hour) <= moment < hour_start(hour + 1)
    assert hour_start(hour).minute == hour_start(hour).second == 0


def test_hours_count_from_the_epoch_and_floor_before_it() -> None:
    assert hour_of(EPOCH) == 0
    assert hour_of(EPOCH + timedelta(minutes=59)) == 0
    assert hour_of(EPOCH - timedelta(microseconds=1)) == -1


@given(st.integers(min_value=-(10**6), max_value=4 * 86_400 * 10**6))
def test_a_delivery_time_falls_in_the_bucket_between_its_bounds(micros: int) -> None:
    sent = datetime(2026, 3, 1, tzinfo=UTC)
    bucket = latency_bucket(sent, sent + timedelta(microseconds=micros))
    bounds_us = [b * 1000 for b in LATENCY_BOUNDS_MS]
    if bucket < len(bounds_us):
        assert micros < bounds_us[bucket]
    if bucket > 0:
        assert micros >= bounds_us[bucket - 1]


def test_the_buckets_grow_by_at_most_half_from_a_second_on() -> None:
    assert list(LATENCY_BOUNDS_MS) == sorted(set(LATENCY_BOUNDS_MS))
    from_a_second = [b for b in LATENCY_BOUNDS_MS if b >= 1000]
    assert all(b <= a * 1.5 for a, b in itertools.pairwise(from_a_second))
    assert (LATENCY_BOUNDS_MS[0], LATENCY_BOUNDS_MS[-1]) == (100, 48 * 3_600_000)


def test_edges_of_a_bucket_are_exact_to_the_microsecond() -> None:
    sent = datetime(2026, 3, 1, tzinfo=UTC)
    just_under = sent + timedelta(seconds=4) - timedelta(microseconds=1)
    assert latency_bucket(sent, just_under) == latency_bucket(sent, sent + timedelta(seconds=3))
    assert latency_bucket(sent, sent + timedelta(seconds=4)) == latency_bucket(sent, just_under) + 1


@given(
    st.lists(st.integers(min_value=0, max_value=3 * 86_400_000), min_size=1, max_size=200),
    st.sampled_from([50, 95, 99, 1, 100]),
)
def test_a_percentile_read_from_the_buckets_bounds_the_true_one_from_above(
    millis: list[int], percent: int
) -> None:
    """The nearest-rank percentile of the times themselves lies in the bucket whose bound
    is reported: the report is the bound of the true value's bucket."""
    sent = datetime(2026, 3, 1, tzinfo=UTC)
    histogram: dict[int, int] = {}
    for ms in millis:
        bucket = latency_bucket(sent, sent + timedelta(milliseconds=ms))
        histogram[bucket] = histogram.get(bucket, 0) + 1
    ordered = sorted(millis)
    true = ordered[(percent * len(ordered) + 99) // 100 - 1]

    reported = percentile_bound(histogram, percent)

    true_bucket = bisect.bisect_right(LATENCY_BOUNDS_MS, true)
    assert reported == bucket_bound(true_bucket)
    if true_bucket < len(LATENCY_BOUNDS_MS):
        assert true < reported <= max(true * 2, 100)  # above it, by at most one bucket


def test_no_delivery_times_have_no_percentile() -> None:
    assert percentile_bound({}, 50) is None
    assert percentile_bound({3: 0, 4: -1}, 95) is None


@given(st.integers(0, 10**6), st.integers(0, 2000))
def test_a_window_splits_into_whole_days_and_edge_hours_covering_it_once(
    start: int, length: int
) -> None:
    end = start + length
    ranges = split_hours(start, end)
    covered: list[int] = []
    day_start, day_end = ranges.days
    if day_start < day_end:
        assert day_start % DAY_HOURS == 0 and day_end % DAY_HOURS == 0
    covered.extend(range(day_start, day_end))
    for first, last in ranges.hours:
        assert first < last
        covered.extend(range(first, last))
    assert sorted(covered) == list(range(start, end))
    # Edge hours are never a whole day that day rows could have answered.
    assert all(last - first < DAY_HOURS for first, last in ranges.hours) or day_start == day_end


def test_an_empty_or_backward_window_reads_nothing() -> None:
    assert split_hours(50, 50).hours == () and split_hours(50, 40).hours == ()


@settings(max_examples=300)
@given(st.sampled_from(WINDOWS), moments, zones)
def test_a_windows_buckets_follow_each_other_and_end_with_the_current_hour(
    window: str, now: datetime, zone: ZoneInfo
) -> None:
    plan = plan_window(window, now, zone)  # type: ignore[arg-type]

    assert plan.end == hour_of(now) + 1
    assert all(a.end == b.start for a, b in zip(plan.buckets, plan.buckets[1:], strict=False))
    assert all(b.start < b.end for b in plan.buckets)
    assert plan.index_of(hour_of(now)) == len(plan.buckets) - 1
    assert plan.index_of(plan.start - 1) is None and plan.index_of(plan.end) is None
    if window == "24h":
        assert len(plan.buckets) == 24 and all(b.end - b.start == 1 for b in plan.buckets)
        return
    days = {"7d": 7, "30d": 30}[window]
    assert len(plan.buckets) == days
    for bucket in plan.buckets[:-1]:
        # A calendar day: 23 to 25 hours (daylight saving), 22 to 26 when a zone moved its
        # offset by more (rare changes in the tz database), never less than most of a day.
        assert 20 <= bucket.end - bucket.start <= 28
    # Each bucket starts in the UTC hour that holds a local midnight: the local date turns
    # within that hour.
    tiny = timedelta(microseconds=1)
    for bucket in plan.buckets:
        before = (hour_start(bucket.start) - tiny).astimezone(zone).date()
        after = (hour_start(bucket.start + 1) - tiny).astimezone(zone).date()
        assert before != after


def test_istanbul_days_start_at_21_utc() -> None:
    now = datetime(2026, 3, 2, 6, 30, tzinfo=UTC)  # 09:30 in Istanbul
    plan = plan_window("7d", now, ZoneInfo("Europe/Istanbul"))

    assert [hour_start(b.start).isoformat() for b in plan.buckets[:2]] == [
        "2026-02-23T21:00:00+00:00",
        "2026-02-24T21:00:00+00:00",
    ]
    assert hour_start(plan.buckets[-1].start) == datetime(2026, 3, 1, 21, tzinfo=UTC)
    assert hour_start(plan.end) == datetime(2026, 3, 2, 7, tzinfo=UTC)


@pytest.mark.parametrize(
    ("now", "hours"),
    [
        # The day summer time starts in Berlin (31 March 2024) has 23 hours, the day it ends
        # (27 October 2024) 25.
        (datetime(2024, 4, 1, 12, tzinfo=UTC), 23),
        (datetime(2024, 10, 28, 12, tzinfo=UTC), 25),
    ],
)
def test_a_daylight_saving_day_is_one_bucket_of_its_own_length(now: datetime, hours: int) -> None:
    plan = plan_window("7d", now, ZoneInfo("Europe/Berlin"))
    yesterday = plan.buckets[-2]
    assert yesterday.end - yesterday.start == hours
