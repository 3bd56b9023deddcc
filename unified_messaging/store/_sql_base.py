"""The SQL store's foundation: configuration, lifecycle and the transaction helpers.

The table methods (``_sql_core``, ``_sql_work``) only ever touch the database through
the query helpers (``_all``, ``_first``, ``_column``, ``_scalar``, and ``_hot_query`` for
the send path's reads), :meth:`SqlBase._write` and :meth:`SqlBase._transact`, which pick
the right kind of transaction for the dialect and turn driver errors into the library's
errors. The send path's statements are :class:`~._sql_hot.Hot` (run on the driver's cursor).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Result, RowMapping
from sqlalchemy.util import greenlet_spawn

from . import migrations
from ._sql_engine import (
    Dialect,
    EngineOptions,
    Engines,
    Upsert,
    dialect_insert,
    make_engines,
    mask_url,
    normalize_url,
    storage_errors,
)
from ._sql_hot import Hot, write_all
from ._sql_rows import provider_ref_row, work_row
from ._sql_writer import (
    AsyncTransactions,
    GroupWriter,
    Operation,
    ThreadTransactions,
    Transactions,
)
from ._tables import due_work, provider_refs, quota, workspaces
from .base import ProviderRef, WorkItem

if TYPE_CHECKING:
    # Only made when first used on SQLite (see Engines): with it comes the ORM.
    from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ["SqlBase"]

T = TypeVar("T")

#: The transaction of the ``atomic()`` block this task is in, and the store it belongs to:
#: every query and write of that store in the task joins it (a context variable, so two
#: tasks' blocks never share one, and a task's block never leaks into another store).
_joined: ContextVar[tuple[SqlBase, AsyncConnection] | None] = ContextVar(
    "um_sql_atomic", default=None
)

#: PostgreSQL: group commits in flight at once, each on its own pooled connection.
_POSTGRES_WRITERS = 4
#: Cached records at most (keys, workspaces, connections...): a bound, not a tuning knob.
_CACHE_ENTRIES = 10_000


class SqlBase:
    def __init__(
        self,
        url: str,
        *,
        busy_timeout: float = 5.0,
        connect_timeout: float = 10.0,
        pool_size: int = 20,
        max_overflow: int = 10,
        connect_args: Mapping[str, object] | None = None,
        migrate: bool = True,
        cache_ttl: float = 0.0,
    ) -> None:
        """Configure the store; nothing connects before the first call.

        ``busy_timeout`` (SQLite, seconds): how long a writer waits for the write lock.
        ``connect_timeout`` (PostgreSQL, seconds): how long to wait for a connection.
        ``connect_args``: extra driver connect arguments (asyncpg ``server_settings``...).
        ``migrate``: whether :meth:`open` upgrades the schema to the latest revision.
        ``cache_ttl`` (seconds): keep what every request reads and almost nothing changes
        (API keys, workspaces, connections, allowlists, templates, webhook endpoints) for
        this long. Changes made through this store are seen at once; changes made by other
        processes within ``cache_ttl``. ``0``, the default, caches nothing.
        """
        self._url, self._dialect = normalize_url(url)
        self._insert = dialect_insert(self._dialect)
        self._password = self._url.password
        self._options = EngineOptions(
            busy_timeout=busy_timeout,
            connect_timeout=connect_timeout,
            pool_size=pool_size,
            max_overflow=max_overflow,
            connect_args=dict(connect_args or {}),
        )
        self._migrate = migrate
        self._cache_ttl = cache_ttl
        self._cache: dict[tuple[str, ...], tuple[float, Any]] = {}
        self._statements: dict[str, Hot] = {}
        self._engines: Engines | None = None
        self._writer: GroupWriter | None = None
        self._opened = False
        self._open_lock: asyncio.Lock | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({mask_url(self._url)!r})"

    @property
    def url(self) -> str:
        """The database URL with its password masked."""
        return mask_url(self._url)

    @property
    def dialect(self) -> Dialect:
        return self._dialect

    async def open(self) -> None:
        """Connect and migrate to the latest revision (unless ``migrate=False``). Idempotent."""
        if self._open_lock is None:
            self._open_lock = asyncio.Lock()
        async with self._open_lock:
            if self._opened:
                return
            engines = self._get_engines()
            if self._migrate:
                await migrations.upgrade(engines, password=self._password)
            else:
                await self._scalar(sa.select(sa.literal(1)))
            self._opened = True

    async def close(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            await writer.aclose()
        engines, self._engines = self._engines, None
        self._opened = False
        if engines is not None:
            await engines.dispose()

    @asynccontextmanager
    async def atomic(self) -> AsyncIterator[None]:
        """One write transaction for the block (see ``Store.atomic``): every query,
        :meth:`_write` and :meth:`_transact` of this store in this task joins it, and it
        commits when the block ends without an error. A block inside a block joins it."""
        if self._joined_connection() is not None:
            yield
            return
        self._forget()
        try:
            with storage_errors(password=self._password):
                async with self._get_engines().write.begin() as connection:
                    token = _joined.set((self, connection))
                    try:
                        yield
                    finally:
                        _joined.reset(token)
        finally:
            # What was read or cached during the block may predate its commit.
            self._forget()

    def _joined_connection(self) -> AsyncConnection | None:
        joined = _joined.get()
        return joined[1] if joined is not None and joined[0] is self else None

    # -- helpers for the table methods

    def _get_engines(self) -> Engines:
        if self._engines is None:
            self._engines = make_engines(self._url, self._dialect, self._options)
        return self._engines

    async def _cached(
        self, key: tuple[str, ...], load: Callable[[], Awaitable[T]], *, misses: bool = True
    ) -> T:
        """``load()``, or what it gave less than ``cache_ttl`` ago (see ``__init__``).

        Values are records (frozen) or tuples, so a caller can never change a cached one.
        ``misses=False`` keeps no ``None`` (an unknown API key: guesses must not fill it).
        """
        if self._cache_ttl <= 0 or self._joined_connection() is not None:
            # Inside an atomic block a read may see writes not yet committed: never cache it.
            return await load()
        now = time.monotonic()
        hit = self._cache.get(key)
        if hit is not None and hit[0] > now:
            value: T = hit[1]
            return value
        value = await load()
        if value is None and not misses:
            return value
        if len(self._cache) >= _CACHE_ENTRIES:
            self._cache.clear()  # bounded: many workspaces churn it, none is starved
        self._cache[key] = (now + self._cache_ttl, value)
        return value

    def _forget(self) -> None:
        """Drop every cached record: something they come from changed here."""
        self._cache.clear()

    async def _all(self, statement: sa.Executable, **params: object) -> Sequence[RowMapping]:
        """Run one query and return its rows by column name.

        ``params`` fill in a prebuilt statement's bind parameters: hot-path queries are built
        once, which spares SQLAlchemy recomputing their cache key on every call.
        """
        return await self._query(statement, params, lambda result: result.mappings().all())

    async def _first(self, statement: sa.Executable, **params: object) -> RowMapping | None:
        return await self._query(statement, params, lambda result: result.mappings().first())

    async def _column(self, statement: sa.Executable, **params: object) -> Sequence[Any]:
        return await self._query(statement, params, lambda result: result.scalars().all())

    async def _scalar(self, statement: sa.Executable, **params: object) -> Any:
        return await self._query(statement, params, lambda result: result.scalar())

    async def _query(
        self,
        statement: sa.Executable,
        params: Mapping[str, object],
        take: Callable[[Result[Any]], T],
    ) -> T:
        """One read, outside any explicit transaction (one statement needs none).

        A read that finds its pooled connection dead without the pool having noticed (the
        server dropped it a moment ago) is tried once more: the pool has invalidated its old
        connections by then, and a read is safe to repeat. Writes are not repeated: a
        commit that may have happened must not happen twice.
        """
        joined = self._joined_connection()
        if joined is not None:
            with storage_errors(password=self._password):
                return take(await joined.execute(statement, dict(params)))
        engines = self._get_engines()
        with storage_errors(password=self._password):
            if engines.sync_read is not None:
                return self._sync_query(engines, statement, params, take)
            for attempt in range(2):
                try:
                    async with engines.read.connect() as connection:
                        return take(await connection.execute(statement, dict(params)))
                except sa_exc.DBAPIError as exc:
                    if attempt or not exc.connection_invalidated:
                        raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def _hot_query(self, hot: Hot, params: Mapping[str, object]) -> list[dict[str, Any]]:
        """:meth:`_query` for a :class:`Hot` read (the per-request reads by key): its rows
        as dicts, on the driver's cursor, with the same joining and the same one retry."""

        def rows(connection: sa.Connection) -> list[dict[str, Any]]:
            return hot.mappings(connection, params)

        joined = self._joined_connection()
        engines = self._get_engines()
        with storage_errors(password=self._password):
            if joined is not None:
                joined_rows: list[dict[str, Any]] = await joined.run_sync(rows)
                return joined_rows
            if engines.sync_read is not None:
                reader = engines.reader()
                try:
                    found_here = rows(reader)
                except BaseException:
                    engines.done_reading(reader, broken=True)
                    raise
                engines.done_reading(reader)
                return found_here
            # PostgreSQL: the read in one greenlet, on a connection kept from an earlier
            # read (Engines.take_reader), where the async connection's checkout, statement
            # and return took one greenlet each.

            def checked_out() -> list[dict[str, Any]]:
                connection = engines.take_reader()
                try:
                    found = rows(connection)
                except BaseException:
                    engines.give_back_reader(connection, broken=True)
                    raise
                engines.give_back_reader(connection)
                return found

            for attempt in range(2):
                try:
                    found: list[dict[str, Any]] = await greenlet_spawn(checked_out)
                    return found
                except sa_exc.DBAPIError as exc:
                    if attempt or not exc.connection_invalidated:
                        raise
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _sync_query(
        engines: Engines,
        statement: sa.Executable,
        params: Mapping[str, object],
        take: Callable[[Result[Any]], T],
    ) -> T:
        """SQLite: the query runs right here, on the event loop's thread.

        A read of a WAL database never waits for a writer (readers see the last commit) and
        is served from the page cache in tens of microseconds, less than one hop to a thread
        and back, and far less than aiosqlite's four or five hops per statement. Measured
        under 16 concurrent sends, hopping to reader threads cost a third of the throughput
        in waits for the GIL. Only writes, which wait for fsync, leave the loop.

        It runs on the thread's held read connection (``Engines.reader``); SQLAlchemy's
        transaction that ``execute`` began is ended at once (no ``BEGIN`` was sent: the
        rollback only resets its bookkeeping), so nothing spans two reads.
        """
        connection = engines.reader()
        try:
            found = take(connection.execute(statement, dict(params)))
            connection.rollback()
        except BaseException:
            engines.done_reading(connection, broken=True)
            raise
        engines.done_reading(connection)
        return found

    @asynccontextmanager
    async def _write(
        self,
        *,
        exists: str = "The object already exists.",
        missing: str = "A referenced object does not exist.",
    ) -> AsyncIterator[AsyncConnection]:
        """A write transaction of its own, committed when the block ends without an error:
        for administration (workspaces, keys, connections, templates), which is rare and
        need not share a commit. Hot paths use :meth:`_transact`.

        ``exists`` and ``missing`` are the messages of ``AlreadyExists`` and
        ``ResourceNotFound`` when a unique or foreign-key constraint stops the write.
        """
        self._forget()
        joined = self._joined_connection()
        try:
            with storage_errors(password=self._password, exists=exists, missing=missing):
                if joined is not None:
                    yield joined  # committed with the atomic block it joins
                    return
                async with self._get_engines().write.begin() as connection:
                    yield connection
        finally:
            # Also after the commit: a read between the two must not keep the old record.
            self._forget()

    async def _transact(
        self,
        operation: Operation[T],
        *,
        exists: str = "The object already exists.",
        missing: str = "A referenced object does not exist.",
    ) -> T:
        """Run ``operation`` in the next group commit (see ``_sql_writer``): the hot-path
        writes share one transaction and one fsync with every other write in flight.

        ``operation`` may run twice (only one run commits), so it must touch nothing but
        the connection it is given. ``exists`` and ``missing`` as for :meth:`_write`.
        """
        joined = self._joined_connection()
        with storage_errors(password=self._password, exists=exists, missing=missing):
            if joined is not None:
                return await joined.run_sync(operation)
            if self._writer is None:
                parallel = 1 if self._dialect == "sqlite" else _POSTGRES_WRITERS
                self._writer = GroupWriter(self._transactions(), parallel=parallel)
            return await self._writer.run(operation)

    def _transactions(self) -> Transactions:
        engines = self._get_engines()
        if engines.sync_write is not None:
            return ThreadTransactions(engines.sync_write, engines.new_write_lock())
        return AsyncTransactions(engines.write)

    @property
    def writer(self) -> GroupWriter | None:
        """The group-commit writer, once the first write made it (for tests and benchmarks)."""
        return self._writer

    def _upsert(self, table: sa.Table) -> Upsert:
        """``INSERT`` with the dialect's ``ON CONFLICT`` clauses (same API on both)."""
        return self._insert(table)

    def _follow_ups(
        self, conn: sa.Connection, work: Sequence[WorkItem], refs: Sequence[ProviderRef]
    ) -> None:
        """Queue work and remember refs inside the caller's transaction; existing ones stay."""
        write_all(conn, self._follow_up_writes(work, refs))

    def _follow_up_writes(
        self, work: Sequence[WorkItem], refs: Sequence[ProviderRef]
    ) -> list[tuple[Hot, list[dict[str, object]]]]:
        """:meth:`_follow_ups` as writes for :func:`write_all`, to join a caller's others."""
        return [
            (self._prebuilt("work"), [work_row(item) for item in work]),
            (self._prebuilt("refs"), [provider_ref_row(r) for r in refs]),
        ]

    def _prebuilt(self, kind: str) -> Hot:
        """The statements whose SQL depends on the dialect (its ``ON CONFLICT``), built once
        per store as :class:`Hot` statements, since every send runs them: ``work`` and
        ``refs`` (``INSERT … ON CONFLICT DO NOTHING``), and ``quota`` and ``quota_limited``
        (the write-ahead's check-and-add of quota units: an upsert that returns the new
        count, or no row when ``b_limit`` would be passed)."""
        hot = self._statements.get(kind)
        if hot is not None:
            return hot
        built: sa.Executable
        if kind == "work":
            built = self._upsert(due_work).on_conflict_do_nothing(index_elements=[due_work.c.id])
        elif kind == "refs":
            built = self._upsert(provider_refs).on_conflict_do_nothing(
                index_elements=[provider_refs.c.connection_id, provider_refs.c.provider_message_id]
            )
        elif kind in ("quota", "quota_limited"):
            insert = self._upsert(quota)
            new_used = quota.c.used + insert.excluded.used
            # One statement: the row lock of the upsert makes check-and-add atomic across
            # processes, and a refused update returns no row.
            built = insert.on_conflict_do_update(
                index_elements=[quota.c.workspace_id, quota.c.period],
                set_={"used": new_used},
                where=new_used <= sa.bindparam("b_limit") if kind == "quota_limited" else None,
            ).returning(quota.c.used)
        else:
            raise ValueError(f"no prebuilt statement {kind!r}")
        hot = self._statements[kind] = Hot(built)
        return hot

    @staticmethod
    async def _lock_workspace(connection: AsyncConnection, workspace_id: str) -> bool:
        """Serialize changes to one workspace's connections; ``False`` if it does not exist.

        PostgreSQL locks the workspace row; SQLite renders no ``FOR UPDATE`` and needs none,
        because its write transaction already holds the database's write lock.
        """
        found = await connection.execute(
            sa.select(workspaces.c.id).where(workspaces.c.id == workspace_id).with_for_update()
        )
        return found.first() is not None
