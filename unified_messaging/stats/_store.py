"""The store's part of the delivery figures: the protocol the memory and SQL stores implement.

The SQL store counts in the database on every write (triggers, migration 0027), so a window
is read from a few thousand counts at any number of messages; the memory store counts its
records on each call (:mod:`._contributions`), which is what the contract tests compare.
"""

from __future__ import annotations

from typing import Protocol

from ._records import StatCount

__all__ = ["StatsStore"]


class StatsStore(Protocol):
    """Protocol: the delivery figures' counts."""

    async def stat_counts(
        self, workspace_id: str, livemode: bool, start_hour: int, end_hour: int
    ) -> list[StatCount]:
        """The counts of the workspace's messages and verifications of this mode created in
        the UTC hours ``[start_hour, end_hour)`` (hours since the epoch): ``status`` per
        hour, the other kinds summed over the range (``hour`` ``None``); zero counts left
        out; sorted."""
        ...

    async def fold_stats(self) -> int:
        """Sum the counts recorded since the last fold into the kept ones (SQL: the change
        log into ``um_stats``); how many changes were folded. Reads are exact either way:
        folding only keeps them fast. One fold at a time; a call while another runs
        returns 0 at once."""
        ...
