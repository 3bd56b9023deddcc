"""The send path's hottest statements, run on the driver's own cursor.

SQLAlchemy's ``Connection.execute`` builds an execution context per call (cache key, bind
processing through generic machinery, a result object): on the served send path that was a
large part of a request's CPU, for statements that never change. A :class:`Hot` statement
is a SQLAlchemy Core statement compiled **once** per dialect and set of parameter names;
each run then converts its values with that compilation's own bind processors (the same
conversions SQLAlchemy applies: aware UTC datetimes, JSON, booleans), calls the DBAPI
cursor of the connection it is given (``sqlite3``, or SQLAlchemy's asyncpg adapter, which
keeps its prepared statements), and converts result columns with the compilation's result
processors. So it runs inside the caller's transaction, sees and writes the same values,
and a driver error is wrapped exactly as SQLAlchemy wraps it (``DBAPIError.instance``), so
``storage_errors`` turns it into the same library error (``AlreadyExists``...).

Only for statements without expanding (``IN``) parameters: their SQL is fixed.

Every ``Hot`` statement is listed in :data:`HOT_STATEMENTS` below, with what runs it, and
nowhere else (``tests/store/test_sql_hot_list.py`` checks the list against the modules):
move a statement here, add it there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Dialect

__all__ = ["HOT_STATEMENTS", "Hot", "write_all"]

#: Every :class:`Hot` statement of the store (``module.NAME``; the two built per dialect by
#: ``SqlBase._insert_new`` by that method's name) and the paths that run it.
HOT_STATEMENTS: Mapping[str, str] = {
    # reads by key, per request (on SQLite on a held connection per thread, on PostgreSQL
    # on one of a few kept connections: SqlBase._hot_query)
    "_sql_core._MESSAGE_BY_ID": "GET /v1/messages/{id}, the worker's report, replays",
    "_sql_core._REF_BY_ID": "a delivery report's provider message id",
    "_sql_suppressions._SUPPRESSED_ONE": "a single send's suppression check (admission)",
    # the send's write-ahead and outcome, in group commits
    "_sql_core._INSERT_MESSAGE": "the write-ahead messages (single sends and bulks)",
    "_sql_core._UPDATE_MESSAGE": "a bulk's outcome (executemany), update_messages",
    "_sql_core._REPLACE_MESSAGE": "a single send's outcome and every lifecycle change (CAS)",
    "_sql_core._DELETE_ONE_WORK": "the submit checks a send's outcome removes",
    "_sql_core._CLOSE_REF": "refs closed by a final report",
    "_sql_base.SqlBase._insert_new('work')": "follow-up work items (check, DLR time-out...)",
    "_sql_base.SqlBase._insert_new('refs')": "provider refs of a send",
    "_sql_guard._RECENT": "the flood guard's count (SQLite)",
    "_sql_guard._LOCK_AND_RECENT": "the flood guard's lock and count (PostgreSQL)",
    # the worker
    "_sql_work._CLAIM_WORK": "the worker's claim of due items",
    "_sql_work._COMPLETE_WORK": "an item's completion",
    # a batch of simulated reports (replace_messages) and a pushed report's one read
    "_sql_batch._REF_AND_MESSAGE": "a pushed report's ref and message (find_reported_message)",
    # a fresh webhook event's one write (record_webhook_attempt)
    "_sql_work._HOLDS": "the event item still held under the lease (FOR UPDATE)",
    "_sql_work._RECORD_DELIVERY": "the delivery row with its outcome",
    "_sql_work._RECORD_RETRY": "the delivery's retry item, if pending",
    "_sql_work._COMPLETE_HELD": "the event item's end, under the lease",
}

_Processor = Callable[[Any], Any] | None


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    names: tuple[str, ...]
    binds: tuple[_Processor, ...]
    defaults: Mapping[str, Any]
    columns: tuple[str, ...]
    results: tuple[_Processor, ...]
    #: The result columns that have a processor, by position: the others are taken as is.
    processed: tuple[tuple[int, str, Callable[[Any], Any]], ...]


class Hot:
    """One prebuilt statement run on the DBAPI cursor (see the module doc)."""

    __slots__ = ("_compiled", "_statement")

    def __init__(self, statement: sa.Executable) -> None:
        self._statement = statement
        self._compiled: dict[tuple[str, tuple[str, ...]], _Compiled] = {}

    def execute(self, conn: sa.Connection, params: Mapping[str, Any]) -> Any:
        """Run once with ``params``; the DBAPI cursor (``rowcount``, rows via :meth:`rows`)."""
        compiled = self._for(conn.dialect, params)
        values = _values(compiled, params)
        cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        try:
            cursor.execute(compiled.sql, values)
        except conn.dialect.loaded_dbapi.Error as exc:
            raise _wrapped(conn, cursor, compiled.sql, exc) from exc
        return cursor

    def executemany(self, conn: sa.Connection, rows: Sequence[Mapping[str, Any]]) -> None:
        """Run once per row (all rows with the same keys), in one driver call."""
        if not rows:
            return
        compiled = self._for(conn.dialect, rows[0])
        values = [_values(compiled, row) for row in rows]
        cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        try:
            if len(values) == 1:
                cursor.execute(compiled.sql, values[0])
            else:
                cursor.executemany(compiled.sql, values)
        except conn.dialect.loaded_dbapi.Error as exc:
            raise _wrapped(conn, cursor, compiled.sql, exc) from exc
        finally:
            cursor.close()

    def rowcount(self, conn: sa.Connection, params: Mapping[str, Any]) -> int:
        cursor = self.execute(conn, params)
        try:
            return int(cursor.rowcount)
        finally:
            cursor.close()

    def mappings(self, conn: sa.Connection, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The result rows, each a dict of column name to its converted value."""
        compiled = self._for(conn.dialect, params)
        cursor = self.execute(conn, params)
        try:
            found = cursor.fetchall()
        finally:
            cursor.close()
        return [_row(compiled, raw) for raw in found]

    def scalars(self, conn: sa.Connection, params: Mapping[str, Any]) -> list[Any]:
        """The first column of each result row, converted."""
        compiled = self._for(conn.dialect, params)
        process = compiled.results[0]
        cursor = self.execute(conn, params)
        try:
            found = cursor.fetchall()
        finally:
            cursor.close()
        return [raw[0] if process is None else process(raw[0]) for raw in found]

    def _for(self, dialect: Dialect, params: Mapping[str, Any]) -> _Compiled:
        key = (dialect.name, tuple(params))
        found = self._compiled.get(key)
        if found is None:
            found = self._compiled[key] = _compile(self._statement, dialect, key[1])
        return found


