"""The in-memory store's delivery figures: its records counted on each call.

Its half of :class:`~unified_messaging.stats._store.StatsStore`: what the SQL store's
triggers count on every write, counted here from the records themselves with the same rules
(``stats._contributions``); the store contract tests compare the two.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from ..stats._buckets import hour_of
from ..stats._contributions import message_keys, verification_keys
from ..stats._records import StatCount, StatKey

if TYPE_CHECKING:
    from .._domain import MessageRecord
    from ..verifications._records import Verification

__all__ = ["MemoryStatsMixin"]


class MemoryStatsMixin:
    _messages: dict[str, MessageRecord]
    _verifications: dict[str, Verification]

    async def stat_counts(
        self, workspace_id: str, livemode: bool, start_hour: int, end_hour: int
    ) -> list[StatCount]:
        counts: Counter[tuple[str, int | None, str, str, int]] = Counter()

        def add(keys: list[StatKey]) -> None:
            for key in keys:
                hour = key.hour if key.kind == "status" else None
                counts[(key.kind, hour, key.provider, key.status, key.detail)] += 1

        for record in list(self._messages.values()):
            if (record.workspace_id, record.livemode) == (workspace_id, livemode) and (
                start_hour <= hour_of(record.created_at) < end_hour
            ):
                add(message_keys(record))
        for verification in list(self._verifications.values()):
            if (verification.workspace_id, verification.livemode) == (workspace_id, livemode) and (
                start_hour <= hour_of(verification.created_at) < end_hour
            ):
                add(verification_keys(verification))
        return sorted(
            StatCount(kind, hour, provider, status, detail, n)  # type: ignore[arg-type]
            for (kind, hour, provider, status, detail), n in counts.items()
        )

    async def fold_stats(self) -> int:
        return 0  # nothing is kept between calls: each one counts the records
