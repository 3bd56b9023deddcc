"""The webhook outbox (D19): events become durable deliveries, and the worker sends them.

:meth:`WebhookOutbox.emit` turns one message event into one
:class:`~unified_messaging.store.base.WebhookDelivery` row per subscribed, enabled endpoint of
the message's workspace, plus a ``"webhook"`` work item for each. :meth:`WebhookOutbox.handle`
is the worker's handler for that kind: it makes one attempt and answers when to try again.
Everything it needs between attempts is in the store, so deliveries survive restarts.

Decisions:

- **One event id per event.** All deliveries of one event (to every endpoint) carry the same
  ``webhook-id``, and it stays the same on every retry. A receiver behind two endpoints can
  therefore de-duplicate, and the store's "one delivery per (endpoint, event id)" rule makes a
  repeated ``emit`` of the same delivery impossible.
- **``events=()`` subscribes to everything**, event types added later included.
- **Delivery states**: ``pending`` until it ends; then ``delivered``, ``failed`` (the schedule
  ran out, the endpoint answered ``410 Gone``, or it failed for ``disable_after``),
  ``disabled`` (due while its endpoint was disabled: never sent), ``dropped`` (its endpoint's
  secret could not be opened).
- **Signing**: with the current secret, plus the previous one while its overlap runs
  (space-separated signatures). The timestamp is the attempt's own.
- **At least once**: a worker that dies after the receiver answered but before the row was
  updated sends again under the same ``webhook-id``. A delivery that is no longer pending, or
  not yet due, is never sent (running :meth:`handle` twice is harmless).
- **A fresh event's first attempt comes first**: on the event item's first run
  the attempt is made, then the delivery row, its retry's work item and the end of the event
  item are one write (``Store.record_webhook_attempt``), guarded by the item's lease; until
  then the event item itself is the record (see :meth:`WebhookOutbox.emit_document`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from .._clock import Clock
from .._domain import MessageRecord
from .._errors import AlreadyExists, DecryptionFailed, ResourceNotFound
from .._ids import new_id
from .._lifecycle.rules import EventType
from .._lifecycle.worker import Lease, LeaseLost, current_lease
from .._observability.metrics import NO_METRICS, Metrics, record_webhook
from .._responses import status_record
from ..store.base import Store, WebhookDelivery, WebhookEndpoint, WorkItem
from ..vault._core import Vault
from ._admin import open_secret
from ._schedule import DEFAULT_SCHEDULE, DISABLE_AFTER, next_attempt_at, should_disable
from ._sender import DeliveryResult, WebhookSender
from ._signing import build_event_document, event_id

__all__ = ["WORK_KIND", "WebhookOutbox", "subscribed", "webhook_secrets"]

#: The work-item kind whose handler is :meth:`WebhookOutbox.handle`.
WORK_KIND = "webhook"

logger = logging.getLogger("unified_messaging.webhooks")


def subscribed(endpoint: WebhookEndpoint, event_type: str) -> bool:
    """Does ``endpoint`` receive ``event_type``? An empty ``events`` means every type."""
    return not endpoint.events or event_type in endpoint.events


def webhook_secrets(vault: Vault, endpoint: WebhookEndpoint, *, now: datetime) -> list[str]:
    """The secrets to sign with now: the current one, then the previous one while it lasts."""
    ids = {"workspace_id": endpoint.workspace_id, "endpoint_id": endpoint.id}
    found = [open_secret(vault, endpoint.secret_ciphertext, **ids)]
    expires = endpoint.previous_secret_expires_at
    if endpoint.previous_secret_ciphertext and expires is not None and now < expires:
        found.append(open_secret(vault, endpoint.previous_secret_ciphertext, **ids))
    return found


class WebhookOutbox:
    """Queues message events for webhook endpoints and delivers them (see the module doc).

    ``schedule`` is the wait after each failed attempt and ``disable_after`` how long an
    endpoint may fail without a single success; tests compress both. ``metrics`` counts
    the attempts by result (D30).
    """

    def __init__(
        self,
        store: Store,
        vault: Vault,
        clock: Clock,
        *,
        sender: WebhookSender,
        schedule: Sequence[timedelta] = DEFAULT_SCHEDULE,
        disable_after: timedelta = DISABLE_AFTER,
        metrics: Metrics = NO_METRICS,
    ) -> None:
        if any(step <= timedelta(0) for step in schedule):
            raise ValueError("every step of the schedule must be positive")
        if disable_after <= timedelta(0):
            raise ValueError("disable_after must be positive")
        self._store = store
        self._vault = vault
        self._clock = clock
        self._sender = sender
        self._schedule = tuple(schedule)
        self._disable_after = disable_after
        self._metrics = metrics

    def __repr__(self) -> str:
        return f"WebhookOutbox(store={self._store!r}, sender={self._sender!r})"

    # ------------------------------------------------------------------ queueing

    async def emit(self, record: MessageRecord, event_type: EventType) -> int:
        """Queue ``event_type`` about ``record`` for every enabled endpoint that wants it.

        Returns how many deliveries were queued. The record is shown as its workspace shows
        it (masked live text, if it hides that).
        """
        workspace = await self._store.get_workspace(record.workspace_id)
        masked = workspace is not None and workspace.mask_live_text
        return await self.emit_document(
            record.workspace_id,
            event_type,
            status_record(record, mask_live_text=masked).to_dict(),
            event_id=event_id(),
            attempt_now=False,
        )

    async def emit_document(
        self,
        workspace_id: str,
        event_type: EventType,
        data: Mapping[str, object],
        *,
        event_id: str,
        attempt_now: bool = True,
        fresh: bool = False,
        occurred_at: datetime | None = None,
    ) -> int:
        """:meth:`emit` for a status record in its JSON form, under a given ``event_id``.

        Idempotent: an endpoint that already has a delivery of ``event_id`` gets no second
        one, so the lifecycle can re-run an event item after a crash (at least once, and the
        receiver sees one ``webhook-id``). Returns how many deliveries were queued now.

        ``attempt_now``, inside a worker's handler (the lifecycle's event item): each new
        delivery's first attempt is made right here. Its work item is stored already held
        under the handler's lease (:func:`~._worker.current_lease`, renewed by the worker's
        heartbeat), so no worker claims it meanwhile, and the attempt needs no claim and no
        read of what was just written. If the process dies mid-attempt, the lease runs out
        and a worker makes the attempt (at least once, under the same ``webhook-id``).
        Outside a worker, deliveries are only queued. Under a lease that was lost (another
        worker now runs the event item), nothing is queued:
        :class:`~.._lifecycle.worker.LeaseLost` is raised.

        ``fresh`` (with ``attempt_now``, inside a worker): the caller knows no delivery of
        ``event_id`` exists yet (the event item's first run), so each first attempt is made
        **before** anything is written, and its delivery row, in its outcome, is stored
        afterwards in one transaction with the work item of its retry (if any) and, for an
        event going to one endpoint, the deletion of the event item itself
        (:meth:`_deliver_first`). Until that write the event item is the record: a process
        that dies mid-attempt leaves it leased, and when the lease runs out a worker runs it
        again (not fresh: it queues and attempts what has no delivery yet; at least once,
        one ``webhook-id``).

        ``occurred_at`` is the event document's ``timestamp`` (default: now). The lifecycle
        passes the time its event item was stored, so every run of that item builds the
        same body, byte for byte, under the one ``webhook-id``.
        """
        lease = current_lease() if attempt_now else None
        if lease is not None and fresh:
            return await self._deliver_first(
                workspace_id, event_type, data, event_id=event_id, lease=lease, at=occurred_at
            )
        queued = await self._queue(
            workspace_id, event_type, data, event_id=event_id, lease=lease, at=occurred_at
        )
        if lease is not None and queued:
            await asyncio.gather(*(self._first_attempt(d, e, w, lease) for d, e, w in queued))
        return len(queued)

    async def _queue(
        self,
        workspace_id: str,
        event_type: EventType,
        data: Mapping[str, object],
        *,
        event_id: str,
        lease: Lease | None = None,
        at: datetime | None = None,
    ) -> list[tuple[WebhookDelivery, WebhookEndpoint, WorkItem]]:
        endpoints = await self._store.list_webhook_endpoints(workspace_id)
        targets = [e for e in endpoints if e.enabled and subscribed(e, event_type)]
        if not targets:
            return []
        now = self._clock.now()
        body = build_event_document(event_type, data, now=at or now)
        # Side by side: the endpoints' rows share one group commit.
        added = await asyncio.gather(
            *(self._queue_one(e, event_type, body, event_id=event_id, now=now, lease=lease)
              for e in targets)
        )  # fmt: skip
        return [entry for entry in added if entry is not None]

    async def _queue_one(
        self,
        endpoint: WebhookEndpoint,
        event_type: str,
        body: bytes,
        *,
        event_id: str,
        now: datetime,
        lease: Lease | None,
    ) -> tuple[WebhookDelivery, WebhookEndpoint, WorkItem] | None:
        """Store one delivery and its work item; ``None`` if the endpoint has this event
        already or is gone."""
        delivery = _new_delivery(endpoint, event_type, body, event_id=event_id, now=now)
        # One transaction: a crash can never leave a delivery nobody will make.
        work = WorkItem(
            id=f"wh_{delivery.id}", kind=WORK_KIND, ref=delivery.id, due_at=now, created_at=now
        )
        if lease is not None:
            # The lease as it stands now (renewed by the heartbeat), never a copy taken when
            # the event item was claimed; LeaseLost if it is gone.
            work = lease.stamp(work)
        try:
            await self._store.add_webhook_delivery(delivery, work)
        except (AlreadyExists, ResourceNotFound):
            # This event reached this endpoint's log before, or the endpoint was removed.
            return None
        if lease is not None:
            # Stored with a current lease, so a heartbeat that misses it in between still
            # leaves it held; the next one renews it. The first attempt releases it.
            lease.hold(work)
        return delivery, endpoint, work

    async def _deliver_first(
        self,
        workspace_id: str,
        event_type: EventType,
        data: Mapping[str, object],
        *,
        event_id: str,
        lease: Lease,
        at: datetime | None,
    ) -> int:
        """The first attempts of a fresh event, each recorded in one write (see
        :meth:`emit_document`); how many deliveries were stored."""
        endpoints = await self._store.list_webhook_endpoints(workspace_id)
        targets = [e for e in endpoints if e.enabled and subscribed(e, event_type)]
        if not targets:
            return 0
        _still_held(lease)  # nothing is sent for an event item another worker runs now
        now = self._clock.now()
        body = build_event_document(event_type, data, now=at or now)
        # One endpoint (the common case): its record also ends the event item.
        complete = len(targets) == 1
        # Every attempt runs to its end before an error (LeaseLost, the store) ends the
        # handler: none is left running once the worker has let the event item go.
        outcomes = await asyncio.gather(
            *(self._first_of(e, event_type, body, event_id=event_id, now=now, lease=lease,
                             complete=complete)
              for e in targets),
            return_exceptions=True,
        )  # fmt: skip
        stored = 0
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
            stored += outcome
        return stored

    async def _first_of(
        self,
        endpoint: WebhookEndpoint,
        event_type: str,
        body: bytes,
        *,
        event_id: str,
        now: datetime,
        lease: Lease,
        complete: bool,
    ) -> int:
        delivery = _new_delivery(endpoint, event_type, body, event_id=event_id, now=now)
        after = await self._attempted(delivery, endpoint)
        due = _due(after)
        retry = None
        if due is not None:
            retry = WorkItem(
                id=f"wh_{delivery.id}", kind=WORK_KIND, ref=delivery.id, due_at=due, created_at=now
            )
        try:
            recorded = await self._store.record_webhook_attempt(
                after,
                retry=retry,
                held=lease.item_id,
                worker_id=lease.worker_id,
                now=self._clock.now(),
                complete=complete,
            )
        except (AlreadyExists, ResourceNotFound):
            # This endpoint has the event already, or was removed during the attempt.
            return 0
        if not recorded:
            raise LeaseLost(f"work item {lease.item_id} is no longer held by {lease.worker_id}")
        if complete:
            lease.ended()
        return 1

    async def queue_to(
        self,
        endpoint: WebhookEndpoint,
        event_type: EventType,
        data: Mapping[str, object],
        *,
        event_id: str,
    ) -> WebhookDelivery | None:
        """One event to one endpoint whatever it subscribes to (the dashboard's test event);
        the worker makes the delivery."""
        now = self._clock.now()
        body = build_event_document(event_type, data, now=now)
        added = await self._queue_one(
            endpoint, event_type, body, event_id=event_id, now=now, lease=None
        )
        return None if added is None else added[0]

    async def redeliver(self, delivery: WebhookDelivery) -> WebhookDelivery:
        """Make a finished delivery once more, now, under its own ``webhook-id`` (D19): the
        same event, so a receiver that has it already can tell. Its attempts go on counting,
        so a redelivery that fails is not retried on the schedule again."""
        now = self._clock.now()
        again = replace(delivery, status="pending", next_attempt_at=now, updated_at=now)
        # The row first: a crash before the work item leaves it pending with nothing to make
        # it, and a second redelivery mends that; the other order could drop the work item
        # (the worker skips a delivery that is not pending).
        await self._store.update_webhook_delivery(again)
        await self._store.enqueue_work(
            WorkItem(id=new_id("whr"), kind=WORK_KIND, ref=delivery.id, due_at=now, created_at=now)
        )
        return again

    async def _first_attempt(
        self, delivery: WebhookDelivery, endpoint: WebhookEndpoint, work: WorkItem, lease: Lease
    ) -> None:
        try:
            if not lease.holds(work.id):
                # Lost (or run out unrenewed): a worker may be making this attempt already.
                logger.warning("webhook delivery %s: its lease was lost; left to the worker",
                               delivery.id)  # fmt: skip
                return
            again = await self._attempt(delivery, endpoint)
            if again is None:
                await self._store.complete_work(work.id, lease.worker_id)
            else:
                await self._store.reschedule_work(work.id, lease.worker_id, again)
        except Exception:
            # The work item keeps its lease and is claimed by a worker when it runs out.
            logger.exception("webhook delivery %s: first attempt failed; left to the worker",
                             delivery.id)  # fmt: skip
        finally:
            lease.release(work.id)

    # ------------------------------------------------------------------ delivering

    async def handle(self, item: WorkItem) -> datetime | None:
        """Make one attempt at the delivery ``item.ref``; when to run again, or None."""
        delivery = await self._store.get_webhook_delivery(item.ref)
        if delivery is None or delivery.status != "pending":
            return None  # removed with its endpoint, or already finished
        now = self._clock.now()
        if delivery.next_attempt_at is not None and delivery.next_attempt_at > now:
            return delivery.next_attempt_at  # a duplicate run: this attempt is not due yet
        endpoint = await self._store.get_webhook_endpoint(delivery.endpoint_id)
        if endpoint is None:
            await self._finish(delivery, "dropped", error="the endpoint was removed")
            return None
        return await self._attempt(delivery, endpoint)

    async def _attempt(
        self, delivery: WebhookDelivery, endpoint: WebhookEndpoint
    ) -> datetime | None:
        """One attempt of a pending, due ``delivery`` to ``endpoint``, its outcome written;
        when to try again."""
        after = await self._attempted(delivery, endpoint)
        await self._store.update_webhook_delivery(after)
        return _due(after)

    async def _attempted(
        self, delivery: WebhookDelivery, endpoint: WebhookEndpoint
    ) -> WebhookDelivery:
        """One attempt of a pending, due ``delivery`` to ``endpoint``: the delivery as it
        stands after it (not written; the endpoint's health is)."""
        now = self._clock.now()
        if not endpoint.enabled:
            return self._ended(delivery, "disabled", error="the endpoint is disabled")
        try:
            secrets = webhook_secrets(self._vault, endpoint, now=now)
        except DecryptionFailed:
            logger.error("webhook endpoint %s: its secret cannot be opened", endpoint.id)
            return self._ended(delivery, "dropped", error="the endpoint secret cannot be opened")
        result = await self._sender.deliver_signed(
            endpoint.url, delivery.payload, secrets=secrets, msg_id=delivery.event_id
        )
        record_webhook(self._metrics, result)
        return await self._judged(delivery, endpoint, result)

    async def _judged(
        self, delivery: WebhookDelivery, endpoint: WebhookEndpoint, result: DeliveryResult
    ) -> WebhookDelivery:
        endpoint_id = endpoint.id
        now = self._clock.now()
        delivery = replace(
            delivery,
            attempts=delivery.attempts + 1,
            last_status_code=result.status_code,
            last_error=result.error,
            last_answer=result.answer,
            updated_at=now,
        )
        if result.ok:
            if endpoint.failing_since is not None:
                await self._endpoint_succeeded(endpoint_id)
            return self._ended(delivery, "delivered", error=None)
        if result.outcome == "refused":
            # This process may not send there; another one may. The endpoint is not at
            # fault, so its health is left alone and it is never disabled for it.
            logger.warning(
                "webhook delivery %s to %s not sent (attempt %d): %s",
                delivery.id, endpoint_id, delivery.attempts, result.error,
            )  # fmt: skip
            return self._again(delivery, now, result)
        logger.info(
            "webhook delivery %s to %s failed (attempt %d): %s",
            delivery.id,
            endpoint_id,
            delivery.attempts,
            result.error,
        )
        failing_since = await self._endpoint_failed(endpoint_id, now)
        if result.outcome == "disable":
            await self._disable(endpoint_id, now, why=result.error or "refused")
            return self._ended(delivery, "failed", error=result.error)
        if should_disable(failing_since, now, after=self._disable_after):
            await self._disable(endpoint_id, now, why=f"failing since {failing_since}")
            return self._ended(delivery, "failed", error=result.error)
        return self._again(delivery, now, result)

    def _again(
        self, delivery: WebhookDelivery, now: datetime, result: DeliveryResult
    ) -> WebhookDelivery:
        """Pending until the next attempt on the schedule, or ``failed`` when the schedule
        has run out."""
        due = next_attempt_at(
            delivery.attempts, now=now, schedule=self._schedule, retry_after=result.retry_after
        )
        if due is None:
            return self._ended(delivery, "failed", error=result.error)
        return replace(delivery, next_attempt_at=due)

    def _ended(
        self, delivery: WebhookDelivery, status: str, *, error: str | None
    ) -> WebhookDelivery:
        return replace(
            delivery,
            status=status,
            next_attempt_at=None,
            last_error=error if error is not None else delivery.last_error,
            updated_at=self._clock.now(),
        )

    async def _finish(self, delivery: WebhookDelivery, status: str, *, error: str | None) -> None:
        await self._store.update_webhook_delivery(self._ended(delivery, status, error=error))

    # The endpoint is read again right before each write, so an admin change made while the
    # request was in flight (a rotation, say) is not overwritten by a stale copy. A success
    # looks only when the copy it was sent with was failing: the common case reads nothing.
    # (A failure recorded by a concurrent delivery in between is cleared by the next success.)
    async def _endpoint_succeeded(self, endpoint_id: str) -> None:
        endpoint = await self._store.get_webhook_endpoint(endpoint_id)
        if endpoint is not None and endpoint.failing_since is not None:
            await self._store.set_webhook_endpoint_health(
                endpoint_id,
                enabled=endpoint.enabled,
                disabled_at=endpoint.disabled_at,
                failing_since=None,
            )

    async def _endpoint_failed(self, endpoint_id: str, now: datetime) -> datetime | None:
        endpoint = await self._store.get_webhook_endpoint(endpoint_id)
        if endpoint is None:
            return None
        if endpoint.failing_since is None:
            await self._store.set_webhook_endpoint_health(
                endpoint_id, enabled=endpoint.enabled, disabled_at=endpoint.disabled_at,
                failing_since=now,
            )  # fmt: skip
            return now
        return endpoint.failing_since

    async def _disable(self, endpoint_id: str, now: datetime, *, why: str) -> None:
        endpoint = await self._store.get_webhook_endpoint(endpoint_id)
        if endpoint is None or not endpoint.enabled:
            return
        await self._store.set_webhook_endpoint_health(
            endpoint_id, enabled=False, disabled_at=now, failing_since=endpoint.failing_since
        )
        logger.warning("webhook endpoint %s disabled: %s", endpoint_id, why)


def _due(delivery: WebhookDelivery) -> datetime | None:
    """When a delivery is to be attempted again: ``None`` once it has ended."""
    return delivery.next_attempt_at if delivery.status == "pending" else None


def _still_held(lease: Lease) -> None:
    """:class:`LeaseLost` unless this worker still holds the lease's item."""
    if not lease.holds(lease.item_id):
        raise LeaseLost(f"work item {lease.item_id} is no longer held by {lease.worker_id}")


def _new_delivery(
    endpoint: WebhookEndpoint, event_type: str, body: bytes, *, event_id: str, now: datetime
) -> WebhookDelivery:
    """A delivery of ``body`` to ``endpoint``, pending, due now."""
    return WebhookDelivery(
        id=new_id("whd"),
        endpoint_id=endpoint.id,
        event_id=event_id,
        event_type=event_type,
        payload=body,
        status="pending",
        created_at=now,
        updated_at=now,
        next_attempt_at=now,
    )
