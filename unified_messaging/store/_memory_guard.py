"""The memory store's index for the flood guard (D28): counted messages per recipient.

Scanning every stored message per send would make a long test or benchmark quadratic, so
the store keeps, per (workspace, mode, recipient), the creation times of the messages that
count, sorted. Times older than the longest window the guard allows are dropped as keys are
touched; nothing else ever removes a message from the memory store.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from datetime import datetime

from .._access.flood_guard import (
    MAX_WINDOW,
    RecipientKey,
    RecipientLimit,
    counts_toward_limit,
    recipient_refusals,
    refused,
)
from .._domain import MessageRecord

__all__ = ["RecipientIndex"]


class RecipientIndex:
    """Not thread-safe by itself: the store calls it under its own lock."""

    def __init__(self) -> None:
        self._times: dict[RecipientKey, list[datetime]] = {}

    def check(self, messages: Sequence[MessageRecord], limit: RecipientLimit | None) -> None:
        """Raise :class:`RecipientRateLimited` if ``messages`` would take a recipient past
        ``limit``; changes nothing."""
        if limit is None:
            return
        refusals = recipient_refusals(messages, limit, self._recent)
        if refusals:
            raise refused(refusals)

    def add(self, messages: Iterable[MessageRecord]) -> None:
        """Count newly stored messages."""
        for record in messages:
            if counts_toward_limit(record):
                key = RecipientKey(record.workspace_id, record.livemode, record.to)
                bisect.insort(self._times.setdefault(key, []), record.created_at)

    def _recent(self, key: RecipientKey, since: datetime, limit: int) -> list[datetime]:
        times = self._times.get(key)
        if not times:
            return []
        stale = bisect.bisect_right(times, times[-1] - MAX_WINDOW)
        if stale:
            del times[:stale]
        start = max(bisect.bisect_right(times, since), len(times) - limit)
        return times[start:][::-1]
