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
- SQLite: writes queued while the writer waited for its turn on the file (another process
  held the write lock) join the batch once the turn is ours (``Late``): the wait costs
  nothing more, and one commit serves them all instead of one more commit each.
- SQLite's ``SQLITE_BUSY`` before anything was written (another process holds the write
  lock past the busy time-out while taking ``BEGIN IMMEDIATE``) is retried: nothing happened.
- PostgreSQL's deadlock (``40P01``) and serialization failure (``40001``) roll the whole
  transaction back, so nothing happened either: the operation runs again (alone, after a
  few milliseconds), as PostgreSQL's manual asks, rather than reach its caller as a 503.
  Parallel batches lock rows (a recipient's flood-guard lock, a quota row) in the order of
  their callers, so two of them can wait on each other under load.

Operations are plain (synchronous) functions of a SQLAlchemy ``Connection``. On SQLite a
whole batch runs in one hop to the writer's own thread, on the ``sqlite3`` driver; on
PostgreSQL it runs through ``AsyncConnection.run_sync`` on asyncpg. Either way the batch
costs one thread or network round trip per statement at most, never several per statement.

The writer task lives only while there is work, so an idle store holds no task and a closed
event loop never finds one pending.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

    from ._sql_write_lock import WriteLock

__all__ = ["AsyncTransactions", "GroupWriter", "Operation", "ThreadTransactions", "Transactions"]

T = TypeVar("T")
Operation = Callable[[sa.Connection], T]
#: Called on the writer's thread once it may write: the operations queued since the batch
#: was taken, to run in the same transaction after it (possibly none).
Late = Callable[[], Sequence[Operation[Any]]]

#: Operations per transaction: enough to share one fsync among every request in flight,
#: few enough that one batch never holds the lock for long.
DEFAULT_MAX_BATCH: Final = 256
#: How often a ``BEGIN`` that found the database busy (another process) is tried again.
_BUSY_ROUNDS: Final = 5
#: How often an operation whose transaction PostgreSQL aborted (deadlock, serialization
#: failure) runs again, and the longest pause before each (random, so two victims of one
#: deadlock do not meet again).
_ABORTED_ROUNDS: Final = 5
_ABORTED_PAUSE: Final = 0.01
#: SQLSTATEs of a transaction the server rolled back whole: safe to run again.
_ABORTED_STATES: Final = frozenset({"40P01", "40001"})


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


class _Busy(Exception):
    """``BEGIN`` found the database locked by another process: nothing was written."""


class Transactions(Protocol):
    """Protocol: runs operations in one transaction on some connection, all or none."""

    async def run(
        self, operations: Sequence[Operation[Any]], late: Late | None = None
    ) -> list[Any]:
        """The results of ``operations`` and then of those ``late`` added, in order."""
        ...

    def close(self) -> None: ...


class ThreadTransactions:
    """SQLite: each transaction runs in one hop to a thread of its own, on ``engine``,
    holding ``lock`` (the turn among the writers of every process on the file) if given."""

    def __init__(self, engine: sa.Engine, lock: WriteLock | None = None) -> None:
        self._engine = engine
        self._lock = lock
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="unified-messaging-writer")

    async def run(
        self, operations: Sequence[Operation[Any]], late: Late | None = None
    ) -> list[Any]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, self._run, operations, late)

    def _run(self, operations: Sequence[Operation[Any]], late: Late | None) -> list[Any]:
        if self._lock is None:
            return self._run_unlocked(operations, late)
        with self._lock:
            return self._run_unlocked(operations, late)

    def _run_unlocked(self, operations: Sequence[Operation[Any]], late: Late | None) -> list[Any]:
        if late is not None:
            # Our turn on the file: what was queued while we waited for it (and for this
            # thread) shares the commit.
            operations = [*operations, *late()]
        for round_ in range(_BUSY_ROUNDS):
            with self._engine.connect() as conn:
                try:
                    return _in_transaction(conn, operations)
                except _Busy as busy:
                    if round_ + 1 == _BUSY_ROUNDS:
                        raise busy.__cause__ or busy from None
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        if self._lock is not None:
            try:
                # On the writer thread, after its last transaction (never under one).
                self._thread.submit(self._lock.close)
            except RuntimeError:
                # The interpreter is exiting (a close from atexit): concurrent.futures stopped
                # every executor before atexit ran, each thread after its last queued
                # transaction, so none holds the lock now and this thread may close it.
                self._lock.close()
        self._thread.shutdown(wait=False)


