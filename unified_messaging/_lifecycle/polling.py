"""Polling providers that do not push delivery reports (D20), at the pace each one allows.

A provider's profile declares its :class:`~.providers.base.PollPolicy`: how often a
connection may be asked (NetGSM every minute, Mutlucell every 15 minutes) and how many
report calls a minute it takes (NetGSM 10). The lifecycle keeps one durable poll item per
connection, leased to one worker at a time and due again an interval after each round ends,
so rounds never overlap and are an interval apart in whichever processes run them. This
module runs one round: it caps the round's report calls at the per-minute budget (rounds
being a minute apart or more, no minute sees more) and goes round the connection's open
provider message ids, so a backlog never starves the newer ones.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Final

from .._domain import Connection
from .._routing.dispatch import AdapterSource
from ..providers.base import PacedPolling, PollPolicy, ProviderReport, ReportCalls
from ..store.base import Store

__all__ = ["POLL_BATCH", "Poller"]

#: Open refs a poll round reads from the store at most.
POLL_BATCH: Final = 500
#: Ids per ``poll_reports`` call within a round (a provider takes ~100 ids per report query).
_CHUNK: Final = 100

#: Applies the reports a round got (``Lifecycle.ingest`` for live messages).
Ingest = Callable[[Connection, Sequence[ProviderReport]], Awaitable[object]]


class Poller:
    """Runs the poll rounds of every connection of one process."""

    def __init__(
        self,
        store: Store,
        adapters: AdapterSource,
        ingest: Ingest,
        *,
        interval_floor: timedelta | None = None,
        batch: int = POLL_BATCH,
    ) -> None:
        self._store = store
        self._adapters = adapters
        self._ingest = ingest
        #: Slows every provider down to at least this (``None``: their own intervals).
        self._floor = interval_floor
        self._batch = batch
        #: Per connection: the job id after which the next round starts (per process).
        self._cursor: dict[str, str] = {}

    def every(self, policy: PollPolicy) -> timedelta:
        """The time from the end of one round of a connection to the start of the next."""
        floor = self._floor
        return policy.interval if floor is None else max(policy.interval, floor)

    async def round(self, connection: Connection, policy: PollPolicy) -> None:
        """Ask about the connection's open refs, in chunks, until the round's report calls
        (``policy.calls_per_minute``) are spent.

        Round robin over the open refs: the next round starts after the last chunk this one
        asked about in full, so messages that never get a report cannot keep the newer ones
        from being asked about."""
        after = self._cursor.pop(connection.id, None)
        page = await self._store.open_provider_refs(connection.id, self._batch, after=after)
        refs = [r for r in page if r.livemode]  # test-mode messages get simulated reports
        if not refs:
            return
        adapter = self._adapters.for_connection(connection, livemode=True)
        calls = ReportCalls(policy.calls_per_minute)
        for start in range(0, len(refs), _CHUNK):
            chunk = refs[start : start + _CHUNK]
            ids = [r.provider_message_id for r in chunk]
            if isinstance(adapter, PacedPolling):
                reports = await adapter.poll_reports_within(ids, calls)
            else:
                reports = await adapter.poll_reports(ids)
            if reports:
                await self._ingest(connection, reports)
            if calls.cut_short:
                # The rest of this chunk is asked first next round; a round that could not
                # finish its first chunk moves on anyway, so the cursor always advances.
                done = refs[start - 1] if start else chunk[-1]
                self._cursor[connection.id] = done.job_id
                return
        if len(page) == self._batch:
            self._cursor[connection.id] = page[-1].job_id
