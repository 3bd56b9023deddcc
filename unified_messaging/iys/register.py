"""Registering each recorded change with İYS, once (D33), through the worker.

Every change the consents service records queues an ``iys_register`` item in the same
transaction (``iys.work``). Its handler, :meth:`Registrar.handle`:

1. waits while an earlier change of the same consent is still pending (İYS must see them in
   order: a RET before the ONAY it follows would be refused);
2. makes sure a token is at hand (nothing is sent yet);
3. counts an attempt in the store (``begin_iys_attempts``), then calls
   ``POST …/consents``, then stores İYS's answer (``settle_iys_registration``).

A process that dies between 3's count and its answer leaves an attempt counted and the
change pending. The worker that takes the item next sees the count, and asks İYS for the
recipient's record first (``POST …/consents/status``): if İYS holds this change (same status
and date), it is registered (İYS gave its transaction id to the dead process; the next pull
of ``source=HS`` fills it in); only if İYS does not hold it is it sent. So a change reaches
İYS once. İYS documents no idempotency key for a consent, so this lookup is the means.

A 422 is read the same way: İYS refuses an ONAY after an ONAY, so when İYS's record already
says what the change says, the change is registered ("already there"); otherwise it is
``refused`` with İYS's H-code and message.

Many changes claimed together (:meth:`Registrar.handle_batch`: an import, a burst of
records) go as one asynchronous bulk request (``POST …/consents/request``) when there are
at least ``bulk_min`` of them for one connected workspace: their registrations record the
request, and an ``iys_bulk`` item asks for its results (``GET …/consents/request/{id}``)
until each is final (:meth:`Registrar.handle_bulk`). A process that dies after İYS took a
bulk request but before it stored İYS's request id leaves its changes marked as sent in a
bulk: İYS works through a bulk in its own time, so each such change is looked up until İYS
shows it, and sent on its own only if ``bulk_doubt_wait`` (an hour) passes without it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Final, Literal

from .._lifecycle.worker import Batch, error_backoff
from ..consents.rules import iys_date
from .backend import BulkBackend, ListingBackend
from .errors import (
    IysCredentialsRefused,
    IysNotConnected,
    IysRefused,
    IysThrottled,
    IysTokenLimit,
    IysUnavailable,
)
from .records import IysOutcome, IysRegistration
from .wire import BulkResult, IysRecord, WireConsent
from .work import bulk_item, registration_item

if TYPE_CHECKING:
    from .._clock import Clock
    from ..consents.models import Consent, ConsentChange
    from ..store.base import Store, WorkItem
    from .backend import Backends, IysBackend

__all__ = [
    "DEFAULT_BULK_DOUBT_WAIT",
    "DEFAULT_BULK_MIN",
    "DEFAULT_BULK_POLL",
    "Registrar",
    "wire_consent",
]

logger = logging.getLogger("unified_messaging.iys")

#: The fewest changes of one workspace, claimed together, that go as one bulk request.
DEFAULT_BULK_MIN: Final = 10
#: How soon a bulk request's results are asked for, and again while some are not final.
DEFAULT_BULK_POLL: Final = timedelta(seconds=15)
_MAX_BULK_POLL: Final = timedelta(minutes=5)
#: How long a change of a bulk request whose answer was lost waits for İYS to show it
#: before it is sent on its own, and how often İYS is asked meanwhile.
DEFAULT_BULK_DOUBT_WAIT: Final = timedelta(hours=1)
_BULK_DOUBT_LOOK: Final = timedelta(minutes=10)
#: How soon a change waits for the earlier change of its consent to be registered.
_IN_ORDER_WAIT: Final = timedelta(seconds=2)
#: Our codes for what İYS did not refuse with an H-code of its own.
SUPERSEDED: Final = "IYS_SUPERSEDED"


def wire_consent(consent: Consent, change: ConsentChange) -> WireConsent:
    """The change as İYS takes it: its date in GMT+3 (``YYYY-MM-DD HH:MM:SS``)."""
    date = change.consent_date
    return WireConsent(
        recipient=consent.recipient,
        recipient_type=consent.recipient_type,
        type=consent.type,
        status=change.status,
        source=change.source,
        consent_date=None if date is None else iys_date(date),
    )


class Registrar:
    """The handlers of ``iys_register`` (one change, or a batch of them) and ``iys_bulk``."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        backends: Backends,
        *,
        bulk_min: int = DEFAULT_BULK_MIN,
        bulk_poll: timedelta = DEFAULT_BULK_POLL,
        bulk_doubt_wait: timedelta = DEFAULT_BULK_DOUBT_WAIT,
    ) -> None:
        self._store = store
        self._clock = clock
        self._backends = backends
        self._bulk_min = max(bulk_min, 2)
        self._bulk_poll = bulk_poll
        self._bulk_doubt_wait = bulk_doubt_wait

    # ------------------------------------------------------------------ one change

    async def handle(self, item: WorkItem) -> datetime | None:
        found = await self._store.consent_change(item.ref)
        if found is None:
            return None
        consent, change = found
        if change.iys_state != "pending":
            return None
        backend = await self._backends.of(consent.workspace_id, consent.livemode)
        if backend is None:
            return None  # a live consent of a workspace not connected: connecting queues it
        if await self._earlier_pending(change, consent):
            return self._clock.now() + _IN_ORDER_WAIT
        registration = await self._store.iys_registration(change.id)
        if registration is not None and registration.request_id is not None:
            if not registration.bulk_in_doubt:
                return None  # a bulk request carries it: its iys_bulk item settles it
            try:
                doubt = await self._bulk_doubt(backend, consent, change, registration)
            except (IysUnavailable, IysCredentialsRefused) as exc:
                return self._later(item, exc)
            if doubt == "settled":
                return None
            if doubt != "left":
                return doubt
        try:
            await backend.ready()
        except (IysUnavailable, IysCredentialsRefused) as exc:
            return self._later(item, exc)
        except IysNotConnected:
            return None
        counted = await self._store.begin_iys_attempts([change.id], now=self._clock.now())
        if change.id not in counted:
            return None  # settled, or taken into a bulk, meanwhile
        try:
            outcome = await self._register(backend, consent, change, counted[change.id])
        except (IysThrottled, IysTokenLimit, IysCredentialsRefused) as exc:
            await self._store.undo_iys_attempt(change.id)  # refused before it was sent
            return self._later(item, exc)
        except IysUnavailable as exc:
            return self._later(item, exc)  # it may have reached İYS: the count stays
        except IysNotConnected:
            await self._store.undo_iys_attempt(change.id)
            return None
        if outcome is not None:
            await self._store.settle_iys_registration(change.id, outcome)
        return None

    async def _register(
        self, backend: IysBackend, consent: Consent, change: ConsentChange, before: int
    ) -> IysOutcome | None:
        wire = wire_consent(consent, change)
        if before > 0:
            # An earlier attempt may have reached İYS: ask before sending it again.
            known = await self._known(backend, wire)
            if known is not None:
                return known
        try:
            registered = await backend.add(wire)
        except IysRefused as exc:
            return await self._refusal(backend, wire, exc.h_code or exc.code, exc.detail)
        return IysOutcome("registered", transaction_id=registered.transaction_id)

    async def _bulk_doubt(
        self,
        backend: IysBackend,
        consent: Consent,
        change: ConsentChange,
        registration: IysRegistration,
    ) -> datetime | Literal["settled", "left"]:
        """A change whose bulk request went out but whose answer was never stored (the
        process died, or the answer could not be read). İYS works through a bulk request
        in its own time, so asking once is not enough: İYS is asked until it holds the
        change (``settled``) or ``bulk_doubt_wait`` has passed since it was sent; then the
        change leaves the bulk (``left``) and is sent on its own. Else: when to look
        again."""
        known = await self._known(backend, wire_consent(consent, change))
        if known is not None:
            await self._store.settle_iys_registration(change.id, known)
            return "settled"
        now = self._clock.now()
        sent = registration.attempted_at or now
        if now < sent + self._bulk_doubt_wait:
            return min(sent + self._bulk_doubt_wait, now + _BULK_DOUBT_LOOK)
        await self._store.leave_iys_bulk(change.id)
        return "left"

    async def _known(self, backend: IysBackend, wire: WireConsent) -> IysOutcome | None:
        """What İYS's record says of ``wire`` after an attempt whose answer was lost:
        registered (İYS holds it), refused (İYS holds a later change), or ``None`` (İYS
        does not hold it: send it)."""
        record = await backend.status(wire.recipient, wire.recipient_type, wire.type)
        if record is None:
            return None
        if _holds(record, wire):
            return IysOutcome("registered")
        if (
            wire.consent_date is not None
            and record.consent_date is not None
            and (record.consent_date > wire.consent_date)
        ):
            return IysOutcome(
                "refused",
                error_code=SUPERSEDED,
                error_message=f"İYS holds a later change ({record.status}, "
                f"{record.consent_date}); this one was not registered.",
            )
        return None

    async def _refusal(
        self, backend: IysBackend, wire: WireConsent, code: str, message: str
    ) -> IysOutcome:
        """İYS refused ``wire``: registered if İYS's record says what it says already
        (İYS refuses an ONAY after an ONAY), else refused with İYS's code and message."""
        record = await backend.status(wire.recipient, wire.recipient_type, wire.type)
        if record is not None and record.status == wire.status:
            return IysOutcome("registered")
        return IysOutcome("refused", error_code=code, error_message=message)

    async def _earlier_pending(self, change: ConsentChange, consent: Consent) -> bool:
        """Is an earlier change of the consent still pending? Its registration is queued
        (again: a change recorded before registering existed has no item of its own)."""
        for earlier in await self._store.consent_history(change.consent_id):
            if earlier.id == change.id:
                return False
            if earlier.iys_state == "pending":
                now = self._clock.now()
                await self._store.enqueue_work_many([
                    registration_item(earlier.id, consent.id, consent.workspace_id,
                                      livemode=consent.livemode, now=now)
                ])  # fmt: skip
                return True
        return False

    def _later(self, item: WorkItem, exc: Exception) -> datetime:
        wait = error_backoff(item.attempts)
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            wait = max(wait, timedelta(seconds=retry_after))
        logger.warning("İYS registration of %s waits %s: %s", item.ref, wait, exc)
        return self._clock.now() + wait

    # ------------------------------------------------------------------ many at once

    async def handle_batch(self, batch: Batch) -> list[WorkItem]:
        """Send the first-time changes of each connected workspace claimed together as one
        bulk request when there are ``bulk_min`` of them; every item is left to
        :meth:`handle` (which finds the bulk ones carried by their request, and registers
        the rest one by one)."""
        groups: dict[tuple[str, bool], list[WorkItem]] = {}
        for item in batch.items:
            workspace_id, livemode = item.payload.get("workspace_id"), item.payload.get("livemode")
            if isinstance(workspace_id, str) and livemode is True and batch.holds(item.id):
                groups.setdefault((workspace_id, True), []).append(item)
        for (workspace_id, livemode), items in groups.items():
            if len(items) >= self._bulk_min:
                try:
                    await self._bulk(workspace_id, livemode, items)
                except Exception:
                    logger.warning("İYS bulk registration failed; one by one instead",
                                   exc_info=True)  # fmt: skip
        return list(batch.items)

    async def _bulk(self, workspace_id: str, livemode: bool, items: Sequence[WorkItem]) -> None:
        backend = await self._backends.of(workspace_id, livemode)
        if not isinstance(backend, (BulkBackend, ListingBackend)):
            return
        chosen = await self._first_timers(items)
        if len(chosen) < self._bulk_min:
            return
        await backend.ready()
        if isinstance(backend, ListingBackend):
            await self._in_lists(backend, chosen)
            return
        if not isinstance(backend, BulkBackend):
            return
        counted = await self._store.begin_iys_attempts(
            [change.id for _, change in chosen], now=self._clock.now(), bulk=True
        )
        sending = [(c, ch) for c, ch in chosen if counted.get(ch.id) == 0]
        if len(sending) < len(chosen):
            for _, change in chosen:  # a change counted before goes one by one
                if counted.get(change.id) == 0:
                    await self._store.undo_iys_attempt(change.id)
            return
        try:
            accepted = await backend.add_many([wire_consent(c, ch) for c, ch in sending])
        except (IysThrottled, IysTokenLimit, IysCredentialsRefused, IysRefused):
            for _, change in sending:  # refused as a whole: nothing of it was taken
                await self._store.undo_iys_attempt(change.id)
            raise
        ids = [change.id for _, change in sending]
        if len(accepted.subrequest_ids) != len(ids):
            # İYS took it, but which subrequest is which cannot be told: each change is
            # left in doubt, and its own item asks İYS until it shows it (_bulk_doubt).
            logger.warning("İYS's bulk answer lists %d subrequests for %d consents",
                           len(accepted.subrequest_ids), len(ids))  # fmt: skip
            return
        now = self._clock.now()
        item = bulk_item(
            accepted.request_id, workspace_id, ids, due_at=now + self._bulk_poll, now=now
        )
        async with self._store.atomic():
            await self._store.set_iys_request(
                accepted.request_id, dict(zip(ids, accepted.subrequest_ids, strict=True))
            )
            await self._store.enqueue_work(item)

    async def _in_lists(
        self, backend: ListingBackend, chosen: Sequence[tuple[Consent, ConsentChange]]
    ) -> None:
        """Changes sent in synchronous lists of up to ``backend.max_list`` (İletimerkezi's
        consent API): counted first, settled ``registered`` when the list is taken. A list
        is taken all or none: refused, its attempts are uncounted and each change goes on
        its own (its own refusal named); unanswered, the counts stay and each change's own
        item asks before it sends again."""
        counted = await self._store.begin_iys_attempts(
            [change.id for _, change in chosen], now=self._clock.now()
        )
        sending = [(c, ch) for c, ch in chosen if counted.get(ch.id) == 0]
        for _, change in chosen:
            if counted.get(change.id, 0) > 0:
                await self._store.undo_iys_attempt(change.id)  # it goes on its own
        for start in range(0, len(sending), backend.max_list):
            part = sending[start : start + backend.max_list]
            try:
                await backend.add_list([wire_consent(c, ch) for c, ch in part])
            except (IysThrottled, IysTokenLimit, IysCredentialsRefused, IysRefused):
                for _, change in sending[start:]:
                    await self._store.undo_iys_attempt(change.id)
                raise
            for _, change in part:
                await self._store.settle_iys_registration(change.id, IysOutcome("registered"))

    async def _first_timers(self, items: Sequence[WorkItem]) -> list[tuple[Consent, ConsentChange]]:
        """The items' changes that never went out, one per consent, each the first pending
        change of its consent."""
        chosen: list[tuple[Consent, ConsentChange]] = []
        consents: set[str] = set()
        for item in items:
            found = await self._store.consent_change(item.ref)
            if found is None:
                continue
            consent, change = found
            if change.iys_state != "pending" or consent.id in consents:
                continue
            registration = await self._store.iys_registration(change.id)
            if registration is not None and (registration.attempts or registration.request_id):
                continue
            if await self._earlier_pending(change, consent):
                continue
            consents.add(consent.id)
            chosen.append((consent, change))
        return chosen

    # ------------------------------------------------------------------ a bulk's results

    async def handle_bulk(self, item: WorkItem) -> datetime | None:
        workspace_id = item.payload.get("workspace_id")
        change_ids = item.payload.get("change_ids")
        if not isinstance(workspace_id, str) or not isinstance(change_ids, list):
            return None
        try:
            done = await self.poll(
                workspace_id, item.ref, [c for c in change_ids if isinstance(c, str)]
            )
        except IysRefused as exc:
            logger.warning("İYS refused asking for bulk request %s: %s", item.ref, exc)
            return self._poll_again(item)
        except IysUnavailable as exc:
            return self._later(item, exc)
        return None if done else self._poll_again(item)

    async def poll(self, workspace_id: str, request_id: str, change_ids: Sequence[str]) -> bool:
        """Ask for a bulk request's results once and settle each change that is final;
        ``True`` when none is left waiting."""
        backend = await self._backends.of(workspace_id, True)
        if backend is None:
            return True
        # A backend without bulk requests (the workspace moved to a provider's consent API
        # since) lists no results: each change waits for its own look-up (_bulk_doubt).
        answered = []
        if isinstance(backend, BulkBackend):
            answered = await backend.request_results(request_id)
        results = {r.subrequest_id: r for r in answered}
        waiting = False
        for change_id in change_ids:
            if not await self._settle_one(backend, change_id, results):
                waiting = True
        return not waiting

    async def _settle_one(
        self, backend: IysBackend, change_id: str, results: Mapping[str, BulkResult]
    ) -> bool:
        """Settle one change of the bulk from its result; ``False`` while it is not final."""
        found = await self._store.consent_change(change_id)
        registration = await self._store.iys_registration(change_id)
        if found is None or registration is None or found[1].iys_state != "pending":
            return True
        result = results.get(registration.subrequest_id or "")
        if result is None or result.status == "enqueue":
            return False  # not listed yet, or İYS is still at it
        if result.status == "success":
            outcome = IysOutcome("registered", transaction_id=result.transaction_id)
        else:
            code = (result.error.code if result.error else "") or IysRefused.code
            message = (result.error.message if result.error else "") or "İYS refused it."
            try:
                outcome = await self._refusal(backend, wire_consent(*found), code, message)
            except IysUnavailable:
                return False
        await self._store.settle_iys_registration(change_id, outcome)
        return True

    def _poll_again(self, item: WorkItem) -> datetime:
        wait: timedelta = min(self._bulk_poll * (2 ** min(item.attempts, 5)), _MAX_BULK_POLL)
        return self._clock.now() + wait


def _holds(record: IysRecord, wire: WireConsent) -> bool:
    """Does İYS's record say what ``wire`` says (its status, and its date if it has one)?"""
    if record.status != wire.status:
        return False
    return wire.consent_date is None or record.consent_date == wire.consent_date