class AsyncTransactions:
    """PostgreSQL: each transaction runs on a pooled asyncpg connection, via ``run_sync``."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    async def run(
        self, operations: Sequence[Operation[Any]], late: Late | None = None
    ) -> list[Any]:
        async with self._engine.connect() as conn:
            results: list[Any] = await conn.run_sync(_in_transaction, operations)
            return results

    def close(self) -> None:
        return None


def _in_transaction(conn: sa.Connection, operations: Sequence[Operation[Any]]) -> list[Any]:
    try:
        transaction = conn.begin()
    except sa_exc.OperationalError as exc:
        if _is_busy(exc):
            raise _Busy from exc
        raise
    try:
        results = [operation(conn) for operation in operations]
    except Exception as exc:
        _rollback(transaction)
        raise _OperationFailed(exc) from exc
    except BaseException:
        _rollback(transaction)
        raise
    try:
        transaction.commit()
    except Exception as exc:
        raise _CommitFailed(exc) from exc
    return results


@dataclass(slots=True)
class _Pending:
    operation: Operation[Any]
    future: asyncio.Future[Any] = field(repr=False)


class _Joining:
    """Lets the writer's thread move queued writes into a running ``batch`` (its ``Late``)
    until :meth:`close`; after that the batch is the drainer's alone to answer.

    The thread pops from the queue while the loop appends to it (``deque`` does both
    atomically); the lock keeps a take and the close apart, so no write is taken after its
    batch was answered."""

    __slots__ = ("_batch", "_guard", "_max_batch", "_open", "_queue")

    def __init__(self, queue: deque[_Pending], batch: list[_Pending], max_batch: int) -> None:
        self._queue = queue
        self._batch = batch
        self._max_batch = max_batch
        self._guard = threading.Lock()
        self._open = True

    def take(self) -> list[Operation[Any]]:
        with self._guard:
            if not self._open:
                return []
            taken: list[_Pending] = []
            while len(self._batch) + len(taken) < self._max_batch:
                try:
                    taken.append(self._queue.popleft())
                except IndexError:
                    break
            self._batch.extend(taken)
            return [pending.operation for pending in taken]

    def close(self) -> None:
        with self._guard:
            self._open = False


class GroupWriter:
    """Runs write operations in shared transactions: ``parallel`` batches at a time at most
    (SQLite: one, it has one write lock; PostgreSQL: a few, each on its own connection, so
    one batch's round trips to the server overlap another's)."""

    def __init__(
        self,
        transactions: Transactions,
        *,
        max_batch: int = DEFAULT_MAX_BATCH,
        parallel: int = 1,
    ) -> None:
        if max_batch < 1 or parallel < 1:
            raise ValueError("max_batch and parallel must be at least 1")
        self._transactions = transactions
        self._max_batch = max_batch
        self._parallel = parallel
        self._queue: deque[_Pending] = deque()
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Batches committed and operations run: read by tests and benchmarks.
        self.batches = 0
        self.operations = 0

    @property
    def queued(self) -> int:
        """Writes waiting for a batch (not those of a batch under way)."""
        return len(self._queue)

    async def run(self, operation: Operation[T]) -> T:
        """Run ``operation`` in the next shared transaction; its result once committed."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.append(_Pending(operation, future))
        if self._loop is not loop:
            self._loop, self._tasks = loop, set()
        # Pruned here, not by a done callback: that runs a loop turn late, and a write queued
        # in between would find every drainer "running" and wait forever.
        self._tasks = {task for task in self._tasks if not task.done()}
        if len(self._tasks) < self._parallel:
            task = loop.create_task(self._drain(), name="unified-messaging sql writer")
            self._tasks.add(task)
        return await future

    async def aclose(self) -> None:
        """Wait for what is queued or running, then let the transactions go."""
        running = [task for task in self._tasks if not task.done()]
        if running:
            with contextlib.suppress(Exception):
                await asyncio.shield(asyncio.gather(*running, return_exceptions=True))
        self._transactions.close()

    async def _drain(self) -> None:
        while self._queue:
            batch = [self._queue.popleft() for _ in range(min(self._max_batch, len(self._queue)))]
            # A caller that was cancelled while waiting needs no answer, but its write was
            # promised at least as far as "it may have happened": it still runs.
            joining = _Joining(self._queue, batch, self._max_batch)
            try:
                await self._run_batch(batch, joining)
            except BaseException as exc:  # the writer must never leave a caller waiting
                joining.close()
                for pending in batch:
                    _answer_error(pending, exc)
                if not isinstance(exc, Exception):
                    raise

    async def _run_batch(self, batch: list[_Pending], joining: _Joining) -> None:
        try:
            results = await self._transactions.run([p.operation for p in batch], joining.take)
        except (_CommitFailed, _OperationFailed) as failed:
            joining.close()
            alone = len(batch) == 1 and not _rolled_back_whole(failed.cause)
            if isinstance(failed, _CommitFailed) or alone:
                for pending in batch:
                    _answer_error(pending, failed.cause)
                return
            # Someone's operation failed and took the batch down with it (or the server
            # rolled the batch back: a deadlock): everyone again, each alone, so each gets
            # the outcome of their own operation.
            for pending in batch:
                await self._run_alone(pending)
            return
        except Exception as exc:
            # No transaction at all (the database is unreachable): the same answer for all,
            # without trying to connect once per caller.
            joining.close()
            for pending in batch:
                _answer_error(pending, exc)
            return
        joining.close()
        self.batches += 1
        self.operations += len(batch)
        for pending, result in zip(batch, results, strict=True):
            if not pending.future.done():
                pending.future.set_result(result)

    async def _run_alone(self, pending: _Pending) -> None:
        for round_ in range(_ABORTED_ROUNDS):
            try:
                (result,) = await self._transactions.run([pending.operation])
            except _OperationFailed as failed:
                if _rolled_back_whole(failed.cause) and round_ + 1 < _ABORTED_ROUNDS:
                    await asyncio.sleep(random.uniform(0, _ABORTED_PAUSE))  # noqa: S311
                    continue
                _answer_error(pending, failed.cause)
            except _CommitFailed as failed:
                _answer_error(pending, failed.cause)
            except Exception as exc:
                _answer_error(pending, exc)
            else:
                self.batches += 1
                self.operations += 1
                if not pending.future.done():
                    pending.future.set_result(result)
            return


def _rollback(transaction: sa.RootTransaction) -> None:
    # A rollback on a connection that just died fails too; the operation's error is the news.
    with contextlib.suppress(Exception):
        transaction.rollback()


def _answer_error(pending: _Pending, exc: BaseException) -> None:
    if not pending.future.done():
        pending.future.set_exception(exc)


def _rolled_back_whole(exc: BaseException) -> bool:
    """Did the server roll the whole transaction back (PostgreSQL: deadlock, serialization
    failure), so that running it again is safe and likely to succeed?"""
    orig = getattr(exc, "orig", None)
    return getattr(orig, "sqlstate", None) in _ABORTED_STATES


def _is_busy(exc: sa_exc.OperationalError) -> bool:
    name = getattr(exc.orig, "sqlite_errorname", "")
    return isinstance(name, str) and name.startswith("SQLITE_BUSY")
