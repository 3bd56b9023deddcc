"""The units the delivery figures are counted in: whole UTC hours, and delivery times in
buckets. Pure functions, shared by the memory store, the SQL store's migration (which spells
the same bounds out in its triggers) and the overview.

- An **hour** is a whole UTC hour, as the number of hours since the Unix epoch: every count
  is kept per hour of the message's ``created_at`` (and per UTC day, for long windows).
- A **delivery time** (``final_at - sent_at`` of a delivered message) is counted in the
  bucket of :data:`LATENCY_BOUNDS_MS` it falls in; a percentile is read back as the upper
  bound of the bucket that holds it (:func:`percentile_bound`), so it is never lower than
  the true value and at most one bucket (about 1.5 times) above it.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

__all__ = [
    "DAY_HOURS",
    "EPOCH",
    "LATENCY_BOUNDS_MS",
    "HourRanges",
    "hour_of",
    "hour_start",
    "latency_bucket",
    "percentile_bound",
    "split_hours",
]

EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_HOUR: Final = timedelta(hours=1)
_MICROSECOND: Final = timedelta(microseconds=1)
#: Hours in a UTC day: the span of the coarse rows that long windows read.
DAY_HOURS: Final = 24

#: Upper bounds (exclusive) of the delivery-time buckets, in milliseconds: bucket ``i``
#: holds ``[LATENCY_BOUNDS_MS[i-1], LATENCY_BOUNDS_MS[i])`` (bucket 0 everything below
#: 100 ms, a negative time from clock skew included), and the last bucket everything from
#: 48 hours on. Each bound is at most 1.5 times the one before from 1 s up. The migration
#: that builds the SQL triggers spells these out; a test holds the two to the same buckets.
LATENCY_BOUNDS_MS: Final[tuple[int, ...]] = (
    100, 200, 300, 500, 700,
    1_000, 1_500, 2_000, 3_000, 4_000, 5_000, 7_000,
    10_000, 15_000, 20_000, 30_000, 45_000,
    60_000, 90_000, 120_000, 180_000, 240_000, 300_000, 420_000, 600_000, 900_000,
    1_200_000, 1_800_000, 2_700_000,
    3_600_000, 5_400_000, 7_200_000, 10_800_000, 14_400_000, 21_600_000, 32_400_000,
    43_200_000, 64_800_000, 86_400_000, 129_600_000, 172_800_000,
)  # fmt: skip
_BOUNDS_US: Final = tuple(bound * 1000 for bound in LATENCY_BOUNDS_MS)


def hour_of(moment: datetime) -> int:
    """The UTC hour ``moment`` falls in, as hours since the epoch (floored, also before it)."""
    return (moment - EPOCH) // _HOUR


def hour_start(hour: int) -> datetime:
    """When ``hour`` (hours since the epoch) begins, in UTC."""
    return EPOCH + hour * _HOUR


def latency_bucket(sent_at: datetime, final_at: datetime) -> int:
    """The bucket of the delivery time ``final_at - sent_at``, counted in whole
    microseconds as the SQL triggers count it."""
    micros = (final_at - sent_at) // _MICROSECOND
    return bisect.bisect_right(_BOUNDS_US, micros)


def bucket_bound(bucket: int) -> int:
    """What a percentile in ``bucket`` is reported as, in milliseconds: the bucket's upper
    bound; for the open last bucket its lower bound (48 hours: "at least")."""
    return LATENCY_BOUNDS_MS[min(bucket, len(LATENCY_BOUNDS_MS) - 1)]


def percentile_bound(histogram: Mapping[int, int], percent: int) -> int | None:
    """The ``percent``-th percentile (nearest rank) of the delivery times counted in
    ``histogram`` (bucket → count), as :func:`bucket_bound` of the bucket holding it;
    ``None`` when nothing is counted. Non-positive counts are ignored."""
    counts = sorted((bucket, n) for bucket, n in histogram.items() if n > 0)
    total = sum(n for _, n in counts)
    if total == 0:
        return None
    rank = (percent * total + 99) // 100  # ceil(percent * total / 100), at least 1
    seen = 0
    for bucket, n in counts:
        seen += n
        if seen >= max(rank, 1):
            return bucket_bound(bucket)
    raise AssertionError("unreachable: the ranks add up to total")  # pragma: no cover


@dataclass(frozen=True, slots=True)
class HourRanges:
    """``[start, end)`` (hours) split for reading: ``days`` the whole UTC days inside it
    (``[d0, d1)``, hours on day bounds; empty when ``d0 == d1``), ``hours`` the hours left
    at either edge, as ranges. Together they cover ``[start, end)`` once."""

    days: tuple[int, int]
    hours: tuple[tuple[int, int], ...]


def split_hours(start: int, end: int) -> HourRanges:
    """Split the hours ``[start, end)`` into whole UTC days and the hours at its edges, so a
    long window reads one row per day instead of 24 (see :class:`HourRanges`)."""
    if end <= start:
        return HourRanges((start, start), ())
    first_day = -(-start // DAY_HOURS) * DAY_HOURS  # the first day bound at or after start
    last_day = end // DAY_HOURS * DAY_HOURS  # the last day bound at or before end
    if first_day >= last_day:
        return HourRanges((start, start), ((start, end),))
    edges = tuple(r for r in ((start, first_day), (last_day, end)) if r[0] < r[1])
    return HourRanges((first_day, last_day), edges)
