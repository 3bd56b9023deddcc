"""The durable worker: claims due rows of the work table and runs their handlers.

All deferred work (a simulated or polled delivery report, a DLR time-out, a retry of an
unavailable provider, a webhook delivery) is a :class:`~unified_messaging.store.base.WorkItem`
row with a ``due_at``. Any number of workers, in any processes or hosts sharing the store,
run :meth:`Worker.run`: the store's claim gives each row to one worker at a time under a
lease, and a worker that dies mid-item leaves it to be claimed again when the lease runs out.
Handlers must therefore be safe to run twice for one item (at least once, never at once).

While a batch runs, a heartbeat renews the leases of its items that are still running, so an
item that takes longer than its lease (a slow provider, a webhook receiver's 15 s) is never
claimed by a second worker while the first still has it. Only a worker that stops beating
(it died) lets its items go. The leases a worker holds live in one object, :class:`Leases`:
the heartbeat renews it, and every write under a lease (:class:`Lease`, what a handler sees)
reads the current lease from it and fails closed (:class:`LeaseLost`) once the lease is gone.

A handler returns ``None`` when the item is done (the row is deleted) or a time to run it
again (the row is rescheduled). A handler that raises is logged and retried with backoff, so a
bug or an outage never loses an item; an unknown kind waits for a worker that knows it.

A kind may also have a *batch handler* (:data:`BatchHandler`): the items of that kind claimed
together are handed to it at once, as a :class:`Batch`, so it can read and write them in one
go (the simulated reports of test sends: one read and one transaction for many). It completes
the items it finishes itself, in its own transaction, under the leases the batch checks, and
returns the items it leaves: those run one at a time through the kind's ordinary handler, with
its error isolation and backoff. A batch handler that raises leaves them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Final

from .._clock import Clock
from .._ids import new_id
from .._observability.log_context import bind_log_context
from .._observability.tracing import TRACE_KEY, span
from ..store.base import Store, WorkItem

__all__ = [
    "DEFAULT_LEASE",
    "Batch",
    "BatchHandler",
    "Handler",
    "Lease",
    "LeaseLost",
    "Leases",
    "Worker",
    "current_lease",
    "error_backoff",
]

logger = logging.getLogger("unified_messaging.worker")

#: Run the item again at this time, or ``None``: it is done.
Handler = Callable[[WorkItem], Awaitable[datetime | None]]

DEFAULT_LEASE: Final = timedelta(minutes=2)
_UNKNOWN_KIND_DELAY: Final = timedelta(minutes=10)
_MAX_ERROR_BACKOFF: Final = timedelta(minutes=30)


class LeaseLost(RuntimeError):
    """This worker no longer holds the item: another worker may run it now. Whatever was to
    be written under the lease is not written (fail closed)."""


class Leases:
    """The one truth of what a worker holds and until when.

    The worker records each item it claims here, its heartbeat renews every held item and
    records the new ``until`` (or that the item was lost to another worker), and every write
    under a lease reads the lease from here at the moment of the write. A copy taken at claim
    time would go stale at the first renewal (follow-up items written
    under a lease that had run out were claimed by a second worker at once).
    """

    def __init__(self, worker_id: str, clock: Clock) -> None:
        self.worker_id = worker_id
        self._clock = clock
        self._until: dict[str, datetime] = {}
        self._lost: set[str] = set()
        self._ended: set[str] = set()

    def __repr__(self) -> str:
        return f"Leases({self.worker_id!r}, held={len(self._until)}, lost={len(self._lost)})"

    def __len__(self) -> int:
        return len(self._until)

    def held(self) -> list[str]:
        return sorted(self._until)

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._until

    def hold(self, item_id: str, until: datetime) -> None:
        self._until[item_id] = until
        self._lost.discard(item_id)

    def release(self, item_id: str) -> None:
        self._until.pop(item_id, None)
        self._lost.discard(item_id)
        self._ended.discard(item_id)

    def end(self, item_id: str) -> None:
        """The handler deleted ``item_id`` itself, in a write made under its lease: nothing
        more is held, renewed or written for it (see :meth:`Lease.ended`)."""
        self._until.pop(item_id, None)
        self._lost.discard(item_id)
        self._ended.add(item_id)

    def ended(self, item_id: str) -> bool:
        return item_id in self._ended

    def renewed(self, asked: Sequence[str], kept: Sequence[str], until: datetime) -> None:
        """A heartbeat asked to renew ``asked`` to ``until``; the store still had ``kept``.
        An item asked for and not kept was claimed by another worker: it is lost."""
        still = set(kept)
        for item_id in asked:
            if item_id not in self._until:
                continue  # released while the renewal ran: done, not lost
            if item_id in still:
                self._until[item_id] = until
            else:
                self._lost.add(item_id)

    def holds(self, item_id: str) -> bool:
        """Does this worker still hold ``item_id`` (neither lost nor run out)?"""
        try:
            self.until(item_id)
        except LeaseLost:
            return False
        return True

    def until(self, item_id: str) -> datetime:
        """The lease of ``item_id`` as of now; :class:`LeaseLost` if this worker does not
        hold it any more (another worker claimed it, or it ran out unrenewed)."""
        until = self._until.get(item_id)
        if until is None or item_id in self._lost or until <= self._clock.now():
            raise LeaseLost(f"work item {item_id} is no longer held by {self.worker_id}")
        return until


@dataclass(frozen=True, slots=True)
class Lease:
    """The lease of the work item whose handler is running (see :func:`current_lease`): a
    view of the worker's :class:`Leases`, so it is always the current, renewed lease.

    A handler that stores new work under this lease and runs it at once, without a claim,
    stamps it with :meth:`stamp` (the current ``until``; :class:`LeaseLost` when the lease
    is gone), calls :meth:`hold` once it is stored, so the heartbeat renews it with the rest,
    checks :meth:`holds` before acting on it and calls :meth:`release` when done. If the
    worker dies, every such item becomes claimable when its lease runs out. A handler whose
    own write deleted its item (checking this lease in that transaction) calls
    :meth:`ended`, and the worker then records no end of its own.
    """

    item_id: str
    _leases: Leases = field(repr=False)

    @property
    def worker_id(self) -> str:
        return self._leases.worker_id

    @property
    def until(self) -> datetime:
        """The handler's item's lease now; :class:`LeaseLost` if it was lost."""
        return self._leases.until(self.item_id)

    def stamp(self, item: WorkItem) -> WorkItem:
        """``item`` held under this lease as it stands now (:class:`LeaseLost` if lost)."""
        return replace(item, claimed_by=self.worker_id, lease_until=self.until)

    def hold(self, item: WorkItem) -> None:
        """``item`` (stored under :meth:`stamp`) is renewed with the rest from now on."""
        if item.lease_until is not None:
            self._leases.hold(item.id, item.lease_until)

    def holds(self, item_id: str) -> bool:
        """Is ``item_id`` (held through :meth:`hold`) still this worker's?"""
        return self._leases.holds(item_id)

    def release(self, item_id: str) -> None:
        self._leases.release(item_id)

    def ended(self) -> None:
        """The handler's own item was deleted by one of its writes (the store checked this
        lease in that transaction): the worker records no end of its own for it."""
        self._leases.end(self.item_id)