def _compile(statement: sa.Executable, dialect: Dialect, keys: Iterable[str]) -> _Compiled:
    compiled: Any = statement.compile(dialect=dialect, column_keys=list(keys))  # type: ignore[attr-defined]
    names = tuple(compiled.positiontup or ())
    processors = compiled._bind_processors
    columns = tuple(column[0] for column in compiled._result_columns)
    results = tuple(
        column[3]._cached_result_processor(dialect, None) for column in compiled._result_columns
    )
    return _Compiled(
        sql=compiled.string,
        names=names,
        binds=tuple(processors.get(name) for name in names),
        defaults=compiled.construct_params(_check=False),
        columns=columns,
        results=results,
        processed=tuple(
            (n, name, process)
            for n, (name, process) in enumerate(zip(columns, results, strict=True))
            if process is not None
        ),
    )


def _values(compiled: _Compiled, params: Mapping[str, Any]) -> tuple[Any, ...]:
    defaults = compiled.defaults
    out = []
    for name, process in zip(compiled.names, compiled.binds, strict=True):
        value = params[name] if name in params else defaults.get(name)
        out.append(value if process is None or value is None else process(value))
    return tuple(out)


def _row(compiled: _Compiled, raw: Sequence[Any]) -> dict[str, Any]:
    row = dict(zip(compiled.columns, raw, strict=True))
    for n, name, process in compiled.processed:
        value = raw[n]
        if value is not None:
            row[name] = process(value)
    return row


