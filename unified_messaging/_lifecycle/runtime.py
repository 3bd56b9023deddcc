"""The delivery lifecycle at run time: what happens to a message after a provider took it.

:mod:`._lifecycle` decides (pure functions); this module carries the decisions out against
the store, the adapters and the webhook outbox:

- After a submit, :meth:`Lifecycle.submitted` remembers which job each provider message id
  belongs to and queues the follow-up work: the DLR time-out of the attempt, the simulated
  report of a test send, and polling for providers that only answer report queries.
- :meth:`Lifecycle.ingest` applies reports (pushed to ``/v1/dlr/…``, polled, or simulated).
  A report for a provider message id we do not know yet is kept as a work item of its own
  (an *orphan*) and applied once the send that got that id has stored it: a provider may
  report before our own transaction storing its answer has committed.
- A ``failed``/``rejected`` report or a time-out with fallback left queues a re-dispatch,
  run by the worker: the next providers are tried under the same ``job_id``.
- Every status change is announced to the workspace's webhook endpoints.
- A message no send slot was free for in time (D27) is ``queued`` with a ``paced_send`` item
  due when one should be; the worker re-dispatches it from the hop where it waited, paced
  again (and deferred again if the rate is still taken: never failed for our own pacing).

Every change to a message is a compare-and-set on its ``version``, so a report handled by
one process and a time-out handled by another never overwrite each other. Re-dispatch writes
ahead: before a provider is called, a placeholder attempt is stored; a worker that dies
after calling the provider leaves the placeholder, and the next run ends the message
``unknown`` instead of sending it twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Final, Protocol

from .._clock import Clock
from .._domain import (
    DEFAULT_QUEUE_TTL,
    DEFAULT_SUBMIT_TIMEOUT,
    Attempt,
    Connection,
    ErrorInfo,
    MessageRecord,
)
from .._errors import MessageNotFound, MessagingError, StorageUnavailable
from .._observability.metrics import (
    NO_METRICS,
    Metrics,
    record_redispatch,
    record_reports,
    record_settled,
)
from .._observability.tracing import ingest_span
from .._quota import charge as quota_charge
from .._quota import release_unit
from .._responses import status_record
from .._routing.adapters import AdapterPool
from .._routing.breaker import Breakers
from .._routing.dispatch import Hop, Job, dispatch, hop_for, job_for
from .._routing.gate import Gates
from .._routing.pacing import micros
from .._routing.send_pacing import SendPacing
from .._text import storable_report
from .._types import ProviderCode
from ..providers.base import PROFILES, ProviderReport
from ..providers.simulator import Simulator, simulated_report
from ..store.base import JsonValue, MessageChange, ProviderRef, QuotaCharge, Store, WorkItem
from ..suppressions._rules import opt_out_entry
from .early_reports import KEEP_FOR, MAX_WAIT, WORK_EARLY_REPORT, keep, kept, next_look
from .landing import Landings
from .minted import claimable, minted_job, settle_interrupted
from .polling import POLL_BATCH, Poller, first_poll, polled
from .report_batch import apply_simulated
from .rules import (
    EVENT_TYPES,
    IN_FLIGHT,
    NO_PROVIDER_REACHED,
    QUOTA_AT_HANDOVER,
    SUBMIT_INTERRUPTED,
    EventType,
    Transition,
    after_routing,
    apply_cancel,
    apply_interrupted,
    apply_report,
    apply_timeout,
    check_move,
    event_for,
    is_write_ahead,
    move,
)
from .worker import Batch, BatchHandler, Handler, error_backoff

__all__ = [
    "DEFAULT_SUBMIT_TIMEOUT",
    "WORK_EVENT",
    "WORK_FALLBACK",
    "WORK_ORPHAN",
    "WORK_PACED",
    "WORK_POLL",
    "WORK_RETRY",
    "WORK_SCHEDULED",
    "WORK_SIMULATED",
    "WORK_SUBMIT_CHECK",
    "WORK_TIMEOUT",
    "EventSink",
    "IngestResult",
    "Lifecycle",
]

logger = logging.getLogger("unified_messaging.lifecycle")

WORK_TIMEOUT: Final = "dlr_timeout"
WORK_SIMULATED: Final = "dlr_simulated"
WORK_POLL: Final = "dlr_poll"
WORK_FALLBACK: Final = "fallback"
WORK_RETRY: Final = "retry_unavailable"
WORK_PACED: Final = "paced_send"
#: The hand-over of a message that waits for its ``send_at`` or quiet hours.
WORK_SCHEDULED: Final = "scheduled_send"
WORK_EVENT: Final = "event"
WORK_SUBMIT_CHECK: Final = "submit_check"
WORK_ORPHAN: Final = WORK_EARLY_REPORT

_CAS_TRIES: Final = 16
#: Reports of one request applied at once (see Lifecycle.ingest).
_INGEST_CONCURRENCY: Final = 32
#: The placeholder of a re-dispatch in flight; left behind only by a worker that died.
_IN_FLIGHT: Final = IN_FLIGHT
_NOT_CONNECTED: Final = ErrorInfo(
    "PROVIDER_NOT_CONNECTED", "The fallback provider is no longer connected."
)


class EventSink(Protocol):
    """Where status changes are announced (the webhook outbox)."""

    async def emit_document(
        self,
        workspace_id: str,
        event_type: EventType,
        data: Mapping[str, object],
        *,
        event_id: str,
        fresh: bool = False,
        occurred_at: datetime | None = None,
    ) -> int:
        """Announce one event; ``fresh``: no delivery of ``event_id`` can exist yet (the
        event item's first run), so nothing need be looked up before the first attempts.
        ``occurred_at``: the event's time (its document's ``timestamp``)."""
        ...


class NoEvents:
    async def emit_document(
        self,
        workspace_id: str,
        event_type: EventType,
        data: Mapping[str, object],
        *,
        event_id: str,
        fresh: bool = False,
        occurred_at: datetime | None = None,
    ) -> int:
        return 0


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What a batch of reports did: how many were for known messages, how many changed one."""

    received: int
    matched: int
    changed: int
    #: The exact body the provider wants in answer (Jasmin's ``ACK/Jasmin``), or ``None``.
    reply: str | None = None


