"""Engines for the SQL store: URLs, per-dialect connection setup, and error translation.

Everything that differs between SQLite and PostgreSQL at the connection level lives here:

- SQLite: WAL, ``busy_timeout`` and foreign keys are set on every new connection, and
  SQLAlchemy (not the ``sqlite3`` module) emits ``BEGIN``: ``BEGIN IMMEDIATE`` for writes,
  so a write transaction takes the database's one write lock up front (waiting up to the
  busy timeout) instead of failing half-way when it upgrades a read lock.
- PostgreSQL: a connect time-out. No pre-ping (asyncpg's costs three round trips per
  checkout): a checkout drops connections the server has visibly closed, and reads retry
  once on a connection that died unnoticed (see ``SqlBase._query``).
- Both: reads are single statements and run without an explicit transaction.

Every driver or OS error that reaches the caller becomes ``StorageUnavailable`` (with the
password scrubbed); integrity violations become ``AlreadyExists`` or ``ResourceNotFound``;
a value the database refuses (SQLSTATE class 22, e.g. NUL in PostgreSQL text) becomes
``ValueError``, since retrying would not help. Engines are made with ``hide_parameters``, so
no chained SQLAlchemy error carries row values.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, make_url
from sqlalchemy.pool import ConnectionPoolEntry

from .._errors import AlreadyExists, MessagingError, ResourceNotFound, StorageUnavailable
from ._sql_hot import check_dialect
from ._sql_write_lock import WriteLock, write_lock_path

if TYPE_CHECKING:
    from sqlalchemy.dialects import postgresql, sqlite
    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = [
    "AsyncViews",
    "Dialect",
    "EngineOptions",
    "Engines",
    "Upsert",
    "dialect_insert",
    "make_engines",
    "mask_url",
    "normalize_url",
    "storage_errors",
]

Dialect = Literal["sqlite", "postgresql"]
#: ``INSERT`` with the dialect's ``ON CONFLICT`` clauses (the same API on both).
Upsert: TypeAlias = "sqlite.Insert | postgresql.Insert"

_DRIVERS: Mapping[str, tuple[Dialect, str]] = {
    "sqlite": ("sqlite", "sqlite+aiosqlite"),
    "sqlite+aiosqlite": ("sqlite", "sqlite+aiosqlite"),
    "postgres": ("postgresql", "postgresql+asyncpg"),
    "postgresql": ("postgresql", "postgresql+asyncpg"),
    "postgresql+asyncpg": ("postgresql", "postgresql+asyncpg"),
}

# Execution option read by the SQLite ``begin`` hook: which BEGIN this engine emits. Reads
# emit none: each is one statement, which SQLite runs in its own implicit transaction (a
# consistent snapshot), and skipping BEGIN saves two trips to aiosqlite's thread per read.
_BEGIN_OPTION = "um_sqlite_begin"
_BEGIN_STATEMENTS: Mapping[str, str | None] = {"read": None, "write": "BEGIN IMMEDIATE"}

# Modules whose exceptions mean "the database could not be used", whatever their class.
_DRIVER_MODULES = frozenset({"asyncpg", "aiosqlite", "sqlite3"})


def normalize_url(url: str) -> tuple[URL, Dialect]:
    """Parse ``url`` and pick the async driver: ``sqlite://`` and ``postgresql://`` are
    accepted as shorthands for the ``+aiosqlite`` and ``+asyncpg`` forms."""
    try:
        parsed = make_url(url)
    except sa_exc.ArgumentError:
        # The URL itself is not echoed: it may hold a password.
        raise ValueError("Not a database URL.") from None
    found = _DRIVERS.get(parsed.drivername)
    if found is None:
        raise ValueError(
            f"Unsupported database driver {parsed.drivername!r}: "
            "use sqlite+aiosqlite:// or postgresql+asyncpg://."
        )
    dialect, drivername = found
    return parsed.set(drivername=drivername), dialect


def dialect_insert(dialect: Dialect) -> Callable[[sa.Table], Upsert]:
    """The ``insert`` of ``dialect``, whose module alone is imported: a SQLite store never
    loads the PostgreSQL dialect (about 40 ms), nor the other way round."""
    if dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        return sqlite_insert
    from sqlalchemy.dialects.postgresql import insert as postgresql_insert

    return postgresql_insert


def mask_url(url: URL) -> str:
    return url.render_as_string(hide_password=True)


@dataclass(frozen=True, slots=True)
class EngineOptions:
    #: SQLite: how long a writer waits for the write lock before giving up (seconds).
    busy_timeout: float = 5.0
    #: PostgreSQL: how long to wait for a new connection (seconds).
    connect_timeout: float = 10.0
    pool_size: int = 20
    max_overflow: int = 10
    #: Passed to the driver's connect call (e.g. asyncpg ``server_settings``).
    connect_args: Mapping[str, object] | None = None


@dataclass(frozen=True, slots=True)
class AsyncViews:
    """The async engine (``root``) and its two views."""

    root: AsyncEngine
    read: AsyncEngine
    write: AsyncEngine


class Engines:
    """One pool, two views: ``read`` for queries, ``write`` for transactions that write.

    SQLite also has a synchronous engine (``sync_read``/``sync_write``, the ``sqlite3``
    driver) for the hot paths: a query or a whole group commit runs in one hop to a thread,
    where aiosqlite would hop to its thread and back four or five times per statement.
    There the async engine is made when it is first used (an admin write, a migration):
    with aiosqlite comes ``sqlalchemy.ext.asyncio``, which imports the ORM (about 70 ms),
    and a command that only reads (``workspaces list``) never needs either.
    """

    __slots__ = (
        "_async", "_disposed", "_held", "_held_lock", "_idle", "_make_async", "_readers", "dialect",
        "sync_read", "sync_write", "write_lock",
    )  # fmt: skip

    def __init__(
        self,
        dialect: Dialect,
        make_async: Callable[[], AsyncViews],
        *,
        sync_read: sa.Engine | None = None,
        sync_write: sa.Engine | None = None,
        write_lock: tuple[Path, float] | None = None,
    ) -> None:
        self.dialect: Dialect = dialect
        self.sync_read = sync_read
        self.sync_write = sync_write
        self.write_lock = write_lock
        self._make_async = make_async
        # Without a synchronous engine every call is async: no reason to wait.
        self._async: AsyncViews | None = None if sync_read is not None else make_async()
        self._readers = threading.local()
        self._held: list[tuple[threading.Thread, sa.Connection]] = []
        self._held_lock = threading.Lock()
        self._idle: list[sa.Connection] = []
        self._disposed = False

    def reader(self) -> sa.Connection:
        """SQLite: this thread's own read connection of ``sync_read``, kept open between
        reads (the event loop's thread reads the hot rows on it); the caller passes it to
        :meth:`done_reading` after each read.

        A pool checkout and return per read (the ``Connection``, the pool's fairy and queue,
        the reset's rollback) cost more than the read itself: about half of a read by key.
        Holding one is safe because its reads are single statements in autocommit (the
        connection has no ``BEGIN`` of its own: see ``_BEGIN_STATEMENTS``), so it never holds
        a snapshot between reads, and a thread's reads never interleave. At most
        :data:`_HELD_READERS` threads hold one (the pool is the writer's too); those of
        threads that ended are closed; beyond that a thread reads on a checkout of its own.
        :meth:`dispose` closes them all.
        """
        connection: sa.Connection | None = getattr(self._readers, "connection", None)
        if connection is not None and not connection.closed and not connection.invalidated:
            return connection
        if self.sync_read is None:
            raise RuntimeError("only SQLite reads on a held connection")
        fresh = self.sync_read.connect()
        with self._held_lock:
            if connection is not None:
                self._drop(connection)
            for ended in [c for t, c in self._held if not t.is_alive()]:
                self._drop(ended)
            if len(self._held) >= _HELD_READERS:
                return fresh  # not held: done_reading closes it
            self._held.append((threading.current_thread(), fresh))
        self._readers.connection = fresh
        return fresh

    def done_reading(self, connection: sa.Connection, *, broken: bool = False) -> None:
        """After a read on :meth:`reader`'s connection: kept if this thread holds it, else
        closed; ``broken`` (the read failed): closed, the next read gets a new one."""
        held = getattr(self._readers, "connection", None) is connection
        if held and not broken:
            return
        if held:
            self._readers.connection = None
        with self._held_lock:
            self._drop(connection)

    def take_reader(self) -> sa.Connection:
        """PostgreSQL: a read connection (autocommit) for one hot read, inside a greenlet
        (``greenlet_spawn``): one kept from an earlier read, or a new checkout.

        A pool checkout and return per read (the ``Connection``, events, the isolation
        level set and reset, the reset's rollback) were a quarter of a read by key. Up to
        :data:`_IDLE_READERS` stay checked out between reads, for the loop's next ones
        (each read has its own: an asyncpg connection runs one statement at a time).
        """
        while self._idle:
            connection = self._idle.pop()
            if (
                not connection.invalidated
                and not connection.closed
                and not _server_closed(connection)
            ):
                return connection
            with contextlib.suppress(Exception):
                connection.close()
        return self.read.sync_engine.connect()

    def give_back_reader(self, connection: sa.Connection, *, broken: bool = False) -> None:
        """After :meth:`take_reader`'s read (in the same greenlet): kept for the next read,
        or returned to the pool (``broken``: the read failed; the kept ones are returned
        too, and an invalidated one is replaced by the pool)."""
        if broken:
            # A lost connection invalidates the pool's others (SQLAlchemy's rule): the kept
            # ones are checked out, so they go too, and the retry gets a fresh one.
            self._close_idle()
        if self._disposed:
            # The store was closed while this read ran: kept, it would never be closed, and
            # returned, it would sit in a pool nobody disposes again. Either way the garbage
            # collector would meet an open asyncpg connection (a ResourceWarning), so end it.
            with contextlib.suppress(Exception):
                connection.invalidate()
                connection.close()
            return
        if broken or connection.invalidated or len(self._idle) >= _IDLE_READERS:
            with contextlib.suppress(Exception):
                connection.close()
            return
        self._idle.append(connection)

    def _close_idle(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            with contextlib.suppress(Exception):
                connection.close()

    def _drop(self, connection: sa.Connection) -> None:
        self._held = [(t, c) for t, c in self._held if c is not connection]
        with contextlib.suppress(Exception):
            connection.close()

    def new_write_lock(self) -> WriteLock | None:
        """A SQLite file's turn among the writers of every process (``_sql_write_lock``):
        one per group-commit writer, which closes it."""
        if self.write_lock is None:
            return None
        path, timeout = self.write_lock
        return WriteLock(path, timeout)

    def _views(self) -> AsyncViews:
        views = self._async
        if views is None:
            views = self._make_async()
            check_dialect(views.root.dialect)  # before any statement runs on it
            self._async = views
        return views

    @property
    def root(self) -> AsyncEngine:
        return self._views().root

    @property
    def read(self) -> AsyncEngine:
        return self._views().read

    @property
    def write(self) -> AsyncEngine:
        return self._views().write

    async def dispose(self) -> None:
        """Close every pooled connection, of the async and the synchronous engines."""
        self._disposed = True
        with self._held_lock:
            for _, connection in list(self._held):
                self._drop(connection)
        if self._idle:
            from sqlalchemy.util import greenlet_spawn

            await greenlet_spawn(self._close_idle)  # asyncpg's close awaits
        if self._async is not None:
            await self._async.root.dispose()
        if self.sync_read is not None:
            self.sync_read.dispose()


#: SQLite: threads holding a read connection at most (see ``Engines.reader``).
_HELD_READERS = 8
#: PostgreSQL: hot-read connections kept checked out between reads, at most (of the pool's
#: ``pool_size``; the group writers take at most four).
_IDLE_READERS = 4


def _server_closed(connection: sa.Connection) -> bool:
    """A free, local check (as the pool's checkout event makes): the server closed it."""
    try:
        return bool(connection.connection.dbapi_connection.driver_connection.is_closed())  # type: ignore[union-attr]
    except Exception:
        return True


def make_engines(url: URL, dialect: Dialect, options: EngineOptions) -> Engines:
    if dialect == "sqlite":
        return _sqlite_engines(url, options)
    return _postgres_engines(url, options)


def _sqlite_engines(url: URL, options: EngineOptions) -> Engines:
    path = _database_file(url.database)
    if path is not None:
        _check_directory(path)
        _owner_only(path)
    connect_args: dict[str, object] = {"timeout": options.busy_timeout}
    connect_args.update(options.connect_args or {})

    def make_async() -> AsyncViews:
        from sqlalchemy.ext.asyncio import create_async_engine

        engine = create_async_engine(
            url,
            hide_parameters=True,
            # Named: SQLAlchemy before 2.0.38 gave aiosqlite a NullPool, a new connection
            # per checkout (and refused pool_size); later releases choose this one.
            poolclass=sa.AsyncAdaptedQueuePool,
            pool_size=options.pool_size,
            max_overflow=options.max_overflow,
            connect_args=connect_args,
        )
        _sqlite_hooks(engine.sync_engine, options.busy_timeout)
        return AsyncViews(
            root=engine,
            read=engine.execution_options(**{_BEGIN_OPTION: "read"}),
            write=engine.execution_options(**{_BEGIN_OPTION: "write"}),
        )

    # The same database through the sqlite3 driver, used from threads (see Engines).
    sync_args = {**connect_args, "check_same_thread": False}
    sync_engine = sa.create_engine(
        url.set(drivername="sqlite+pysqlite"),
        hide_parameters=True,
        pool_size=options.pool_size,
        max_overflow=options.max_overflow,
        connect_args=sync_args,
    )
    _sqlite_hooks(sync_engine, options.busy_timeout)
    check_dialect(sync_engine.dialect)  # the hot statements run on it
    return Engines(
        "sqlite",
        make_async,
        sync_read=sync_engine.execution_options(**{_BEGIN_OPTION: "read"}),
        sync_write=sync_engine.execution_options(**{_BEGIN_OPTION: "write"}),
        write_lock=None if path is None else (write_lock_path(path), options.busy_timeout),
    )


def _sqlite_hooks(engine: sa.Engine, busy_timeout: float) -> None:
    busy_ms = max(0, round(busy_timeout * 1000))

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
        # Take BEGIN away from the sqlite3 module, which would defer it and skip it for DDL.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            # busy_timeout first: switching to WAL needs a lock that another process may hold.
            cursor.execute(f"PRAGMA busy_timeout = {busy_ms:d}")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = FULL")
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: sa.Connection) -> None:
        mode = str(connection.get_execution_options().get(_BEGIN_OPTION, "write"))
        statement = _BEGIN_STATEMENTS[mode]
        if statement is not None:
            connection.exec_driver_sql(statement)


def _postgres_engines(url: URL, options: EngineOptions) -> Engines:
    connect_args: dict[str, object] = {"timeout": options.connect_timeout}
    connect_args.update(options.connect_args or {})

    def make_async() -> AsyncViews:
        from sqlalchemy.ext.asyncio import create_async_engine

        engine = create_async_engine(
            url,
            hide_parameters=True,
            pool_size=options.pool_size,
            max_overflow=options.max_overflow,
            connect_args=connect_args,
        )

        @event.listens_for(engine.sync_engine, "checkout")
        def _on_checkout(dbapi_connection: Any, _record: object, _proxy: object) -> None:
            # A free, local check: a connection the server has closed (restart, terminated
            # backend) is replaced before a write can fail on it. Raising makes the pool retry.
            if dbapi_connection.driver_connection.is_closed():
                raise sa_exc.DisconnectionError("connection closed by the server")

        # Reads are single statements: autocommit spares them the BEGIN and ROLLBACK trips.
        return AsyncViews(
            root=engine,
            read=engine.execution_options(isolation_level="AUTOCOMMIT"),
            write=engine,
        )

    return Engines("postgresql", make_async)


def _database_file(database: str | None) -> Path | None:
    """The file of a SQLite URL's database; ``None`` for in-memory and ``file:`` URIs."""
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


def _check_directory(path: Path) -> None:
    """Refuse a file SQLite could not create, before a driver tries.

    The message is clearer than SQLite's "unable to open database file", and aiosqlite
    leaves a worker thread behind after a failed connect, which would outlive a short-lived
    event loop.
    """
    directory = path.parent
    if not directory.is_dir():
        raise StorageUnavailable(
            f"The message store is unavailable: {str(directory)!r} is not a directory."
        )
    if not path.exists() and not os.access(directory, os.W_OK):
        raise StorageUnavailable(
            f"The message store is unavailable: {str(directory)!r} is not writable."
        )


def _owner_only(path: Path) -> None:
    """Make the database file readable by its owner only (0600) before SQLite opens it.

    It holds phone numbers and message bodies. SQLite gives its ``-wal`` and ``-shm`` files
    the database file's permissions, so creating the file first covers them; a file made
    by an earlier version is tightened, with its WAL and SHM files.
    """
    if not path.exists():
        with contextlib.suppress(OSError):  # a directory we cannot write: SQLite says so
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with contextlib.suppress(OSError):
            if file.stat().st_mode & 0o077:
                file.chmod(0o600)


# -- errors


@contextmanager
def storage_errors(
    *,
    password: str | None = None,
    exists: str = "The object already exists.",
    missing: str = "A referenced object does not exist.",
) -> Iterator[None]:
    """Translate what escapes the block into the library's errors.

    ``exists`` and ``missing`` are the messages for unique and foreign-key violations.
    """
    try:
        yield
    except MessagingError:
        raise
    except sa_exc.IntegrityError as exc:
        kind = _integrity_kind(exc)
        if kind == "unique":
            raise AlreadyExists(exists) from exc
        if kind == "foreign_key":
            raise ResourceNotFound(missing) from exc
        raise StorageUnavailable(_reason(exc, password)) from exc
    except sa_exc.DBAPIError as exc:
        if _is_data_error(exc):
            # A value the database refuses (PostgreSQL text cannot hold NUL): retrying will
            # not help, so it is the caller's ValueError, not an outage.
            raise ValueError(_reason(exc, password, "The store cannot keep a value")) from exc
        raise StorageUnavailable(_reason(exc, password)) from exc
    except sa_exc.StatementError as exc:
        orig = exc.orig
        if isinstance(orig, ValueError | TypeError):
            # A value the store cannot keep (a naive datetime, a non-JSON payload): the
            # caller's bug, not an outage, so it surfaces as itself.
            raise orig from None
        raise StorageUnavailable(_reason(exc, password)) from exc
    except Exception as exc:
        if _is_storage_error(exc):
            raise StorageUnavailable(_reason(exc, password)) from exc
        raise


def _is_storage_error(exc: Exception) -> bool:
    if isinstance(exc, sa_exc.DBAPIError | sa_exc.TimeoutError | OSError | TimeoutError):
        return True
    return type(exc).__module__.partition(".")[0] in _DRIVER_MODULES


def _is_data_error(exc: sa_exc.DBAPIError) -> bool:
    sqlstate = str(getattr(exc.orig, "sqlstate", None) or "")
    # SQLSTATE class 22 is "data exception" (bad encoding, out of range, ...).
    return isinstance(exc, sa_exc.DataError) or sqlstate.startswith("22")


def _integrity_kind(exc: sa_exc.IntegrityError) -> Literal["unique", "foreign_key", "other"]:
    orig = exc.orig
    sqlstate = getattr(orig, "sqlstate", None)
    if sqlstate == "23505":
        return "unique"
    if sqlstate == "23503":
        return "foreign_key"
    name = getattr(orig, "sqlite_errorname", "")
    if name in ("SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY"):
        return "unique"
    if name == "SQLITE_CONSTRAINT_FOREIGNKEY":
        return "foreign_key"
    return "other"


def _reason(
    exc: BaseException,
    password: str | None,
    prefix: str = "The message store is unavailable",
) -> str:
    """A one-line cause, without SQL, parameters or the password."""
    cause: object = exc.orig if isinstance(exc, sa_exc.StatementError) else exc
    text = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
    if password:
        text = text.replace(password, "***")
    return f"{prefix}: {text[:200]}"