_CURRENT_LEASE: ContextVar[Lease | None] = ContextVar("unified_messaging_lease", default=None)


def current_lease() -> Lease | None:
    """The lease of the work item being handled in this task, or ``None`` outside a worker."""
    return _CURRENT_LEASE.get()


def error_backoff(attempts: int) -> timedelta:
    """5 s, 10 s, 20 s … capped at 30 min: the wait after a handler raised ``attempts`` times."""
    seconds = 5 * 2 ** min(max(attempts - 1, 0), 16)
    return min(timedelta(seconds=seconds), _MAX_ERROR_BACKOFF)


@dataclass(frozen=True, slots=True)
class Batch:
    """Claimed items of one kind, handed to the kind's batch handler together. Each item's
    lease is read from the worker's :class:`Leases` at the moment it is asked for, as a
    :class:`Lease` is: a handler checks :meth:`holds` before it writes for an item, and its
    store write deletes the item only where ``worker_id`` still holds it."""

    items: tuple[WorkItem, ...]
    _leases: Leases = field(repr=False)

    @property
    def worker_id(self) -> str:
        return self._leases.worker_id

    def holds(self, item_id: str) -> bool:
        """Is ``item_id`` still this worker's (its lease neither lost nor run out)?"""
        return self._leases.holds(item_id)


