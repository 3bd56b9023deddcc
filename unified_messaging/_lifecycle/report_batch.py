"""The simulated reports of test sends, applied many at a time.

Every test send queues a ``dlr_simulated`` item; under load the worker claims dozens at once.
One at a time, each cost a read of its message, a compare-and-set and a completion of its
item (two transactions). Here a batch of them costs one read of all their messages
(``Store.get_messages``) and one transaction (``Store.replace_messages``) that stores every
change with the work it starts (events, fallbacks) and deletes the items, with the guarantees
of the one-at-a-time path:

- **compare-and-set per message**: a message another writer changed meanwhile (a cancel, a
  report pushed for it) is read again and decided again in the next round; after
  ``CAS_TRIES`` rounds its item is left to the one-at-a-time handler (which backs off).
- **leases**: an item whose lease this worker lost is not written for (checked before, and
  by the store in the transaction: only items ``worker_id`` still holds are deleted, and a
  change is stored only with the deletion of its item). Its new holder applies it.
- **at least once**: a crash before the commit leaves every item to be claimed again; the
  report is idempotent (D10), so applying it twice changes nothing the second time.
- **isolation**: an item that cannot be read or decided (a bad payload, a bug) is left to the
  one-at-a-time handler, which retries it with backoff; its siblings are stored all the same.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Final

from .._clock import Clock
from .._domain import Connection, MessageRecord
from .._observability.metrics import Metrics, record_reports, record_settled
from .._observability.tracing import tracing_enabled
from .._text import storable_report
from ..providers.base import ProviderReport
from ..providers.simulator import simulated_report
from ..store.base import MessageChange, Store, WorkItem
from .rules import Transition, apply_report
from .worker import Batch

__all__ = ["CAS_TRIES", "apply_simulated"]

logger = logging.getLogger("unified_messaging.lifecycle")

#: Rounds of read-decide-write before a contended item is left to its own handler.
CAS_TRIES: Final = 16

ChangeOf = Callable[[MessageRecord, Transition], Awaitable[MessageChange]]


@dataclass(frozen=True, slots=True)
class _Report:
    item: WorkItem
    workspace_id: str
    report: ProviderReport


async def apply_simulated(
    batch: Batch, *, store: Store, clock: Clock, metrics: Metrics, change_of: ChangeOf
) -> list[WorkItem]:
    """Apply the simulated reports of ``batch``; returns the items left to the kind's
    one-at-a-time handler. ``change_of`` makes a transition's stored change (its events,
    fallback and closed refs), as the one-at-a-time path does."""
    if tracing_enabled():
        # Each report's span belongs to the trace of the send it reports on: one by one.
        return list(batch.items)
    left: list[WorkItem] = []
    done: list[str] = []  # finished with nothing to store: the connection is gone
    todo: list[_Report] = []
    connections: dict[str, Connection | None] = {}
    for item in batch.items:
        try:
            found = await _read(item, store, connections)
        except Exception:
            logger.exception("simulated report %s could not be read; tried alone", item.id)
            left.append(item)
            continue
        if found is None:
            left.append(item)  # queued before its item named its workspace: looks its ref up
        elif isinstance(found, str):
            done.append(found)
        else:
            record_reports(metrics, found[1], [found[0].report], livemode=False)
            todo.append(found[0])
    for _ in range(CAS_TRIES):
        if not todo and not done:
            break
        todo = await _round(batch, todo, done, store, clock, metrics, change_of, left)
        done = []
    if todo:
        logger.warning("%d simulated report(s) kept meeting changed messages; tried alone",
                       len(todo))  # fmt: skip
        left.extend(report.item for report in todo)
    return left


async def _read(
    item: WorkItem, store: Store, connections: dict[str, Connection | None]
) -> tuple[_Report, str] | str | None:
    """The item's report and its connection's provider; the item's id if its connection is
    gone (nothing to do); ``None`` if the item does not name its workspace."""
    payload = item.payload
    workspace_id = payload.get("workspace_id")
    if not isinstance(workspace_id, str):
        return None
    connection_id = str(payload["connection_id"])
    if connection_id not in connections:
        connections[connection_id] = await store.get_connection(connection_id)
    connection = connections[connection_id]
    if connection is None:
        return item.id
    received = simulated_report(
        str(payload["provider_message_id"]), str(payload["status"]),
        occurred_at=item.due_at, to=str(payload.get("to") or "") or None,
    )  # fmt: skip
    report = storable_report(received)
    if report is None:
        return item.id
    return _Report(item, workspace_id, report), connection.provider


async def _round(
    batch: Batch,
    todo: list[_Report],
    done: list[str],
    store: Store,
    clock: Clock,
    metrics: Metrics,
    change_of: ChangeOf,
    left: list[WorkItem],
) -> list[_Report]:
    """One read and one write for ``todo`` (one report per message: a second report for the
    same message waits for the next round); returns the reports to decide again."""
    now_todo: dict[str, _Report] = {}
    later: list[_Report] = []
    for report in todo:
        if not batch.holds(report.item.id):
            continue  # lost to another worker: it applies the report, we write nothing
        if report.item.ref in now_todo:
            later.append(report)
        else:
            now_todo[report.item.ref] = report
    done = [item_id for item_id in done if batch.holds(item_id)]
    keys = [(r.workspace_id, False, job_id) for job_id, r in now_todo.items()]
    records = await store.get_messages(keys) if keys else {}
    changes: list[MessageChange] = []
    before: dict[str, MessageRecord] = {}
    now = clock.now()
    for job_id, report in now_todo.items():
        record = records.get(job_id)
        try:
            change = await _decide(record, report, now, change_of)
        except Exception:
            logger.exception("simulated report %s failed; tried alone", report.item.id)
            left.append(report.item)
            continue
        if change is None:
            done.append(report.item.id)  # the message is gone, or the report changes nothing
            continue
        assert record is not None
        before[job_id] = record
        changes.append(replace(change, done=report.item.id))
    if not changes and not done:
        return later
    written = await store.replace_messages(changes, worker_id=batch.worker_id, done=done)
    moved, lost = set(written.moved), set(written.lost)
    for change in changes:
        job_id = change.record.job_id
        if job_id not in moved and change.done not in lost:
            record_settled(metrics, before[job_id], change.record)
    if lost:
        logger.warning("%d simulated report item(s) were lost to another worker", len(lost))
    return [now_todo[job_id] for job_id in sorted(moved)] + later


async def _decide(
    record: MessageRecord | None, report: _Report, now: datetime, change_of: ChangeOf
) -> MessageChange | None:
    if record is None:
        return None
    transition = apply_report(record, report.report, now=now)
    if not transition.changed:
        return None
    return await change_of(record, transition)