def _wrapped(conn: sa.Connection, cursor: Any, sql: str, exc: Any) -> Exception:
    """As SQLAlchemy wraps a driver error (IntegrityError for a unique violation...), with
    no parameters in it: storage_errors reads the class and the driver's code. A lost
    connection is invalidated, as SQLAlchemy does, so the pool never hands it out again."""
    dialect = conn.dialect
    lost = bool(dialect.is_disconnect(exc, conn.connection.dbapi_connection, cursor))
    if lost:
        conn.invalidate(exc)
    wrapped: Exception = sa_exc.DBAPIError.instance(
        sql,
        None,
        exc,
        dialect.loaded_dbapi.Error,
        hide_parameters=True,
        connection_invalidated=lost,
        dialect=dialect,
        ismulti=None,
    )
    return wrapped


#: ``$n`` placeholders of a statement compiled for asyncpg, renumbered when combined.
_PLACEHOLDER = re.compile(r"\$(\d+)")


def write_all(
    conn: sa.Connection, parts: Sequence[tuple[Hot, Sequence[Mapping[str, Any]]]]
) -> None:
    """Run each :class:`Hot` write with each of its rows, in the caller's transaction, where
    nothing needs their results (inserts, deletes; no ``RETURNING``, no row counts).

    SQLite: one ``executemany`` per statement (each is a call into the library, no trip).
    PostgreSQL: **one** statement for them all, each write a data-modifying ``WITH`` part of
    it, so one round trip instead of one per statement. Its parts run on one snapshot, so
    they must not depend on each other's rows (they write different rows of different
    things: a message and its work items, a send's refs and its follow-ups).
    """
    if conn.dialect.name != "postgresql":
        for hot, rows in parts:
            hot.executemany(conn, rows)
        return
    runs = [(hot, row) for hot, rows in parts for row in rows]
    if len(runs) <= 1:
        for hot, row in runs:
            hot.execute(conn, row).close()
        return
    if len(runs) > COMBINED_AT_MOST:
        # A bulk's hundreds of rows: the server plans a WITH of hundreds of parts slowly
        # (13 ms for a 200-message bulk's), and asyncpg pipelines an executemany (its rows
        # in one round trip), so one round trip per statement.
        for hot, rows in parts:
            hot.executemany(conn, rows)
        return
    sql, values = _combined(conn.dialect, runs)
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(sql, values)
    except conn.dialect.loaded_dbapi.Error as exc:
        raise _wrapped(conn, cursor, sql, exc) from exc
    finally:
        cursor.close()


#: PostgreSQL: at most this many rows' writes share one statement (a send's few).
COMBINED_AT_MOST = 16

_COMBINED: dict[tuple[tuple[Hot, tuple[str, ...]], ...], str] = {}


def _combined(
    dialect: Dialect, runs: Sequence[tuple[Hot, Mapping[str, Any]]]
) -> tuple[str, tuple[Any, ...]]:
    compiled = [hot._for(dialect, row) for hot, row in runs]
    key = tuple((hot, tuple(row)) for hot, row in runs)
    sql = _COMBINED.get(key)
    if sql is None:
        parts, offset = [], 0
        for n, one in enumerate(compiled):
            parts.append(f"w{n} AS ({_shifted(one.sql, offset)})")
            offset += len(one.names)
        sql = "WITH " + ", ".join(parts) + " SELECT 1"
        if len(_COMBINED) > 1000:  # bounded: the shapes of a send are few
            _COMBINED.clear()
        _COMBINED[key] = sql
    values: list[Any] = []
    for one, (_, row) in zip(compiled, runs, strict=True):
        values.extend(_values(one, row))
    return sql, tuple(values)


def _shifted(sql: str, offset: int) -> str:
    def renumber(match: re.Match[str]) -> str:
        return f"${int(match.group(1)) + offset}"

    return _PLACEHOLDER.sub(renumber, sql)
