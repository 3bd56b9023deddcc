"""Pulling İYS's changes into the local records (D33): what a citizen did through İYS (a
RET sent to 3338, the İYS app or web site) and what other systems of the brand registered.

An ``iys_pull`` item per connected workspace runs :meth:`Puller.handle` every pull
interval. It asks ``GET …/consents/changes`` for ``source=HS`` and then ``source=IYS``, each
from its durable ``after`` cursor, page by page, and applies each change
(:meth:`Puller.apply`):

- a change we know (its transaction id is on record) is skipped: a pull cut off before it
  stored its cursor can run again;
- a change that is one of ours (same address, status and date as a change recorded here)
  settles it as registered, with İYS's transaction id: an attempt whose answer was lost is
  settled this way too;
- any other change is İYS's word: it becomes the consent's current state if it is newer
  than what is on record (a new consent if there is none), else it goes into the history
  only. It is never sent back to İYS, and it is audited (``consent.iys_change``).

İYS lists the changes of the last seven days except the last hour ("son 1 saat hariç 7
gün"), so a citizen's RET reaches the local records within an hour and one pull interval of
being made, and stops the next commercial send from then on.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, get_args

from .._errors import MessagingError
from .._ids import new_id
from .._lifecycle.worker import error_backoff
from .._types import RecipientType
from ..audit._actions import audited
from ..consents.models import Consent, ConsentChange, ConsentOut, normalize_address
from ..consents.rules import ConsentStatus, ConsentType
from .errors import IysUnavailable
from .records import IysOutcome, PullSource
from .wire import IysChange, parse_iys_date

if TYPE_CHECKING:
    from .._clock import Clock
    from ..store.base import Store, WorkItem
    from .backend import Backends, IysBackend

__all__ = ["DEFAULT_PULL_INTERVAL", "PullReport", "Puller"]

logger = logging.getLogger("unified_messaging.iys")

DEFAULT_PULL_INTERVAL: Final = timedelta(minutes=5)
#: Pages one pull reads of each source before it lets the next pull go on.
_MAX_PAGES: Final = 100
_SOURCES: Final[tuple[PullSource, ...]] = ("HS", "IYS")
_STATUSES: Final = frozenset(get_args(ConsentStatus))
_TYPES: Final = frozenset(get_args(ConsentType))
_RECIPIENT_TYPES: Final = frozenset(get_args(RecipientType))
_TRIES: Final = 3


class PullReport(dict[str, int]):
    """What a pull did: ``applied`` (İYS's own changes taken in), ``confirmed`` (ours,
    confirmed registered), ``known`` (seen before), ``skipped`` (unreadable)."""


def _of_pulled(consent: ConsentOut, call: Mapping[str, Any]) -> tuple[str | None, str]:
    workspace_id = call["workspace_id"]
    return (workspace_id if isinstance(workspace_id, str) else None), consent.id


class _Raced(Exception):
    """The consent changed between its read and the write: read it again."""


class Puller:
    """The handler of ``iys_pull`` items, and the one place a pulled change is applied."""

    def __init__(
        self, store: Store, clock: Clock, backends: Backends, *, interval: timedelta
    ) -> None:
        self._store = store
        self._clock = clock
        self._backends = backends
        self.interval = interval

    async def handle(self, item: WorkItem) -> datetime | None:
        workspace_id = item.ref
        connection = await self._store.get_iys_connection(workspace_id)
        if connection is None or connection.via_connection is not None:
            return None  # disconnected, or through a provider (nothing to pull): no more pulls
        try:
            await self.pull(workspace_id)
        except IysUnavailable as exc:
            wait = max(error_backoff(item.attempts), timedelta(seconds=exc.retry_after or 0))
            logger.warning("İYS pull of %s waits %s: %s", workspace_id, wait, exc)
            return self._clock.now() + min(wait, self.interval)
        return self._clock.now() + self.interval

    async def pull(self, workspace_id: str) -> PullReport:
        """Pull both sources now, each to its end (or :data:`_MAX_PAGES` pages)."""
        report = PullReport(applied=0, confirmed=0, known=0, skipped=0)
        backend = await self._backends.of(workspace_id, True)
        connection = await self._store.get_iys_connection(workspace_id)
        if backend is None or connection is None or connection.via_connection is not None:
            return report  # a provider's consent API lists no changes
        for source in _SOURCES:
            await self._pull_source(backend, workspace_id, source, connection.cursor(source),
                                    report)  # fmt: skip
        return report

    async def _pull_source(
        self,
        backend: IysBackend,
        workspace_id: str,
        source: PullSource,
        after: str | None,
        report: PullReport,
    ) -> None:
        for _ in range(_MAX_PAGES):
            page = await backend.changes(source, after)
            for change in page.changes:
                outcome = await self.apply(workspace_id, change)
                report[outcome] = report.get(outcome, 0) + 1
            moved = page.after is not None and page.after != after
            if moved:
                await self._store.set_iys_cursor(workspace_id, source, page.after,
                                                 self._clock.now())  # fmt: skip
                after = page.after
            if not page.changes or not moved:
                return

    async def apply(self, workspace_id: str, change: IysChange) -> str:
        """Apply one change İYS listed; returns what it was (a key of :class:`PullReport`)."""
        if (
            change.status not in _STATUSES
            or change.type not in _TYPES
            or (change.recipient_type not in _RECIPIENT_TYPES)
        ):
            return "skipped"
        known = await self._store.find_iys_transaction(workspace_id, True, change.transaction_id)
        if known is not None:
            return "known"
        try:
            recipient = normalize_address(change.type, change.recipient)  # type: ignore[arg-type]
        except MessagingError:
            return "skipped"
        date = parse_iys_date(change.consent_date)
        key = (recipient, change.type, change.recipient_type)
        for _ in range(_TRIES):
            current = await self._store.find_consent(workspace_id, True, key)  # type: ignore[arg-type]
            if current is not None and await self._confirm(current, change, date):
                return "confirmed"
            try:
                await self.take_in(workspace_id, current, key, change, date)
            except _Raced:
                continue
            return "applied"
        logger.warning("İYS change %s kept changing under us; the next pull takes it",
                       change.transaction_id)  # fmt: skip
        return "skipped"

    async def _confirm(self, consent: Consent, change: IysChange, date: datetime | None) -> bool:
        """Is ``change`` one of ours (same status and date)? Then it is settled registered,
        or given İYS's transaction id."""
        for ours in reversed(await self._store.consent_history(consent.id)):
            if ours.status != change.status or ours.consent_date != _utc(date):
                continue
            if ours.iys_state == "pending":
                await self._store.settle_iys_registration(
                    ours.id, IysOutcome("registered", transaction_id=change.transaction_id)
                )
            elif ours.iys_state == "registered" and ours.iys_transaction_id is None:
                await self._store.fill_iys_transaction(ours.id, change.transaction_id)
            else:
                continue
            return True
        return False

    @audited("consent.iys_change", _of_pulled)
    async def take_in(
        self,
        workspace_id: str,
        current: Consent | None,
        key: tuple[str, str, str],
        change: IysChange,
        date: datetime | None,
    ) -> ConsentOut:
        """İYS's change on record: the consent's state when newer than it, else history
        (the one writer of a pulled change, audited ``consent.iys_change``; :meth:`apply`
        calls it). :class:`_Raced` (nothing written, no audit row) if the consent changed
        meanwhile."""
        now = self._clock.now()
        when = _utc(date)
        recipient, type_, recipient_type = key
        entry_id = new_id("cnc")
        if current is None:
            record = Consent(
                id=new_id("cns"), workspace_id=workspace_id, livemode=True,
                recipient=recipient, type=type_,  # type: ignore[arg-type]
                recipient_type=recipient_type,  # type: ignore[arg-type]
                status=change.status,  # type: ignore[arg-type]
                source=change.source, consent_date=when, created_at=now, updated_at=now,
                iys_state="registered", last_change_id=entry_id,
                iys_transaction_id=change.transaction_id,
            )  # fmt: skip
        elif when is None or current.consent_date is None or when > current.consent_date:
            record = replace(
                current, status=change.status, source=change.source,  # type: ignore[arg-type]
                consent_date=when, updated_at=now, iys_state="registered",
                last_change_id=entry_id, iys_transaction_id=change.transaction_id,
                iys_error_code=None, iys_error_message=None,
            )  # fmt: skip
        else:
            # Older than the record: history only (İYS's order is by date, as ours).
            await self._store.add_consent_change(_entry(current.id, change, when, now, entry_id))
            return ConsentOut.of(current)
        entry = _entry(record.id, change, when, now, entry_id)
        previous = None if current is None else current.status
        if not await self._store.record_consent(record, entry, previous=previous):
            raise _Raced
        out = ConsentOut.of(record)
        # Announced in the same transaction (the audited block): recorded means announced.
        await self._store.enqueue_work(changed_event(workspace_id, entry_id, out, now))
        return out


def changed_event(
    workspace_id: str, change_id: str, consent: ConsentOut, now: datetime
) -> WorkItem:
    """The ``consent.changed`` webhook event of a change pulled from İYS: the lifecycle's
    event item, one per change (its id is the event's ``webhook-id``)."""
    from ..store.base import WorkItem

    return WorkItem(
        id=f"evt_{change_id}_consent",
        kind="event",
        ref=consent.id,
        due_at=now,
        created_at=now,
        payload={"workspace_id": workspace_id, "event": "consent.changed",
                 "record": consent.to_dict()},
    )  # fmt: skip


def _entry(
    consent_id: str, change: IysChange, when: datetime | None, now: datetime, entry_id: str
) -> ConsentChange:
    return ConsentChange(
        consent_id=consent_id,
        status=change.status,  # type: ignore[arg-type]
        source=change.source,
        consent_date=when,
        recorded_at=now,
        id=entry_id,
        iys_state="registered",
        iys_transaction_id=change.transaction_id,
    )


def _utc(moment: datetime | None) -> datetime | None:
    return None if moment is None else moment.astimezone(UTC)
