"""The windows of the overview and their buckets: the last 24 hours by hour, the last 7 or
30 days by day in a time zone. Pure functions of "now" and a zone.

A window always ends with the hour that holds "now" (so the newest bar grows as the hour
goes on). ``24h`` is the 24 UTC hours up to and including it. ``7d`` and ``30d`` are that
many calendar days in the zone, today included, each bucket from one local midnight to the
next (23 or 25 hours on a daylight-saving day). Counts are kept per UTC hour, so a bucket's
edges are whole UTC hours: in a zone whose offset is not a whole number of hours (Asia/
Kolkata, +05:30) each day's bucket starts at the UTC hour holding its local midnight.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import Final, Literal, TypeAlias, get_args
from zoneinfo import ZoneInfo

from ._buckets import hour_of

__all__ = ["WINDOWS", "Bucket", "Window", "WindowPlan", "plan_window"]

Window: TypeAlias = Literal["24h", "7d", "30d"]
WINDOWS: Final[tuple[Window, ...]] = get_args(Window)
_DAYS: Final[dict[Window, int]] = {"7d": 7, "30d": 30}


@dataclass(frozen=True, slots=True)
class Bucket:
    """One bar of the chart: the UTC hours ``[start, end)`` (hours since the epoch)."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class WindowPlan:
    """A window's buckets, oldest first, one after another without a gap."""

    window: Window
    unit: Literal["hour", "day"]
    zone: ZoneInfo
    buckets: tuple[Bucket, ...]

    @property
    def start(self) -> int:
        return self.buckets[0].start

    @property
    def end(self) -> int:
        return self.buckets[-1].end

    def index_of(self, hour: int) -> int | None:
        """Which bucket holds ``hour``; ``None`` outside the window."""
        if not self.start <= hour < self.end:
            return None
        starts = [bucket.start for bucket in self.buckets]
        return bisect.bisect_right(starts, hour) - 1


def plan_window(window: Window, now: datetime, zone: ZoneInfo) -> WindowPlan:
    """The buckets of ``window`` ending with the hour that holds ``now`` (aware)."""
    current = hour_of(now)
    if window == "24h":
        hours = range(current - 23, current + 1)
        return WindowPlan(window, "hour", zone, tuple(Bucket(h, h + 1) for h in hours))
    today = now.astimezone(zone).date()
    days = [today - timedelta(days=back) for back in range(_DAYS[window] - 1, -1, -1)]
    starts = [hour_of(datetime.combine(day, time(0), tzinfo=zone)) for day in days]
    ends = [*starts[1:], current + 1]
    return WindowPlan(
        window, "day", zone, tuple(Bucket(s, e) for s, e in zip(starts, ends, strict=True))
    )
