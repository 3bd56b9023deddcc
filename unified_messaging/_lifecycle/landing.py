"""Sends whose provider has answered and whose outcome this process is storing now.

A gateway as fast as Kannel reports on a message before the send has stored the provider's
answer: its ``sendsms`` answer and its delivery report (to the ``dlr-url``, naming the id we
minted) leave it a moment apart, and the outcome waits for its group commit. A report that
finds no ref is kept as an early report (:mod:`.early_reports`), a work item that the worker
applies later: three transactions more than the report itself. On a live Kannel path that
was nearly every final report.

So a send marks its jobs as *landing* while it stores their outcome (:meth:`Landings.hold`),
and a report that names one of them by its minted id waits for that write, then reads its
ref again and applies as usual. The wait is as long as the write (bounded by the send's own
outcome retry), and only a report this process can pair with a send of its own waits: one
taken by another process, or sent while the provider call is still under way, is kept as an
early report, as before. Nothing is less durable: the report is answered only once applied
or kept, and a crash before the answer means the gateway sends it again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

__all__ = ["Landings"]


class Landings:
    """The jobs of this process whose send is storing its outcome now."""

    __slots__ = ("_landing", "_waiting")

    def __init__(self) -> None:
        self._landing: dict[str, asyncio.Event] = {}
        self._waiting = 0

    @contextmanager
    def hold(self, job_ids: Iterable[str]) -> Iterator[None]:
        """Mark ``job_ids`` landing until the block ends (stored, or given up: either way a
        waiting report reads the store again)."""
        mine = {job_id: asyncio.Event() for job_id in job_ids if job_id not in self._landing}
        self._landing.update(mine)
        try:
            yield
        finally:
            for job_id, landed in mine.items():
                del self._landing[job_id]
                landed.set()

    async def wait(self, job_id: str) -> bool:
        """Wait until ``job_id``'s outcome is stored, if it is landing; whether it was."""
        landed = self._landing.get(job_id)
        if landed is None:
            return False
        self._waiting += 1
        try:
            await landed.wait()
        finally:
            self._waiting -= 1
        return True

    @property
    def waiting(self) -> int:
        """Reports waiting for a landing now (for tests that order a report's arrival)."""
        return self._waiting