#: Runs a :class:`Batch`; returns the items it leaves to the kind's one-at-a-time handler.
#: Every other item it finished (completed in its own transaction) or found lost.
BatchHandler = Callable[[Batch], Awaitable[Sequence[WorkItem]]]


class Worker:
    """Runs the handlers of due work items until told to stop."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        handlers: Mapping[str, Handler],
        *,
        batch_handlers: Mapping[str, BatchHandler] | None = None,
        worker_id: str | None = None,
        lease: timedelta = DEFAULT_LEASE,
        batch: int = 50,
        concurrency: int = 16,
        idle_interval: float = 0.5,
        gather_interval: float = 0.1,
    ) -> None:
        if batch < 1 or concurrency < 1:
            raise ValueError("batch and concurrency must be at least 1")
        self._store = store
        self._clock = clock
        self._handlers = dict(handlers)
        # A batch handler stands in for a kind's handler only where that handler exists:
        # the items it leaves run through it.
        self._batch_handlers = {
            kind: run for kind, run in (batch_handlers or {}).items() if kind in self._handlers
        }
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{new_id('wk')}"
        self._lease = lease
        self._batch = batch
        self._concurrency = concurrency
        self._limit = asyncio.Semaphore(concurrency)
        self._idle_interval = idle_interval
        self._gather = min(gather_interval, idle_interval)
        self._leases = Leases(self.worker_id, clock)

    def __repr__(self) -> str:
        return f"Worker({self.worker_id!r}, kinds={sorted(self._handlers)})"

    async def run_once(self) -> int:
        """Claim one batch of due items and run them; returns how many were claimed."""
        items = await self._store.claim_due_work(
            now=self._clock.now(), worker_id=self.worker_id, lease=self._lease, limit=self._batch
        )
        if items:
            runs = self._runs(self._take(items))
            heartbeat = asyncio.create_task(self._heartbeat())
            try:
                await asyncio.gather(*(run for run, _ in runs))
            finally:
                heartbeat.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await heartbeat
        return len(items)

    def _take(self, items: Sequence[WorkItem]) -> list[WorkItem]:
        """Hold the claimed ``items`` and return those to run. An item this worker is running
        already (its lease ran out unrenewed, and this worker claimed it again) keeps its one
        run: the claim only renewed its lease, which the running handler reads."""
        fresh = [item for item in items if item.id not in self._leases]
        for item in items:
            self._leases.hold(item.id, item.lease_until or self._clock.now() + self._lease)
        return fresh

    def _runs(self, items: Sequence[WorkItem]) -> list[tuple[Coroutine[Any, Any, None], int]]:
        """What runs the claimed ``items``, and how many items each holds: a batch per kind
        that has a batch handler (of two items or more), the rest one by one."""
        grouped: dict[str, list[WorkItem]] = {}
        runs: list[tuple[Coroutine[Any, Any, None], int]] = []
        for item in items:
            if item.kind in self._batch_handlers:
                grouped.setdefault(item.kind, []).append(item)
            else:
                runs.append((self._run_item(item), 1))
        for kind, group in grouped.items():
            if len(group) == 1:
                runs.append((self._run_item(group[0]), 1))
            else:
                runs.append((self._run_batch(kind, group), len(group)))
        return runs

    async def _heartbeat(self, *, forever: bool = False) -> None:
        """Renew the leases of the items still running, three times per lease."""
        interval = self._lease.total_seconds() / 3
        while self._leases or forever:
            await asyncio.sleep(interval)
            await self.renew_leases()

    async def renew_leases(self) -> None:
        """One heartbeat: renew every item this worker holds, and record in :class:`Leases`
        the new lease, or that an item was lost to another worker. A store outage is logged:
        the leases then run out on their own, and writes under them fail closed."""
        asked = self._leases.held()
        if not asked:
            return
        until = self._clock.now() + self._lease
        try:
            kept = await self._store.renew_work(asked, self.worker_id, until)
        except Exception:
            logger.warning("could not renew the leases of running work", exc_info=True)
            return
        self._leases.renewed(asked, kept, until)
        if len(kept) < len(asked):
            logger.warning("%d work item(s) were lost to another worker", len(asked) - len(kept))

    async def run_until_idle(self, *, max_rounds: int = 1000) -> int:
        """Run batches until none is due (for tests and one-shot jobs); returns items run."""
        total = 0
        for _ in range(max_rounds):
            claimed = await self.run_once()
            if not claimed:
                return total
            total += claimed
        return total

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Work until ``stop`` is set (or the task is cancelled). A store outage is logged and
        waited out, never fatal: the work stays in the table.

        A pipeline, not batches: the worker holds up to ``batch`` claimed items, runs up to
        ``concurrency`` of them at once, and claims more as soon as it holds half a batch or
        less, so one slow item (a receiver taking its 15 s) never holds back the items claimed
        with it. Claiming half a batch at a time rather than an item per free slot keeps the
        claims (each one a write, sharing SQLite's one writer with the sends) few under load.

        A claim that came back short (work trickling in: sends under load, each with a
        report due 2 s later) is not followed by the next one before ``gather_interval``,
        even when its items are done: the items due meanwhile are claimed, and applied,
        together (a batch handler's one transaction), instead of a claim per few items.
        """
        stop = stop or asyncio.Event()
        tasks: set[asyncio.Task[None]] = set()
        sizes: dict[asyncio.Task[None], int] = {}  # items per task (a batch holds several)

        def ended(task: asyncio.Task[None]) -> None:
            tasks.discard(task)
            sizes.pop(task, None)

        heartbeat = asyncio.create_task(self._heartbeat(forever=True))
        stopping = asyncio.create_task(stop.wait())
        half = max(1, self._batch // 2)
        more_due = True  # the last claim came back full: claim again as soon as there is room
        next_look = 0.0  # otherwise not before this loop time (the idle interval)
        gather_at = 0.0  # and, with nothing running, not before this one
        loop = asyncio.get_running_loop()
        try:
            while not stop.is_set():
                free = self._batch - sum(sizes.values())
                look_at = next_look if tasks else gather_at
                if free >= half and (more_due or loop.time() >= look_at):
                    asked = free
                    try:
                        items = await self._store.claim_due_work(
                            now=self._clock.now(),
                            worker_id=self.worker_id,
                            lease=self._lease,
                            limit=asked,
                        )
                    except Exception:
                        logger.exception("the worker could not claim due work; retrying")
                        items = []
                    for run, size in self._runs(self._take(items)):
                        task = asyncio.create_task(run)
                        tasks.add(task)
                        sizes[task] = size
                        task.add_done_callback(ended)
                    more_due = len(items) == asked
                    if not more_due:
                        now = loop.time()
                        next_look = now + self._idle_interval
                        gather_at = now + (self._gather if items else self._idle_interval)
                    if more_due and self._batch - sum(sizes.values()) >= half:
                        await asyncio.sleep(0)  # let the new items start, then claim again
                        continue
                look_at = next_look if tasks else gather_at
                timeout = None if more_due else max(0.0, look_at - loop.time())
                await asyncio.wait(
                    {*tasks, stopping}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
                )
        finally:
            stopping.cancel()
            try:
                # Stopping lets the running items end: abandoned, their leases would hold
                # them for a whole lease. Cancelling run() cancels them with it.
                await asyncio.gather(*tasks)
            finally:
                for task in list(tasks):
                    task.cancel()
                heartbeat.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await heartbeat

    async def _run_item(self, item: WorkItem) -> None:
        # Each item runs in a task of its own, so the context variable is the item's alone.
        _CURRENT_LEASE.set(Lease(item.id, self._leases))
        _bind_item_log_context(item)
        carrier = item.payload.get(TRACE_KEY)
        try:
            with span(
                f"work {item.kind}",
                kind="consumer",
                attributes={
                    "messaging.operation.type": "process",
                    "unified_messaging.work.kind": item.kind,
                },
                parent=carrier if isinstance(carrier, dict) else None,
            ):
                await self._run_one(item)
        finally:
            self._leases.release(item.id)

    async def _run_batch(self, kind: str, items: list[WorkItem]) -> None:
        """Run ``items`` (of ``kind``) through its batch handler, then the items it left one
        at a time. Tracing: the batch is one span of its own; each item left keeps its trace."""
        left: Sequence[WorkItem] = items
        try:
            with span(
                f"work {kind} batch",
                kind="consumer",
                attributes={
                    "messaging.operation.type": "process",
                    "unified_messaging.work.kind": kind,
                    "messaging.batch.message_count": len(items),
                },
            ):
                async with self._limit:
                    left = await self._batch_handlers[kind](Batch(tuple(items), self._leases))
        except Exception:
            logger.exception("a batch of %d %s work items failed; running them one by one",
                             len(items), kind)  # fmt: skip
        except BaseException:
            for item in items:  # cancelled: nothing holds them here any more
                self._leases.release(item.id)
            raise
        leaving = {item.id for item in left}
        for item in items:
            if item.id not in leaving:
                self._leases.release(item.id)
        await asyncio.gather(*(self._run_item(item) for item in left))

    async def _run_one(self, item: WorkItem) -> None:
        handler = self._handlers.get(item.kind)
        async with self._limit:
            if handler is None:
                logger.warning("no handler for work of kind %r (item %s)", item.kind, item.id)
                again: datetime | None = self._clock.now() + _UNKNOWN_KIND_DELAY
            else:
                try:
                    again = await handler(item)
                except LeaseLost:
                    # Another worker has the item now: it finishes it, we write nothing.
                    logger.warning("work item %s (%s): lease lost; left to its new holder",
                                   item.id, item.kind)  # fmt: skip
                    return
                except Exception:
                    logger.exception("work item %s (%s) failed; will retry", item.id, item.kind)
                    again = self._clock.now() + error_backoff(item.attempts)
            if again is None and self._leases.ended(item.id):
                return  # the handler's last write deleted the item (Lease.ended)
            try:
                if again is None:
                    await self._store.complete_work(item.id, self.worker_id)
                else:
                    await self._store.reschedule_work(item.id, self.worker_id, again)
            except Exception:
                # The lease runs out and the item is claimed again: at least once.
                logger.exception("could not record the end of work item %s", item.id)


def _bind_item_log_context(item: WorkItem) -> None:
    """What the item's log lines are about: its message, workspace and provider, where the
    item names them (a webhook delivery's ``ref`` is the delivery, not a message)."""
    payload = item.payload

    def text(name: str) -> str | None:
        value = payload.get(name)
        return value if isinstance(value, str) else None

    job_id = item.ref if item.ref.startswith("msg_") else text("job_id")
    bind_log_context(job_id=job_id, workspace_id=text("workspace_id"), provider=text("provider"))
