"""Group commit: the SQL store's one writer per process, which commits for everyone waiting.

Every hot-path write of the SQL store is a function of a connection (``Operation``). Callers
hand theirs to :class:`GroupWriter`; a writer task takes everything pending, runs it in
**one** transaction and commits once, then answers each caller with its own result. On
SQLite that is one fsync for the batch instead of one per request, and one holder of the
database's write lock instead of pooled connections fighting over it with the busy handler's
sleep-and-retry. On PostgreSQL it saves a ``BEGIN``/``COMMIT`` round trip and a WAL flush per
request.

The rules that keep it honest:

- Nobody is answered before the transaction holding their rows has committed.
- Each caller gets its own result and its own error. If an operation raises, the batch is
  rolled back and every operation of it runs again in a transaction of its own, so one
  caller's error (a unique violation, a missing row) never becomes another's. Operations
  must therefore touch nothing but the connection: they may run twice, only one run commits.
- If the ``COMMIT`` itself fails, nobody can know whether it happened, so nothing runs
  again: every caller of the batch gets the error (``StorageUnavailable`` upstream).
- SQLite's ``SQLITE_BUSY`` before anything was written (another process holds the write
  lock past the busy time-out while taking ``BEGIN IMMEDIATE``) is retried: nothing happened.

The writer task lives only while there is work, so an idle store holds no task and a closed
event loop never finds one pending.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from sqlalchemy import exc as sa_exc
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

__all__ = ["GroupWriter", "Operation"]

T = TypeVar("T")
Operation = Callable[[AsyncConnection], Awaitable[T]]

#: Operations per transaction: enough to share one fsync among every request in flight,
#: few enough that one batch never holds the lock for long.
DEFAULT_MAX_BATCH: Final = 256
#: How often a ``BEGIN`` that found the database busy (another process) is tried again.
_BUSY_ROUNDS: Final = 5


@dataclass(slots=True)
class _Pending:
    operation: Operation[Any]
    future: asyncio.Future[Any] = field(repr=False)


class _CommitFailed(Exception):
    """The ``COMMIT`` raised: the batch's outcome is unknown, so it is never re-run."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class _OperationFailed(Exception):
    """An operation raised: the batch was rolled back, nothing of it happened."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class GroupWriter:
    """Runs write operations in shared transactions on ``engine``, one batch at a time."""

    def __init__(self, engine: AsyncEngine, *, max_batch: int = DEFAULT_MAX_BATCH) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self._engine = engine
        self._max_batch = max_batch
        self._queue: deque[_Pending] = deque()
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Batches committed and operations run: read by tests and benchmarks.
        self.batches = 0
        self.operations = 0

    async def run(self, operation: Operation[T]) -> T:
        """Run ``operation`` in the next shared transaction; its result once committed."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.append(_Pending(operation, future))
        if self._task is None or self._task.done() or self._loop is not loop:
            self._loop = loop
            self._task = loop.create_task(self._drain(), name="unified-messaging sql writer")
        return await future

    async def wait_idle(self) -> None:
        """Return when nothing is queued or running (for ``close``)."""
        task = self._task
        if task is not None and not task.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(task)

    async def _drain(self) -> None:
        while self._queue:
            batch = [self._queue.popleft() for _ in range(min(self._max_batch, len(self._queue)))]
            # A caller that was cancelled while waiting needs no answer, but its write was
            # promised at least as far as "it may have happened": it still runs.
            try:
                await self._run_batch(batch)
            except BaseException as exc:  # the writer must never leave a caller waiting
                for pending in batch:
                    _answer_error(pending, exc)
                if not isinstance(exc, Exception):
                    raise

    async def _run_batch(self, batch: list[_Pending]) -> None:
        try:
            results = await self._in_one_transaction([p.operation for p in batch])
        except (_CommitFailed, _OperationFailed) as failed:
            if isinstance(failed, _CommitFailed) or len(batch) == 1:
                for pending in batch:
                    _answer_error(pending, failed.cause)
                return
            # Someone's operation failed and took the batch down with it: everyone again,
            # each alone, so each gets the outcome of their own operation.
            for pending in batch:
                await self._run_alone(pending)
            return
        except Exception as exc:
            # No transaction at all (the database is unreachable): the same answer for all,
            # without trying to connect once per caller.
            for pending in batch:
                _answer_error(pending, exc)
            return
        self.batches += 1
        self.operations += len(batch)
        for pending, result in zip(batch, results, strict=True):
            if not pending.future.done():
                pending.future.set_result(result)

    async def _run_alone(self, pending: _Pending) -> None:
        try:
            (result,) = await self._in_one_transaction([pending.operation])
        except (_CommitFailed, _OperationFailed) as failed:
            _answer_error(pending, failed.cause)
        except Exception as exc:
            _answer_error(pending, exc)
        else:
            self.batches += 1
            self.operations += 1
            if not pending.future.done():
                pending.future.set_result(result)

    async def _in_one_transaction(self, operations: list[Operation[Any]]) -> list[Any]:
        for round_ in range(_BUSY_ROUNDS):
            async with self._engine.connect() as conn:
                try:
                    transaction = await conn.begin()
                except sa_exc.OperationalError as exc:
                    if round_ + 1 < _BUSY_ROUNDS and _is_busy(exc):
                        continue  # nothing was written: safe to try again
                    raise
                try:
                    results = [await operation(conn) for operation in operations]
                except Exception as exc:
                    await _rollback(transaction)
                    raise _OperationFailed(exc) from exc
                except BaseException:
                    await _rollback(transaction)
                    raise
                try:
                    await transaction.commit()
                except Exception as exc:
                    raise _CommitFailed(exc) from exc
                return results
        raise AssertionError("unreachable")  # pragma: no cover


async def _rollback(transaction: Any) -> None:
    # A rollback on a connection that just died fails too; the operation's error is the news.
    with contextlib.suppress(Exception):
        await transaction.rollback()


def _answer_error(pending: _Pending, exc: BaseException) -> None:
    if not pending.future.done():
        pending.future.set_exception(exc)


def _is_busy(exc: sa_exc.OperationalError) -> bool:
    name = getattr(exc.orig, "sqlite_errorname", "")
    return isinstance(name, str) and name.startswith("SQLITE_BUSY")