Step = Callable[[MessageRecord, datetime], Transition]


class Lifecycle:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        adapters: AdapterPool,
        *,
        events: EventSink | None = None,
        poll_interval: timedelta | None = None,
        poll_batch: int = POLL_BATCH,
        submit_timeout: timedelta = DEFAULT_SUBMIT_TIMEOUT,
        breakers: Breakers | None = None,
        metrics: Metrics = NO_METRICS,
        pacing: SendPacing | None = None,
        gates: Gates | None = None,
    ) -> None:
        self._store = store
        #: D35: what every hand-over of the worker asks first, as the submit does.
        self._gates = gates if gates is not None else Gates(store, clock)
        self.metrics = metrics  # D30: reports, fallbacks, time to the final state
        #: D26: live re-dispatches consult the connections' circuit breakers too.
        self._breakers = breakers
        #: D27: live re-dispatches keep to the connections' send rates too.
        self._pacing = pacing
        self._clock = clock
        self._adapters = adapters
        self.events: EventSink = events or NoEvents()
        self._poller = Poller(
            store, adapters, self._ingest_live, clock, interval_floor=poll_interval,
            batch=poll_batch,
        )  # fmt: skip
        self._submit_timeout = submit_timeout
        #: How long an early report waits for its message: past a late submit's outcome.
        self._keep_for = max(KEEP_FOR, submit_timeout + MAX_WAIT)
        #: The sends of this process storing their outcome now: a report for one waits.
        self.landings = Landings()

    def handlers(self) -> dict[str, Handler]:
        return {
            WORK_TIMEOUT: self.handle_timeout,
            WORK_SIMULATED: self.handle_simulated,
            WORK_POLL: self.handle_poll,
            WORK_FALLBACK: self.handle_fallback,
            WORK_RETRY: self.handle_retry,
            # D27: the D7 retry's path, the whole rest of the chain from the hop that waited.
            WORK_PACED: self.handle_retry,
            WORK_SCHEDULED: self.handle_scheduled,
            WORK_EVENT: self.handle_event,
            WORK_SUBMIT_CHECK: self.handle_submit_check,
            WORK_ORPHAN: self.handle_orphan,
        }

    def batch_handlers(self) -> dict[str, BatchHandler]:
        """The kinds whose claimed items the worker hands over together (see
        :data:`~.worker.BatchHandler`): the simulated reports of test sends."""
        return {WORK_SIMULATED: self.handle_simulated_batch}

    # ------------------------------------------------------------------ around a submit

    def submit_check(self, records: Sequence[MessageRecord]) -> WorkItem | None:
        """The work item stored with a send's write-ahead rows: if the send's outcome has
        not replaced them within the submit time-out (the process died mid-call, the store
        was down), it ends them ``unknown`` with ``SUBMIT_INTERRUPTED``. The send deletes it
        in the transaction that stores its outcome."""
        ahead = [r for r in records if is_write_ahead(r)]
        if not ahead:
            return None
        now = self._clock.now()
        first = ahead[0]
        return WorkItem(
            id=f"sub_{first.job_id}", kind=WORK_SUBMIT_CHECK, ref=first.job_id,
            due_at=now + self._submit_timeout, created_at=now,
            payload={"workspace_id": first.workspace_id, "livemode": first.livemode,
                     "job_ids": [r.job_id for r in ahead]},
        )  # fmt: skip

    async def handle_submit_check(self, item: WorkItem) -> datetime | None:
        payload = item.payload
        job_ids = payload.get("job_ids")
        workspace_id, livemode = str(payload["workspace_id"]), bool(payload["livemode"])
        for job_id in job_ids if isinstance(job_ids, list) else []:
            await self._change(workspace_id, livemode, str(job_id), _interrupted_step)
        return None

    async def finish_late(
        self,
        record: MessageRecord,
        work: Sequence[WorkItem],
        refs: Sequence[ProviderRef],
    ) -> bool:
        """Store a submit's outcome over the ``SUBMIT_INTERRUPTED`` its check wrote first
        (the provider answered after the submit time-out): the outcome is the truth. A row
        that moved on otherwise is left as it is.

        ``work`` and ``refs`` are what :meth:`follow_ups` made for the outcome (its simulated
        report was handed over then, and cannot be planned twice); its events are made again
        for the version stored now."""
        stored = await self._store.get_message(record.workspace_id, record.livemode, record.job_id)
        if stored is None or stored.error != SUBMIT_INTERRUPTED or stored.status != "unknown":
            return False
        check_move(stored, record.status)  # the outcome over SUBMIT_INTERRUPTED
        late = replace(record, version=stored.version + 1)
        mine = [item for item in work if item.ref == record.job_id and item.kind != WORK_EVENT]
        mine += await self._events(late, event_for(late.status))
        return await self._store.replace_message(
            late, work=mine, refs=[ref for ref in refs if ref.job_id == record.job_id]
        )

    # ------------------------------------------------------------------ after a submit

    async def follow_ups(
        self,
        records: Sequence[MessageRecord],
        connections: Mapping[ProviderCode, Connection],
        *,
        queue_ttl: timedelta = DEFAULT_QUEUE_TTL,
        paced: Mapping[str, datetime] | None = None,
        retry_unavailable: bool = False,
    ) -> tuple[list[WorkItem], list[ProviderRef]]:
        """What a send's results start, to be stored with them in one transaction
        (``Store.update_messages(..., work=, refs=)``): the refs and work that watch each
        accepted attempt, the D7 retries of queued messages (until ``queue_ttl``, the
        workspace's, after the send), the hand-over of the ``paced`` ones when their send
        slot is due (D27; they are retried while unavailable as D7 says for the workspace:
        ``retry_unavailable``), and an event per message."""
        refs: list[ProviderRef] = []
        items: list[WorkItem] = []
        for record in records:
            due = paced.get(record.job_id) if paced else None
            if due is not None:
                until = record.created_at + (queue_ttl if retry_unavailable else timedelta(0))
                items.append(self._paced_item(record, due, until))
            elif record.status == "sent" and record.attempts:
                self._watch_accepted(record, connections, refs, items)
            elif record.status == "unknown" and record.attempts:
                refs.extend(self._settling_ref(record, connections))
            elif record.status == "queued" and record.attempts:
                items.append(self._retry_item(record, record.created_at + queue_ttl))
        announced = await self._with_endpoints({r.workspace_id for r in records})
        masked = await self._masking(announced)
        for record in records:
            event = event_for(record.status)
            if event is not None and record.workspace_id in announced:
                items.append(self._event_item(record, event, record.workspace_id in masked))
        return items, refs

    @staticmethod
    def _settling_ref(
        record: MessageRecord, connections: Mapping[ProviderCode, Connection]
    ) -> list[ProviderRef]:
        """The ref by which a report can still settle a submit that ended ``unknown``,
        where the adapter knew the id the provider's report will carry."""
        attempt = record.attempts[-1]
        connection = connections.get(attempt.provider)
        if connection is None or attempt.provider_message_id is None:
            return []
        if attempt.status != "unknown":
            return []
        return [
            ProviderRef(connection.id, attempt.provider_message_id, record.job_id,
                        record.workspace_id, record.livemode,
                        open=polled(connection.provider, record.livemode))
        ]  # fmt: skip

    def _watch_accepted(
        self,
        record: MessageRecord,
        connections: Mapping[ProviderCode, Connection],
        refs: list[ProviderRef],
        items: list[WorkItem],
    ) -> None:
        """The ref and the work that watch the accepted (last) attempt of ``record``."""
        index = len(record.attempts) - 1
        attempt = record.attempts[index]
        connection = connections.get(attempt.provider)
        message_id = attempt.provider_message_id
        if connection is None or message_id is None or attempt.status != "accepted":
            return
        now = self._clock.now()
        refs.append(
            ProviderRef(connection.id, message_id, record.job_id, record.workspace_id,
                        record.livemode, open=polled(connection.provider, record.livemode),
                        poll_after=first_poll(connection, now))
        )  # fmt: skip
        where: dict[str, JsonValue] = {
            "workspace_id": record.workspace_id,
            "livemode": record.livemode,
            "attempt": index,
        }
        timeout = WorkItem(
            id=f"tmo_{record.job_id}_{index}",
            kind=WORK_TIMEOUT,
            ref=record.job_id,
            due_at=now + _report_wait(record, connection, connections),
            created_at=now,
            payload=where,
        )
        if not record.livemode:
            adapter = self._adapters.for_connection(connection, livemode=False)
            planned = (
                adapter.take_planned_report(message_id) if isinstance(adapter, Simulator) else None
            )
            if planned is None or planned[1] >= timeout.due_at:
                items.append(timeout)
            if planned is not None:
                # A final report is planned before the time-out would fire: the time-out
                # could only find the message ended, so it is not stored at all.
                status, due_at = planned
                items.append(
                    WorkItem(
                        id=f"sim_{record.job_id}_{index}",
                        kind=WORK_SIMULATED,
                        ref=record.job_id,
                        due_at=due_at,
                        created_at=now,
                        payload={"connection_id": connection.id, "provider_message_id": message_id,
                                 "status": status, "to": record.to,
                                 "workspace_id": record.workspace_id},
                    )
                )  # fmt: skip
            return
        items.append(timeout)
        policy = PROFILES[connection.provider].poll
        if policy is not None:
            # One poll item per connection, by its stable id (a second is never stored: the
            # insert keeps the one there), asks about all its open refs, round after round.
            items.append(
                WorkItem(
                    id=f"poll_{connection.id}",
                    kind=WORK_POLL,
                    ref=connection.id,
                    due_at=now + self._poller.every(policy),
                    created_at=now,
                )
            )

    async def _with_endpoints(self, workspaces: set[str]) -> set[str]:
        return {ws for ws in workspaces if await self._store.list_webhook_endpoints(ws)}

    async def _masking(self, workspaces: set[str]) -> set[str]:
        """The workspaces among ``workspaces`` that hide live message text: their events
        carry the text masked, as their status records do."""
        masked = set()
        for workspace_id in workspaces:
            workspace = await self._store.get_workspace(workspace_id)
            if workspace is not None and workspace.mask_live_text:
                masked.add(workspace_id)
        return masked

    def _event_item(self, record: MessageRecord, event: EventType, masked: bool) -> WorkItem:
        """An event, as work stored with the change it announces. Its id is its webhook id:
        stable across re-runs, so a crash after the change repeats it, never loses it.
        ``masked``: the workspace hides live text, so the event's record does too."""
        now = self._clock.now()
        event_id = f"evt_{record.job_id}_{record.version}_{event.removeprefix('message.')}"
        return WorkItem(
            id=event_id, kind=WORK_EVENT, ref=record.job_id, due_at=now, created_at=now,
            payload={"workspace_id": record.workspace_id, "event": event,
                     "record": status_record(record, mask_live_text=masked).to_dict()},
        )  # fmt: skip

    async def _events(self, record: MessageRecord, *events: EventType | None) -> list[WorkItem]:
        wanted = [e for e in events if e is not None]
        if not wanted or not await self._with_endpoints({record.workspace_id}):
            return []
        masked = bool(await self._masking({record.workspace_id}))
        return [self._event_item(record, event, masked) for event in wanted]

    # ------------------------------------------------------------------ reports in

    @ingest_span
    async def ingest(
        self,
        connection: Connection,
        reports: Sequence[ProviderReport],
        *,
        livemode: bool,
        known: Mapping[str, ProviderRef] | None = None,
    ) -> IngestResult:
        """Apply reports that arrived for ``connection``; ``livemode`` says which world they
        belong to (a simulated report never touches a live message, nor the reverse).
        Text the store cannot keep is handled by :func:`~._text.storable_report`.

        The reports of one request are applied side by side (up to ``_INGEST_CONCURRENCY``
        at once), so their changes share the store's group commits: a provider's push of
        100 reports costs a few transactions, not 100. Order does not matter: reports are
        idempotent and safe out of order (D10), and changes to one message are
        compare-and-set.

        A report whose provider message id is not known (yet) is kept, durably before this
        returns, for :data:`ORPHAN_TTL`: the provider may have reported before the send that
        got the id stored it (see :meth:`handle_orphan`). It counts as not ``matched``.

        ``known``: refs the caller already holds, by provider message id (a simulated report
        carries its own): those reports skip the store's look-up of their ref."""
        limit = asyncio.Semaphore(_INGEST_CONCURRENCY)
        orphans: list[WorkItem] = []

        async def apply(received: ProviderReport) -> tuple[bool, bool]:
            report = storable_report(received)  # from a provider: any text at all
            if report is None:
                return False, False
            async with limit:
                ref = known.get(report.provider_message_id) if known else None
                if ref is not None:
                    return await self._apply(ref, report, livemode)
                # The ref and its message in one read: the change's first round uses it.
                found = await self._store.find_reported_message(
                    connection.id, report.provider_message_id
                ) or await self._landed(connection, report)
                if found is None:
                    settled = await self._settle_minted(connection, report, livemode)
                    if settled is not None:
                        return settled
                    if report.status != "pending":  # a pending report would change nothing
                        orphans.append(self._keep(connection, report, livemode))
                    return False, False
                ref, record = found
                return await self._apply(ref, report, livemode, read=(record,))

        record_reports(self.metrics, connection.provider, reports, livemode=livemode)
        outcomes = await asyncio.gather(*(apply(report) for report in reports))
        if orphans:
            await self._store.enqueue_work_many(orphans)
        matched = sum(1 for found, _ in outcomes if found)
        changed = sum(1 for _, did in outcomes if did)
        return IngestResult(len(reports), matched, changed)

    async def _apply(
        self,
        ref: ProviderRef,
        report: ProviderReport,
        livemode: bool,
        *,
        read: tuple[MessageRecord | None] | None = None,
    ) -> tuple[bool, bool]:
        """(matched, changed) of one report for the message ``ref`` names; ``read``: the
        message as just read with the ref (``None`` inside: gone)."""
        if ref.livemode != livemode:
            return False, False  # a simulated report never touches a live message, nor back
        step = _report_step(report)
        changed = await self._change(ref.workspace_id, ref.livemode, ref.job_id, step, read=read)
        return True, changed

    # ------------------------------------------------------------------ early reports

    async def _landed(
        self, connection: Connection, report: ProviderReport
    ) -> tuple[ProviderRef, MessageRecord | None] | None:
        """The ref and message of a report that came while a send of this process was storing
        its provider's answer (:mod:`.landing`), read once that is stored; ``None`` if no
        such send names it (a pending report is not waited for: it would change nothing)."""
        job_id = minted_job(report)
        if job_id is None or report.status == "pending" or not await self.landings.wait(job_id):
            return None
        return await self._store.find_reported_message(connection.id, report.provider_message_id)

    def _keep(self, connection: Connection, report: ProviderReport, livemode: bool) -> WorkItem:
        now = self._clock.now()
        until = now + self._keep_for
        return keep(connection.id, report, livemode=livemode, now=now, until=until)

    async def _ingest_live(self, connection: Connection, reports: Sequence[ProviderReport]) -> None:
        await self.ingest(connection, reports, livemode=True)

    async def handle_orphan(self, item: WorkItem) -> datetime | None:
        """Apply a report that came before its message's provider id was stored, once it is
        (see :mod:`._early_reports`); when its time is up, drop it: it was for a message
        this library never sent (another tool on the same provider account), or for one
        whose send never stored its outcome."""
        held = kept(item.payload)
        report = held.report
        ref = await self._store.find_provider_ref(held.connection_id, report.provider_message_id)
        if ref is not None:
            await self._apply(ref, report, held.livemode)
            return None
        connection = await self._store.get_connection(held.connection_id)
        if connection is not None and await self._settle_minted(connection, report, held.livemode):
            return None  # its send was cut off; its submit check has ended it since
        return next_look(item.attempts, self._clock.now(), held.until)

    async def _settle_minted(
        self, connection: Connection, report: ProviderReport, livemode: bool
    ) -> tuple[bool, bool] | None:
        """(matched, changed) of a report naming, by the id we minted for it, a send that was
        cut off before its outcome (and so its ref) was stored (:mod:`.minted`); ``None`` if
        the id is not one of ours or its message is not such a send (yet)."""
        job_id = minted_job(report)
        if job_id is None or report.status == "pending":
            return None
        record = await self._store.get_message(connection.workspace_id, livemode, job_id)
        if record is None or not claimable(record, connection):
            return None

        def step(record: MessageRecord, now: datetime) -> Transition:
            return settle_interrupted(record, connection, report, now=now)

        changed = await self._change(connection.workspace_id, livemode, job_id, step)
        if changed:
            # Later reports (a repeat, a final after a pending) find it as any other.
            await self._store.add_provider_refs(
                [ProviderRef(connection.id, report.provider_message_id, job_id,
                             connection.workspace_id, livemode,
                             open=polled(connection.provider, livemode))]
            )  # fmt: skip
        return True, changed

    # ------------------------------------------------------------------ worker handlers

    async def handle_timeout(self, item: WorkItem) -> datetime | None:
        workspace_id, livemode, index = _message_of(item)

        def step(record: MessageRecord, now: datetime) -> Transition:
            if len(record.attempts) - 1 != index:
                return Transition(record, changed=False)  # a later attempt has its own timer
            return apply_timeout(record, now=now)

        await self._change(workspace_id, livemode, item.ref, step)
        return None

    async def handle_simulated(self, item: WorkItem) -> datetime | None:
        payload = item.payload
        connection = await self._store.get_connection(str(payload["connection_id"]))
        if connection is None:
            return None
        message_id = str(payload["provider_message_id"])
        report = simulated_report(
            message_id, str(payload["status"]),
            occurred_at=item.due_at, to=str(payload.get("to") or "") or None,
        )  # fmt: skip
        # The item knows its message (its ref, and its workspace): the ref was
        # stored with it in one transaction, so the store need not be asked which job it is.
        workspace_id = payload.get("workspace_id")
        known = None
        if isinstance(workspace_id, str):
            ref = ProviderRef(connection.id, message_id, item.ref, workspace_id, livemode=False)
            known = {message_id: ref}
        await self.ingest(connection, [report], livemode=False, known=known)
        return None

    async def handle_simulated_batch(self, batch: Batch) -> list[WorkItem]:
        """Many simulated reports at once: see :func:`.report_batch.apply_simulated`."""
        return await apply_simulated(
            batch, store=self._store, clock=self._clock, metrics=self.metrics,
            change_of=self._change_of,
        )  # fmt: skip

    async def handle_poll(self, item: WorkItem) -> datetime | None:
        """One poll round of a connection (see :mod:`._polling`); the item is due again
        the provider's interval after the end of this round."""
        connection = await self._store.get_connection(item.ref)
        policy = None if connection is None else PROFILES[connection.provider].poll
        if connection is None or policy is None:
            return None  # removed: nothing left to ask about
        try:
            await self._poller.round(connection, policy)
        except Exception:
            # Its calls were made all the same: the next round waits the whole interval too,
            # never the worker's 5 s retry (another process would call again at once).
            logger.warning(
                "report poll of connection %s failed; the next round asks again",
                connection.id,
                exc_info=True,
            )
        return self._clock.now() + self._poller.every(policy)

    async def handle_event(self, item: WorkItem) -> datetime | None:
        payload = item.payload
        document = payload["record"]
        if isinstance(document, dict):
            event = _event_type(str(payload["event"]))
            # Claimed once, never run before: no delivery of this event can exist yet. The
            # item's own time is the event's, so a re-run sends the very same body.
            await self.events.emit_document(
                str(payload["workspace_id"]), event, document, event_id=item.id,
                fresh=item.attempts <= 1, occurred_at=item.created_at,
            )  # fmt: skip
        return None

    async def handle_retry(self, item: WorkItem) -> datetime | None:
        workspace_id, livemode, index = _message_of(item)
        until = datetime.fromisoformat(str(item.payload["until"]))
        await self._redispatch(workspace_id, livemode, item.ref, index, retry_until=until)
        return None

    async def handle_fallback(self, item: WorkItem) -> datetime | None:
        workspace_id, livemode, index = _message_of(item)
        await self._redispatch(workspace_id, livemode, item.ref, index)
        return None

    # ------------------------------------------------------------------ scheduled sends

    def scheduled_item(self, record: MessageRecord) -> WorkItem:
        """The hand-over of a message that waits (phase ``scheduled``), due at its
        ``send_at``: stored with the message in its acceptance transaction, so a restart
        loses nothing; the worker's lease and the hand-over's write-ahead attempt make sure
        it is handed over once."""
        assert record.send_at is not None
        return WorkItem(
            id=f"sched_{record.job_id}", kind=WORK_SCHEDULED, ref=record.job_id,
            due_at=record.send_at, created_at=self._clock.now(),
            payload={"workspace_id": record.workspace_id, "livemode": record.livemode,
                     "attempt": -1},
        )  # fmt: skip

    async def handle_scheduled(self, item: WorkItem) -> datetime | None:
        """Hand a waiting message over when it is due: later, if quiet hours (as the
        workspace has them now) hold it; not at all if it was canceled. Its quota unit is
        taken in the transaction that marks the hand-over (D17: charged at hand-over)."""
        workspace_id, livemode, index = _message_of(item)
        record = await self._store.get_message(workspace_id, livemode, item.ref)
        if record is None:
            return None
        if record.phase != "scheduled" or record.status != "queued":
            # Canceled, or handed over already: a placeholder still in flight means that
            # hand-over's worker died mid-call (this item's lease ran out): ``unknown``.
            if len(record.attempts) == index + 2 and record.attempts[-1].error == _IN_FLIGHT:
                await self._interrupted(record)
            return None
        workspace = await self._store.get_workspace(workspace_id)
        if workspace is None:
            return None
        now = self._clock.now()
        # Quiet hours switched on since it was accepted hold it at the gate (D35).
        until = now + workspace.queue_ttl if workspace.retry_unavailable else now
        charge = quota_charge(workspace_id, livemode, [record], 1, limit=workspace.monthly_quota)
        await self._redispatch(
            workspace_id, livemode, item.ref, index, retry_until=until, scheduled=(charge,)
        )
        return None

    async def cancel(self, workspace_id: str, livemode: bool, job_id: str) -> MessageRecord:
        """Cancel a message no provider has yet (:func:`~.rules.apply_cancel`): it ends
        ``failed`` with ``CANCELED`` and a ``message.failed`` event, and gives back its quota
        unit if it took one. :class:`MessageNotCancelable` when it is too late."""
        for _ in range(_CAS_TRIES):
            record = await self._store.get_message(workspace_id, livemode, job_id)
            if record is None:
                raise MessageNotFound
            transition = apply_cancel(record, now=self._clock.now())
            if not transition.changed:
                return record
            ended = replace(transition.record, version=record.version + 1)
            work = await self._events(ended, transition.event)
            if await self._store.replace_message(ended, work=work):
                record_settled(self.metrics, record, ended)
                await release_unit(self._store, ended)  # D7/D27 waiting ones took one
                return ended
        raise _Contended(job_id)

    # ------------------------------------------------------------------ changes

    async def _change(
        self,
        workspace_id: str,
        livemode: bool,
        job_id: str,
        step: Step,
        *,
        read: tuple[MessageRecord | None] | None = None,
    ) -> bool:
        """Apply ``step`` to the stored message with compare-and-set, storing in the same
        transaction the work it starts (a fallback, its event). ``read``: the message as the
        caller just read it (``None`` inside: gone), for the first round."""
        for attempt in range(_CAS_TRIES):
            if attempt == 0 and read is not None:
                (record,) = read
            else:
                record = await self._store.get_message(workspace_id, livemode, job_id)
            if record is None:
                return False
            transition = step(record, self._clock.now())
            if not transition.changed:
                return False
            change = await self._change_of(record, transition)
            updated = change.record
            if await self._store.replace_message(updated, work=change.work, closed=change.closed):
                record_settled(self.metrics, record, updated)
                return True
        logger.warning("message %s kept changing under us; the change is retried later", job_id)
        raise _Contended(job_id)

    async def _change_of(self, record: MessageRecord, transition: Transition) -> MessageChange:
        """The stored form of ``transition`` of ``record``: the new version, and the work
        it starts (its event, a fallback, a hand-over) and the refs it closes, to be stored
        with it in one transaction."""
        updated = replace(transition.record, version=record.version + 1)
        work = await self._events(updated, transition.event)
        if transition.fallback:
            work.append(self._fallback_item(updated))
        if transition.handover:
            # No provider has it: handed over at once, as a send slot's hand-over is
            # (unavailable then: failed, as D7 says without its window).
            now = self._clock.now()
            work.append(self._paced_item(updated, now, now))
        closed = await self._answered(record, updated)
        return MessageChange(updated, work=work, closed=closed)

    def _fallback_item(self, record: MessageRecord) -> WorkItem:
        now = self._clock.now()
        index = len(record.attempts) - 1
        return WorkItem(
            id=f"fb_{record.job_id}_{index}", kind=WORK_FALLBACK, ref=record.job_id,
            due_at=now, created_at=now,
            payload={"workspace_id": record.workspace_id, "livemode": record.livemode,
                     "attempt": index},
        )  # fmt: skip

    async def _answered(self, before: MessageRecord, after: MessageRecord) -> list[tuple[str, str]]:
        """The refs of attempts that got their answer: polling stops asking about them, in
        the transaction of the change itself. Only polled refs: the others were stored
        closed (:func:`.polling.polled`), so a pushed final report writes one row less."""
        answered = [
            (old.provider, old.provider_message_id)
            for old, new in zip(before.attempts, after.attempts, strict=False)
            if old.status == "accepted" and new.status != "accepted" and old.provider_message_id
            and polled(old.provider, after.livemode)
        ]  # fmt: skip
        if not answered:
            return []
        connections = await self._connections(after.workspace_id)
        return [
            (connections[provider].id, message_id)
            for provider, message_id in answered
            if provider in connections and message_id is not None
        ]

    async def _connections(self, workspace_id: str) -> dict[ProviderCode, Connection]:
        return {c.provider: c for c in await self._store.list_connections(workspace_id)}

    # ------------------------------------------------------------------ re-dispatch

    async def _redispatch(
        self,
        workspace_id: str,
        livemode: bool,
        job_id: str,
        index: int,
        *,
        retry_until: datetime | None = None,
        scheduled: tuple[QuotaCharge | None] | None = None,
    ) -> None:
        """Hand the message to the rest of its chain: the fallback providers after a failed
        report or a time-out, or (``retry_until``, D7) the whole chain of a queued message.
        ``scheduled``: the first hand-over of a message that waited (phase ``scheduled``),
        with the quota unit to take as it is marked (``None`` inside: test mode, free)."""
        record = await self._store.get_message(workspace_id, livemode, job_id)
        if record is None or len(record.attempts) - 1 < index:
            return
        if len(record.attempts) - 1 > index:
            last = record.attempts[-1]
            if len(record.attempts) - 1 == index + 1 and last.error == _IN_FLIGHT:
                await self._interrupted(record)
            return  # already re-dispatched
        if retry_until is None:
            if record.status != "sent" or not record.fallback_left:
                return
            if record.attempts[index].status == "accepted":
                return  # the fallback was superseded (a late delivered report)
            chain = record.fallback_left
        else:
            if record.status != "queued":
                return
            chain = (record.provider, *record.fallback_left)
        workspace = await self._store.get_workspace(workspace_id)  # its rules now (D35)
        if workspace is None:
            return
        connections = await self._connections(workspace_id)
        hops: list[Hop] = []
        gone: list[Attempt] = []
        now = self._clock.now()
        for code in chain:
            connection = connections.get(code)
            if connection is None:
                gone.append(Attempt(code, "rejected", now, None, _NOT_CONNECTED))
                continue
            try:
                # D3 again, from what the request asked for: this hop's own header.
                hop = hop_for(connection, self._adapters, record.requested_sender,
                              livemode=livemode)  # fmt: skip
            except MessagingError as exc:
                gone.append(Attempt(code, "rejected", now, None, ErrorInfo(exc.code, exc.message)))
                continue
            hops.append(hop)
        if not hops:
            await self._end_failed(record, gone)
            return
        # Write ahead: a placeholder attempt says a hand-over is in flight.
        placeholder = Attempt(hops[0].connection.provider, "unknown", now, None, _IN_FLIGHT)
        marked = replace(
            record, attempts=(*record.attempts, placeholder), version=record.version + 1
        )
        if scheduled is not None:
            if record.phase != "scheduled":
                return  # canceled or handed over meanwhile
            marked = replace(marked, phase="settled")
            try:
                taken = await self._mark_scheduled(marked, scheduled[0])
            except _OverQuota:
                await self._end_with(record, QUOTA_AT_HANDOVER)
                return
            if not taken:
                raise _Contended(job_id)  # canceled meanwhile? the retry will see
        elif not await self._store.replace_message(marked):
            raise _Contended(job_id)  # the worker retries the item
        job = job_for(record)
        await dispatch(
            [job], hops, clock=self._clock, gate=self._gates.at(workspace), concurrency=1,
            first_attempt=len(record.attempts),
            breakers=self._breakers if livemode else None,
            pacing=self._pacing if livemode else None,
        )  # fmt: skip
        record_redispatch(self.metrics, record, job, retry=retry_until is not None)
        await self._opted_out(record, job)
        await self._store_redispatch(marked, job, hops, gone, connections, retry_until)

    async def _mark_scheduled(self, marked: MessageRecord, charge: QuotaCharge | None) -> bool:
        """Store the hand-over's write-ahead attempt and take its quota unit, together (a
        crash between them would lose or double the unit). :class:`_OverQuota` if the
        month's units are used up; ``False`` if the message changed meanwhile."""
        if charge is None:
            return await self._store.replace_message(marked)
        async with self._store.atomic():
            store = self._store
            if not await store.consume_quota(
                charge.workspace_id, charge.period, charge.units, charge.limit
            ):
                raise _OverQuota
            if await store.replace_message(marked):
                return True
            # The SQL store commits this with the charge (net nothing); the memory store,
            # which undoes nothing, needs it.
            await store.release_quota(charge.workspace_id, charge.period, charge.units)
            return False

    async def _end_with(self, record: MessageRecord, error: ErrorInfo) -> MessageRecord:
        now = self._clock.now()
        ended = move(
            record, "failed", error=error, final_at=now, updated_at=now, fallback_left=(),
            version=record.version + 1,
        )  # fmt: skip
        if not await self._store.replace_message(
            ended, work=await self._events(ended, "message.failed")
        ):
            raise _Contended(record.job_id)
        return ended

    async def _opted_out(self, record: MessageRecord, job: Job) -> None:
        """For a hand-over the worker made: a recipient who turned us away for
        good (a blocked bot) goes on the suppression list, as at submit."""
        outcome = job.last_outcome
        if outcome is None or not outcome.opted_out:
            return
        reason = outcome.error.message if outcome.error else "Opted out"
        await self._store.add_suppression(
            opt_out_entry(record.workspace_id, record.livemode, record.channel, record.to,
                          reason, now=self._clock.now())
        )  # fmt: skip

    async def _store_redispatch(
        self,
        marked: MessageRecord,
        job: Job,
        hops: Sequence[Hop],
        gone: Sequence[Attempt],
        connections: Mapping[ProviderCode, Connection],
        retry_until: datetime | None,
    ) -> None:
        count = len(marked.attempts) - 1  # attempts before the placeholder
        for _ in range(_CAS_TRIES):
            now = self._clock.now()
            fresh = await self._store.get_message(
                marked.workspace_id, marked.livemode, marked.job_id
            )
            if fresh is None:
                return
            attempts = (*fresh.attempts[:count], *gone, *job.attempts)
            window_open = retry_until is not None and now < retry_until
            result = after_routing(fresh, job, hops, attempts=attempts, now=now, retry=window_open)
            # What the new state starts is stored with it: a crash cannot split them.
            items = await self._events(result, event_for(result.status))
            refs: list[ProviderRef] = []
            if result.status == "sent":
                self._watch_accepted(result, connections, refs, items)
            elif result.status == "unknown":
                refs.extend(self._settling_ref(result, connections))
            elif job.paced_until is not None:
                # Also after a fallback (no D7 window): the hand-over is what moves it on;
                # its provider down at the slot then ends it as D7 says for no window.
                items.append(self._paced_item(result, job.paced_until, retry_until or now))
            elif result.status == "queued" and retry_until is not None:
                items.append(self._retry_item(result, retry_until))  # D7: the next round
            if not await self._store.replace_message(result, work=items, refs=refs):
                continue
            record_settled(self.metrics, fresh, result)
            # Given up: its unit back, unless a provider took it at some point (D17).
            await release_unit(self._store, result)
            return
        raise _Contended(marked.job_id)

    def _retry_item(self, record: MessageRecord, until: datetime) -> WorkItem:
        """The next D7 retry of a queued message: 5 s, 10 s, 20 s … after this round."""
        now = self._clock.now()
        index = len(record.attempts) - 1
        due = min(now + error_backoff(len(record.attempts)), until)
        return WorkItem(
            id=f"retry_{record.job_id}_{index}", kind=WORK_RETRY, ref=record.job_id,
            due_at=due, created_at=now,
            payload={"workspace_id": record.workspace_id, "livemode": record.livemode,
                     "attempt": index, "until": until.isoformat()},
        )  # fmt: skip

    def _paced_item(self, record: MessageRecord, due: datetime, until: datetime) -> WorkItem:
        """The hand-over of a message its send rate kept back (D27), when its slot is due.
        Each deferral is its own item (the due time in its id): the one being handled is
        deleted when its handler returns, and must not swallow the next."""
        now = self._clock.now()
        index = len(record.attempts) - 1
        return WorkItem(
            id=f"pace_{record.job_id}_{index}_{micros(due)}", kind=WORK_PACED,
            ref=record.job_id, due_at=due, created_at=now,
            payload={"workspace_id": record.workspace_id, "livemode": record.livemode,
                     "attempt": index, "until": until.isoformat()},
        )  # fmt: skip

    async def _end_failed(self, record: MessageRecord, gone: Sequence[Attempt]) -> None:
        now = self._clock.now()
        ended = move(
            record, "failed", attempts=(*record.attempts, *gone),
            error=gone[-1].error if gone else NO_PROVIDER_REACHED, final_at=now, updated_at=now,
            fallback_left=(), version=record.version + 1,
        )  # fmt: skip
        events = await self._events(ended, "message.failed")
        if not await self._store.replace_message(ended, work=events):
            raise _Contended(record.job_id)

    async def _interrupted(self, record: MessageRecord) -> None:
        now = self._clock.now()
        last = replace(record.attempts[-1], error=SUBMIT_INTERRUPTED)
        ended = move(
            record, "unknown", attempts=(*record.attempts[:-1], last),
            error=SUBMIT_INTERRUPTED, final_at=now, updated_at=now, fallback_left=(),
            version=record.version + 1,
        )  # fmt: skip
        await self._store.replace_message(ended, work=await self._events(ended, "message.unknown"))


