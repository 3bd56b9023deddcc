"""When to try a failed webhook delivery again, and when to give up on an endpoint (D19).

Pure functions of time: the worker stores what they return as ``next_attempt_at`` and
``failing_since`` rows, so the schedule survives restarts and tests move a manual clock.

- Attempt 1 goes out at once. After failed attempt ``n`` the next one waits
  ``schedule[n - 1]``; when the schedule is used up the delivery is given up. With the default
  schedule that is 8 attempts over about 27.6 hours.
- A ``Retry-After`` (429/502/503/504) can only lengthen a wait, never shorten it: a receiver
  that is shedding load gets at least our normal back-off, and one that asks for more gets it.
  It is capped at the schedule's longest step, so a hostile or buggy ``Retry-After: 99999999``
  cannot park a delivery for years.
- An endpoint failing without a single success for 5 days is disabled; ``410 Gone`` disables
  it at once (the sender reports that; see ``_webhook_sender``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Final

__all__ = [
    "DEFAULT_SCHEDULE",
    "DISABLE_AFTER",
    "next_attempt_at",
    "retry_delay",
    "should_disable",
]

DEFAULT_SCHEDULE: Final[tuple[timedelta, ...]] = (
    timedelta(seconds=5),
    timedelta(minutes=5),
    timedelta(minutes=30),
    timedelta(hours=2),
    timedelta(hours=5),
    timedelta(hours=10),
    timedelta(hours=10),
)
#: Continuous failure this long disables an endpoint.
DISABLE_AFTER: Final = timedelta(days=5)


def retry_delay(
    attempt_number: int,
    *,
    schedule: Sequence[timedelta] = DEFAULT_SCHEDULE,
    retry_after: float | None = None,
) -> timedelta | None:
    """How long to wait after failed attempt ``attempt_number`` (1-based); ``None``: give up."""
    if attempt_number < 1:
        raise ValueError("attempt numbers start at 1")
    if attempt_number > len(schedule):
        return None
    delay = schedule[attempt_number - 1]
    if retry_after is None or not math.isfinite(retry_after) or retry_after <= 0:
        return delay
    longest = max(schedule)
    asked = timedelta(seconds=min(retry_after, longest.total_seconds()))
    return max(delay, asked)


def next_attempt_at(
    attempt_number: int,
    *,
    now: datetime,
    schedule: Sequence[timedelta] = DEFAULT_SCHEDULE,
    retry_after: float | None = None,
) -> datetime | None:
    """When to make the next attempt after failed attempt ``attempt_number``; ``None``: give up.

    ``retry_after`` is the receiver's ``Retry-After`` in seconds, if it sent one.
    """
    delay = retry_delay(attempt_number, schedule=schedule, retry_after=retry_after)
    return None if delay is None else now + delay


def should_disable(
    failing_since: datetime | None, now: datetime, *, after: timedelta = DISABLE_AFTER
) -> bool:
    """Has the endpoint failed without a success for ``after`` (default 5 days) by ``now``?"""
    return failing_since is not None and now - failing_since >= after
