"""The send phase of a submit's write-ahead rows while our own send rate holds them (D27).

A send stores its rows ``accepted`` before any provider is called (D22): a process that dies
then leaves rows a provider may or may not have, which its submit check ends ``unknown``
(``SUBMIT_INTERRUPTED``). But a send that waits for its slots has not handed those jobs to
anyone yet; killed during the wait, it would leave them looking handed over. So before a
wait the rows go ``waiting``, and before each group goes out after it they come back to
``accepted``, each move a compare-and-set on the stored phase (``Store.move_send_phase``).
The submit check hands ``waiting`` rows to the worker (``queued``: nothing reached a
provider, so sending them once later is safe); a group it took over is not sent by the
waking send. Rows a move failed to store stay as they were: ``accepted`` is always safe
(at worst ``unknown``), and a row that might still read ``waiting`` is never sent here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from .._domain import MessageRecord
from .._errors import StorageUnavailable
from .._routing.dispatch import Job
from .._types import SendPhase
from ..store.base import Store

__all__ = ["WriteAheadHold"]


class WriteAheadHold:
    """:class:`~.._routing.send_pacing.Hold` over one send's write-ahead ``records`` (of one
    workspace and mode). :meth:`latest` gives a record as its phase moves left it (its
    version included, so the send's outcome still replaces it by compare-and-set)."""

    def __init__(self, store: Store, records: Sequence[MessageRecord]) -> None:
        self._store = store
        self._records = {record.job_id: record for record in records}
        self._held: set[str] = set()

    def latest(self, record: MessageRecord) -> MessageRecord:
        return self._records.get(record.job_id, record)

    async def waiting(self, jobs: Sequence[Job]) -> None:
        moved = await self._move([job.job_id for job in jobs], "accepted", "waiting")
        self._held.update(moved)

    async def resuming(self, jobs: Sequence[Job]) -> Sequence[Job]:
        held = [job.job_id for job in jobs if job.job_id in self._held]
        back = set(await self._move(held, "waiting", "accepted")) if held else set()
        self._held.difference_update(held)
        # Never held (still ``accepted``), or taken back now: ours to send.
        return [job for job in jobs if job.job_id not in held or job.job_id in back]

    async def _move(self, job_ids: list[str], source: SendPhase, target: SendPhase) -> list[str]:
        first = self._records.get(job_ids[0]) if job_ids else None
        if first is None:
            return []
        try:
            moved = await self._store.move_send_phase(
                first.workspace_id, first.livemode, job_ids, source=source, target=target
            )
        except StorageUnavailable:
            return []
        for job_id in moved:
            record = self._records[job_id]
            self._records[job_id] = replace(record, phase=target, version=record.version + 1)
        return moved
