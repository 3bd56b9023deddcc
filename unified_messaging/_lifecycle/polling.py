"""Polling providers that do not push delivery reports (D20), at the pace each one allows.

A provider's profile declares its :class:`~.providers.base.PollPolicy`: how often a
connection's round may run, how many report calls a round makes, and per message how soon
after its send it is first asked about and how long until it is asked again (Mutlucell: a
minute, then 15 minutes; NetGSM: every round). The lifecycle keeps one durable poll item per
connection, leased to one worker at a time and due again an interval after each round ends,
so rounds never overlap and are an interval apart in whichever processes run them.

The pace of each message lives with its provider reference, in the store
(``ProviderRef.poll_after``): a round reads the connection's live, open, due refs, the
longest due first, asks the provider about as many as the round's calls allow, and postpones
the ones it asked. No cursor is kept anywhere, so the pace and the order are exact across
processes, every round starts with what waited longest, and refs that are never asked
(test-mode ones get simulated reports) are never read: nothing can hold the others back.
Refs no round asks about (pushed reports, test mode: :func:`polled`) are stored closed, so
their messages' final reports write nothing to them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Final

from .._clock import Clock
from .._domain import Connection
from .._routing.dispatch import AdapterSource
from .._types import ProviderCode
from ..providers.base import PROFILES, PacedPolling, PollPolicy, ProviderReport, ReportCalls
from ..store.base import Store

__all__ = ["POLL_BATCH", "Poller", "first_poll", "polled"]

#: Refs a round reads: what a full round can ask about (10 calls of up to 100 rows at NetGSM,
#: 10 packs of up to 100 numbers at Mutlucell).
POLL_BATCH: Final = 1000

#: Applies the reports a round got (``Lifecycle.ingest`` for live messages).
Ingest = Callable[[Connection, Sequence[ProviderReport]], Awaitable[object]]


def polled(provider: ProviderCode, livemode: bool) -> bool:
    """Whether a poll round ever asks about a ref of this provider and mode: only live ones
    of a provider that does not push its reports. Every other ref is stored closed from the
    start (``ProviderRef.open``), so its final report has no ref to close: one write less."""
    return livemode and PROFILES[provider].poll is not None


def first_poll(connection: Connection, sent_at: datetime) -> datetime | None:
    """When a message the connection's provider took at ``sent_at`` may first be asked
    about (D20; Mutlucell: a minute after its send); ``None`` where reports are not polled."""
    policy = PROFILES[connection.provider].poll
    return None if policy is None else sent_at + policy.first_after


class Poller:
    """Runs the poll rounds of every connection of one process."""

    def __init__(
        self,
        store: Store,
        adapters: AdapterSource,
        ingest: Ingest,
        clock: Clock,
        *,
        interval_floor: timedelta | None = None,
        batch: int = POLL_BATCH,
    ) -> None:
        self._store = store
        self._adapters = adapters
        self._ingest = ingest
        self._clock = clock
        #: Slows every provider down to at least this (``None``: their own intervals).
        self._floor = interval_floor
        self._batch = batch

    def every(self, policy: PollPolicy) -> timedelta:
        """The time from the end of one round of a connection to the start of the next."""
        floor = self._floor
        return policy.interval if floor is None else max(policy.interval, floor)

    async def round(self, connection: Connection, policy: PollPolicy) -> None:
        """Ask about the connection's due refs, the longest due first, until the round's
        report calls (``policy.calls_per_minute``) are spent; postpone those asked by the
        policy's ``again``. A round cut short postpones only what its calls covered: the
        rest is due still, so it is asked first next round."""
        now = self._clock.now()
        refs = await self._store.refs_to_poll(connection.id, now, self._batch)
        if not refs:
            return
        ids = [r.provider_message_id for r in refs]
        adapter = self._adapters.for_connection(connection, livemode=True)
        calls = ReportCalls(policy.calls_per_minute)
        until = now + policy.again
        try:
            if isinstance(adapter, PacedPolling):
                reports = await adapter.poll_reports_within(ids, calls)
            else:
                reports = await adapter.poll_reports(ids)
                calls.cover(ids)
        except BaseException:
            # The calls made were made: their messages wait their turn all the same.
            await self._store.postpone_refs(connection.id, sorted(calls.covered), until)
            raise
        asked = calls.covered if calls.cut_short else calls.covered.union(ids)
        # Postponed before the reports are applied: should applying them fail, the provider
        # is still not asked again sooner than it allows.
        await self._store.postpone_refs(connection.id, sorted(asked), until)
        if reports:
            await self._ingest(connection, reports)
