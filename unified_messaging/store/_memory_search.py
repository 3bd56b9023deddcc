"""Listing messages and the provider scorecard over records in memory.

The in-memory store's half of ``Store.list_messages`` and ``Store.connection_stats``; the
SQL store computes the same in SQL (``_sql_search``), and the store contract tests hold the
two to the same answers. Plain functions over records, so they are tested without a store.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .._domain import MessageRecord
from .._types import ProviderCode
from .base import ConnectionStats, MessageQuery

__all__ = ["delivery_ms", "list_order", "matches", "nearest_rank", "scorecard"]

_MICROSECOND = timedelta(microseconds=1)


def matches(record: MessageRecord, query: MessageQuery) -> bool:
    """Does ``record`` belong in the answer to ``query`` (its workspace, mode and filters)?"""
    if record.workspace_id != query.workspace_id or record.livemode != query.livemode:
        return False
    if query.to and record.to not in query.to:
        return False
    if query.status is not None and record.status != query.status:
        return False
    if query.provider is not None and record.provider != query.provider:
        return False
    if query.created_after is not None and record.created_at < query.created_after:
        return False
    if query.created_before is not None and record.created_at >= query.created_before:
        return False
    return query.older_than is None or list_order(record) < query.older_than


def list_order(record: MessageRecord) -> tuple[datetime, str]:
    """The key the list is sorted by, descending: newest first, ties by job id."""
    return record.created_at, record.job_id


def delivery_ms(sent_at: datetime, final_at: datetime) -> int:
    """``final_at - sent_at`` in milliseconds, half a millisecond rounded up (as in SQL)."""
    return ((final_at - sent_at) // _MICROSECOND + 500) // 1000


def nearest_rank(ordered: list[int], percent: int) -> int | None:
    """The ``percent``-th percentile of the ascending ``ordered`` by nearest rank: the value
    at rank ``ceil(percent * n / 100)``; ``None`` for no values."""
    if not ordered:
        return None
    return ordered[(percent * len(ordered) + 99) // 100 - 1]


@dataclass
class _Tally:
    counts: dict[str, int] = field(default_factory=dict)
    times: list[int] = field(default_factory=list)

    def add(self, name: str) -> None:
        self.counts[name] = self.counts.get(name, 0) + 1


_STATE_COLUMN = {
    "delivered": "delivered",
    "expired": "expired",
    "failed": "failed",
    "rejected": "failed",
    "unavailable": "failed",
    "unknown": "unknown",
    "accepted": "pending",
}


def scorecard(records: Iterable[MessageRecord]) -> list[ConnectionStats]:
    """:class:`ConnectionStats` per provider over ``records`` (already the workspace's, of
    one mode, created since the moment asked for), sorted by provider code."""
    tallies: dict[ProviderCode, _Tally] = {}
    for record in records:
        last = len(record.attempts) - 1
        for index, attempt in enumerate(record.attempts):
            tally = tallies.setdefault(attempt.provider, _Tally())
            if attempt.provider_message_id is not None:
                tally.add("sent")
            tally.add(_STATE_COLUMN[attempt.status])
            if index < last:
                tally.add("fallbacks")
        delivered = record.status == "delivered"
        if delivered and record.sent_at is not None and record.final_at is not None:
            tally = tallies.setdefault(record.provider, _Tally())
            tally.times.append(delivery_ms(record.sent_at, record.final_at))
    return [_stats(provider, tallies[provider]) for provider in sorted(tallies)]


def _stats(provider: ProviderCode, tally: _Tally) -> ConnectionStats:
    times = sorted(tally.times)
    counts = tally.counts
    return ConnectionStats(
        provider=provider,
        sent=counts.get("sent", 0),
        delivered=counts.get("delivered", 0),
        failed=counts.get("failed", 0),
        expired=counts.get("expired", 0),
        unknown=counts.get("unknown", 0),
        pending=counts.get("pending", 0),
        fallbacks=counts.get("fallbacks", 0),
        p50_ms=nearest_rank(times, 50),
        p95_ms=nearest_rank(times, 95),
    )
