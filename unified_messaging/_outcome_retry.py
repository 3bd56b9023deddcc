"""Retrying a write the store refused for a moment (``StorageUnavailable``), within a bound.

A send whose provider accepted the message must keep that truth: if the store is down for
the moment the outcome is written (a PostgreSQL restart, a fail-over), the write is tried
again until the store answers or ``within`` has passed. Past it, the error is raised and the
send's submit check settles the rows later (``unknown``): the bound stays below the submit
time-out, so the check never has to race a write still being retried.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Final, TypeVar

from ._errors import StorageUnavailable

__all__ = ["retry_while_unavailable"]

T = TypeVar("T")

_FIRST_WAIT: Final = 0.05
_LONGEST_WAIT: Final = 1.0


async def retry_while_unavailable(
    write: Callable[[], Awaitable[T]],
    *,
    within: timedelta,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> T:
    """``await write()``, again after each :class:`StorageUnavailable` (waits doubling from
    50 ms to 1 s) until it succeeds or ``within`` has passed since the first try; then the
    last error is raised. Real time: an outage is measured in it, whatever clock the caller
    keeps for its records."""
    deadline = monotonic() + within.total_seconds()
    wait = _FIRST_WAIT
    while True:
        try:
            return await write()
        except StorageUnavailable:
            left = deadline - monotonic()
            if left <= 0:
                raise
            await sleep(min(wait, left))
            wait = min(wait * 2, _LONGEST_WAIT)