class _OverQuota(Exception):
    """A scheduled hand-over found the month's quota used up (rolls its transaction back)."""


class _Contended(StorageUnavailable):
    """The message changed under a compare-and-set too often: 503, and the worker (or the
    provider pushing the report) retries later."""

    def __init__(self, job_id: str) -> None:
        super().__init__("The message is being changed by another request; try again.")
        self.job_id = job_id


def _event_type(name: str) -> EventType:
    for event in EVENT_TYPES:
        if event == name:
            return event
    raise ValueError(f"unknown event type {name!r}")


def _interrupted_step(record: MessageRecord, now: datetime) -> Transition:
    return apply_interrupted(record, now=now)


def _report_step(report: ProviderReport) -> Step:
    def step(record: MessageRecord, now: datetime) -> Transition:
        return apply_report(record, report, now=now)

    return step


def _report_wait(
    record: MessageRecord, connection: Connection, connections: Mapping[ProviderCode, Connection]
) -> timedelta:
    """How long the accepted attempt at ``connection`` waits for its report before the time-out
    moves the message on: the connection's ``dlr_timeout``, or (D36) the message's
    ``escalate_after`` when the next hop of its chain is another channel. The time-out item is
    stored with the attempt, so the escalation survives a restart."""
    wait = connection.dlr_timeout
    if record.escalate_after is None or not record.fallback_left:
        return wait
    following = connections.get(record.fallback_left[0])
    if following is None or following.channel == connection.channel:
        return wait
    return min(wait, timedelta(seconds=record.escalate_after))


def _message_of(item: WorkItem) -> tuple[str, bool, int]:
    """The message a work item is about: its workspace, mode and attempt index."""
    payload = item.payload
    attempt = payload.get("attempt", 0)
    return (
        str(payload["workspace_id"]),
        bool(payload["livemode"]),
        attempt if isinstance(attempt, int) else 0,
    )
