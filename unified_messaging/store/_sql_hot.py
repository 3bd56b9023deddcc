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
from sqlalchemy.sql import elements, operators

from .._errors import UnsupportedDependency

__all__ = ["HOT_STATEMENTS", "Hot", "check_dialect", "compare_and_write", "write_all"]

#: Every :class:`Hot` statement of the store (``module.NAME``; the two built per dialect by
#: ``SqlBase._prebuilt`` by that method's name) and the paths that run it.
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
    "_sql_base.SqlBase._prebuilt('work')": "follow-up work items (check, DLR time-out...)",
    "_sql_base.SqlBase._prebuilt('refs')": "provider refs of a send",
    "_sql_base.SqlBase._prebuilt('quota')": "the write-ahead's quota units (no monthly limit)",
    "_sql_base.SqlBase._prebuilt('quota_limited')": "the same, under a monthly limit",
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


def check_dialect(dialect: Dialect) -> None:
    """What this module takes for granted of a dialect's compiled SQL, checked as each
    engine is made, when a store opens (so a SQLAlchemy release that changed it stops the
    store at once, with this message, and never binds a value to the wrong placeholder):
    placeholders in order (``positional``: values go as a tuple), and on PostgreSQL numbered
    ones, ``$1``, which :func:`write_all` renumbers to join statements and
    :func:`_over_arrays` maps to arrays. Both are the dialects' documented ``paramstyle``."""
    wanted = "numeric_dollar" if dialect.name == "postgresql" else None
    if dialect.positional and wanted in (None, dialect.paramstyle):
        return
    raise UnsupportedDependency(
        f"SQLAlchemy {sa.__version__} compiles {dialect.name} ({dialect.driver}) statements "
        f"with paramstyle {dialect.paramstyle!r}; the store needs "
        f"{wanted or 'a positional one'}: install an earlier SQLAlchemy release",
        package="sqlalchemy",
    )


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

    __slots__ = ("_compiled", "_statement", "_unnest")

    def __init__(self, statement: sa.Executable) -> None:
        self._statement = statement
        self._compiled: dict[tuple[str, tuple[str, ...]], _Compiled] = {}
        #: PostgreSQL's one-statement form of an executemany, per set of parameter names
        #: (``None``: the statement has none, so the rows go one by one).
        self._unnest: dict[tuple[str, tuple[str, ...]], _Arrays | None] = {}

    @property
    def statement(self) -> sa.Executable:
        """The SQLAlchemy statement this runs (the same statement SQLAlchemy would run)."""
        return self._statement

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
        """Run once per row (all rows with the same keys), in one driver call.

        PostgreSQL, more than one row, and a statement :func:`_over_arrays` can rewrite (an
        ``INSERT``, or an ``UPDATE``/``DELETE`` whose ``WHERE`` is equalities to parameters):
        **one** statement over arrays of the rows' values (``unnest``), which the server
        runs as one plan instead of once per row (a bulk's 200 rows: 17 ms → a few)."""
        if not rows:
            return
        compiled = self._for(conn.dialect, rows[0])
        values = [_values(compiled, row) for row in rows]
        sql: str = compiled.sql
        params: Any = values
        if len(values) > 1 and conn.dialect.name == "postgresql":
            arrays = self._arrays(conn.dialect, rows[0], compiled)
            if arrays is not None and arrays.distinct(values):
                sql, params = arrays.sql, [_columns(values)]
        cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        try:
            if len(params) == 1:
                cursor.execute(sql, params[0])
            else:
                cursor.executemany(sql, params)
        except conn.dialect.loaded_dbapi.Error as exc:
            raise _wrapped(conn, cursor, sql, exc) from exc
        finally:
            cursor.close()

    def compare_and_set_many(
        self, conn: sa.Connection, rows: Sequence[Mapping[str, Any]], key: str
    ) -> set[Any] | None:
        """PostgreSQL: this ``UPDATE … WHERE t.key = :b_key AND t.version = :b_version``
        (a compare-and-set) for every row as **one** statement; the ``key`` values of the
        rows it updated (a row whose version moved on, or that is gone, is not). ``None``
        where that form does not apply (SQLite, one row, a key twice): run the rows as
        before. The rows are locked in ``key`` order before any is written, as the locked
        read they replace did, so two such batches never wait on each other in a circle."""
        if len(rows) < 2 or conn.dialect.name != "postgresql":
            return None
        compiled = self._for(conn.dialect, rows[0])
        arrays = self._arrays(conn.dialect, rows[0], compiled, locked=key)
        values = [_values(compiled, row) for row in rows]
        if arrays is None or not arrays.distinct(values):
            return None
        cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        try:
            cursor.execute(arrays.sql, _columns(values))
            return {found[0] for found in cursor.fetchall()}
        except conn.dialect.loaded_dbapi.Error as exc:
            raise _wrapped(conn, cursor, arrays.sql, exc) from exc
        finally:
            cursor.close()

    def _arrays(
        self,
        dialect: Dialect,
        row: Mapping[str, Any],
        compiled: _Compiled,
        *,
        locked: str | None = None,
    ) -> _Arrays | None:
        key = (f"unnest:{locked}", tuple(row))
        found = self._unnest.get(key, _NOT_YET)
        if found is _NOT_YET:
            found = self._unnest[key] = _over_arrays(
                self._statement, dialect, compiled, locked=locked
            )
        return found  # type: ignore[no-any-return]

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
    """``statement`` compiled for ``dialect``, with the converters SQLAlchemy's own run uses.

    Only documented API: the compilation's ``string``, ``positiontup`` (the parameters in
    placeholder order), ``binds`` and ``params``; each type's ``dialect_impl(dialect)`` and
    its ``bind_processor``/``result_processor`` (which is what SQLAlchemy caches and calls);
    the statement's ``exported_columns`` (a ``SELECT``'s columns, a ``RETURNING``'s).
    tests/store/test_sql_hot_public.py checks every hot statement against SQLAlchemy's own
    execution of it."""
    compiled: Any = statement.compile(dialect=dialect, column_keys=list(keys))  # type: ignore[attr-defined]
    names = tuple(compiled.positiontup or ())
    binds = compiled.binds
    returned = _returned_columns(statement)
    columns = tuple(name for name, _ in returned)
    results = tuple(_converter(of, dialect, result=True) for _, of in returned)
    return _Compiled(
        sql=compiled.string,
        names=names,
        binds=tuple(_converter(binds[name].type, dialect) for name in names),
        defaults=compiled.params,
        columns=columns,
        results=results,
        processed=tuple(
            (n, name, process)
            for n, (name, process) in enumerate(zip(columns, results, strict=True))
            if process is not None
        ),
    )


def _returned_columns(statement: sa.Executable) -> list[tuple[str, sa.types.TypeEngine[Any]]]:
    """The result columns, by the names a row of SQLAlchemy's result gives them."""
    exported = getattr(statement, "exported_columns", None)
    if exported is None:
        return []
    return [(name, column.type) for name, column in exported.items()]


def _converter(
    of: sa.types.TypeEngine[Any], dialect: Dialect, *, result: bool = False
) -> _Processor:
    """The dialect's conversion of a bound value (or, ``result``, of a fetched one) of type
    ``of``; ``None`` where values pass as they are."""
    impl = of.dialect_impl(dialect)
    return impl.result_processor(dialect, None) if result else impl.bind_processor(dialect)


_NOT_YET: Any = object()

#: Column types sent as text arrays and cast back per value: asyncpg's codec for a JSON
#: array would want Python objects, while the bind processors have already made the text.
_AS_TEXT = ("JSON", "JSONB")


@dataclass(frozen=True, slots=True)
class _Arrays:
    """A statement over arrays (:func:`_over_arrays`) and the positions of its key values."""

    sql: str
    #: An ``UPDATE``'s key parameters, by position: two rows with the same key would be one
    #: match of the join (one of them written, not both in order), so such rows go one by one.
    keys: tuple[int, ...] = ()

    def distinct(self, values: Sequence[tuple[Any, ...]]) -> bool:
        if not self.keys:
            return True
        seen = {tuple(row[n] for n in self.keys) for row in values}
        return len(seen) == len(values)


def _columns(values: Sequence[tuple[Any, ...]]) -> tuple[list[Any], ...]:
    """Rows of values as one list per parameter (the arrays)."""
    return tuple(list(column) for column in zip(*values, strict=True))


def _over_arrays(
    statement: sa.Executable, dialect: Dialect, compiled: _Compiled, *, locked: str | None = None
) -> _Arrays | None:
    """PostgreSQL: ``compiled`` (one row's statement) as one statement over arrays, one
    array parameter per row parameter, in the same order (``$n`` is the array of the
    values the row statement binds to ``$n``); ``None`` for a shape it does not know.

    - ``INSERT … VALUES ($1, …) [ON CONFLICT …]`` → ``INSERT … SELECT … FROM unnest($1, …)
      [ON CONFLICT …]``: the same rows, the same conflict handling (``DO NOTHING`` also
      skips a later duplicate of the same statement, as the rows one by one did);
    - ``UPDATE t SET c = :c … WHERE t.k = :b_k [AND …]`` → ``UPDATE t SET c = v.c … FROM
      unnest(…) AS v WHERE t.k = v.b_k …``, and ``DELETE`` likewise (``USING``): every row
      matched by its own key, as before; rows whose key matches nothing change nothing.

    Each array is typed as its column (``TEXT[]``, ``TIMESTAMP WITH TIME ZONE[]``,
    ``BOOLEAN[]``...), JSON as text cast back per value, so every value is stored as the
    row statement stored it (tests/store checks the round trip).

    ``locked`` (an ``UPDATE`` only: the name of its key column): the rows with those keys
    are first locked in key order (a ``MATERIALIZED`` CTE ``… ORDER BY key FOR UPDATE``,
    which the update joins, so no row is written before it is locked), and the statement
    returns the keys of the rows it updated.

    The text is built from the table's own names (quoted by the dialect), its columns' types
    and ``$n`` placeholders only: no value is ever part of it (hence the ``noqa: S608``)."""
    if not isinstance(statement, sa.Insert | sa.Update | sa.Delete):
        return None
    table = statement.table
    if not isinstance(table, sa.Table):
        return None
    preparer = dialect.identifier_preparer
    where: dict[str, sa.ColumnElement[Any]] = {}
    if not isinstance(statement, sa.Insert):
        found = _key_equalities(statement.whereclause, table)
        if found is None:
            return None
        where = found
    columns: list[tuple[str, sa.Column[Any]]] = []
    for name in compiled.names:
        column = where.get(name)
        if column is None:
            column = table.c.get(name)
        if not isinstance(column, sa.Column) or column.table is not table:
            return None
        columns.append((name, column))
    arrays, selected = [], []
    for n, (_, column) in enumerate(columns, start=1):
        sql_type = column.type.compile(dialect=dialect)
        text = sql_type.upper() in _AS_TEXT
        arrays.append(f"${n}::{'TEXT' if text else sql_type}[]")
        selected.append(f"v.p{n}::{sql_type}" if text else f"v.p{n}")
    aliases = ", ".join(f"p{n}" for n in range(1, len(columns) + 1))
    source = f"unnest({', '.join(arrays)}) AS v({aliases})"
    name_of = preparer.format_table(table)
    if isinstance(statement, sa.Insert):
        match = re.search(r" VALUES \((.*?)\)(?= ON CONFLICT |$)", compiled.sql)
        if match is None or _PLACEHOLDER.findall(match.group(1)) != [
            str(n) for n in range(1, len(columns) + 1)
        ]:
            return None
        if locked is not None:
            return None
        select = f" SELECT {', '.join(selected)} FROM {source}"  # noqa: S608 (see above)
        return _Arrays(compiled.sql[: match.start()] + select + compiled.sql[match.end() :])
    keys = " AND ".join(
        f"{name_of}.{preparer.quote(column.name)} = {selected[n]}"
        for n, (name, column) in enumerate(columns)
        if name in where
    )
    if isinstance(statement, sa.Delete):
        if len(where) != len(columns) or locked is not None:
            return None
        return _Arrays(f"DELETE FROM {name_of} USING {source} WHERE {keys}")  # noqa: S608
    sets = ", ".join(
        f"{preparer.quote(column.name)} = {selected[n]}"
        for n, (name, column) in enumerate(columns)
        if name not in where
    )
    if not sets:
        return None
    positions = tuple(n for n, (name, _) in enumerate(columns) if name in where)
    sql = f"UPDATE {name_of} SET {sets} FROM {source} WHERE {keys}"  # noqa: S608
    if locked is None:
        return _Arrays(sql, positions)
    by_key = [n for n, (name, of) in enumerate(columns) if name in where and of.name == locked]
    if len(by_key) != 1:
        return None
    (n,) = by_key
    quoted = preparer.quote(locked)
    lock = (
        f"WITH locked AS MATERIALIZED (SELECT {name_of}.{quoted} FROM {name_of} "  # noqa: S608
        f"WHERE {name_of}.{quoted} = ANY(${n + 1}) ORDER BY {name_of}.{quoted} FOR UPDATE) "
    )
    sql = (
        f"{lock}UPDATE {name_of} SET {sets} FROM {source}, locked "  # noqa: S608
        f"WHERE locked.{quoted} = {selected[n]} AND {keys} RETURNING {name_of}.{quoted}"
    )
    return _Arrays(sql, positions)


def _key_equalities(
    clause: sa.ColumnElement[Any] | None, table: sa.Table
) -> dict[str, sa.ColumnElement[Any]] | None:
    """``table.c == :param [AND …]`` as parameter name → column; ``None`` for anything else."""
    if clause is None:
        return None
    parts = (
        list(clause.clauses)
        if isinstance(clause, elements.BooleanClauseList) and clause.operator is operators.and_
        else [clause]
    )
    found: dict[str, sa.ColumnElement[Any]] = {}
    for part in parts:
        if not (
            isinstance(part, elements.BinaryExpression)
            and part.operator is operators.eq
            and isinstance(part.left, sa.Column)
            and part.left.table is table
            and isinstance(part.right, elements.BindParameter)
            and not part.right.expanding
        ):
            return None
        found[part.right.key] = part.left
    return found


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
        # SQLAlchemy's own handling of a lost connection marks the pool's older connections
        # stale too (Connection._handle_dbapi_exception does the same call): a server that
        # ended one backend has likely ended its siblings, and one still consuming the
        # server's farewell passes the checkout's is_closed() test, so the read's one retry
        # would meet it. Stale ones are replaced at their next checkout.
        conn.engine.pool._invalidate(conn.connection, exc)
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
        # (13 ms for a 200-message bulk's), so each write is one statement over arrays of
        # its rows' values (Hot.executemany), and those few are one WITH: one round trip.
        over = _over_arrays_all(conn.dialect, parts)
        if over is None:
            for hot, rows in parts:
                hot.executemany(conn, rows)
            return
        sql, values = over
    else:
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


def _over_arrays_all(
    dialect: Dialect, parts: Sequence[tuple[Hot, Sequence[Mapping[str, Any]]]]
) -> tuple[str, tuple[Any, ...]] | None:
    """PostgreSQL: ``parts`` (each a write and its rows) as one ``WITH`` of one statement
    per write, each over arrays when it has more than one row; ``None`` if a write of many
    rows has no such form (then :meth:`Hot.executemany` runs each, row by row)."""
    statements: list[tuple[str, tuple[Any, ...]]] = []
    for hot, rows in parts:
        if not rows:
            continue
        compiled = hot._for(dialect, rows[0])
        values = [_values(compiled, row) for row in rows]
        if len(values) == 1:
            statements.append((compiled.sql, values[0]))
            continue
        arrays = hot._arrays(dialect, rows[0], compiled)
        if arrays is None or not arrays.distinct(values):
            return None
        statements.append((arrays.sql, _columns(values)))
    if len(statements) == 1:
        return statements[0]
    key = tuple(sql for sql, _ in statements)
    sql = _WITH_OF_ARRAYS.get(key)
    if sql is None:
        with_parts, offset = [], 0
        for n, (one, bound) in enumerate(statements):
            with_parts.append(f"w{n} AS ({_shifted(one, offset)})")
            offset += len(bound)
        sql = "WITH " + ", ".join(with_parts) + " SELECT 1"
        if len(_WITH_OF_ARRAYS) > 1000:  # bounded: a bulk's shapes are few
            _WITH_OF_ARRAYS.clear()
        _WITH_OF_ARRAYS[key] = sql
    return sql, tuple(value for _, bound in statements for value in bound)


_WITH_OF_ARRAYS: dict[tuple[str, ...], str] = {}


def _shifted(sql: str, offset: int) -> str:
    def renumber(match: re.Match[str]) -> str:
        return f"${int(match.group(1)) + offset}"

    return _PLACEHOLDER.sub(renumber, sql)


Parts = Sequence[tuple[Hot, Sequence[Mapping[str, Any]]]]


def compare_and_write(
    conn: sa.Connection,
    cas: Hot,
    row: Mapping[str, Any],
    *,
    gated: Parts = (),
    always: Parts = (),
) -> bool:
    """A compare-and-set and the writes that go with it, in the caller's transaction:
    ``cas`` (an ``UPDATE`` of at most one row) with ``row``; the ``gated`` writes only if
    it updated its row, the ``always`` writes either way. Whether it updated its row.

    SQLite: the update, then :func:`write_all`. PostgreSQL, a few rows: **one** statement,
    the update a data-modifying ``WITH`` part that returns its row, each gated write taking
    it as a condition (``… WHERE EXISTS (SELECT 1 FROM c)``), so a send's outcome or a
    report's change costs one round trip instead of two. As in :func:`write_all`, the parts
    run on one snapshot and must not touch each other's rows.
    """
    runs = [(hot, r, True) for hot, rows in gated for r in rows]
    runs += [(hot, r, False) for hot, rows in always for r in rows]
    if conn.dialect.name != "postgresql" or len(runs) >= COMBINED_AT_MOST:
        return _compare_then_write(conn, cas, row, gated, always)
    combined = _compare_and_combined(conn.dialect, cas, row, runs)
    if combined is None:
        return _compare_then_write(conn, cas, row, gated, always)
    sql, values = combined
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(sql, values)
        return bool(cursor.fetchall()[0][0])
    except conn.dialect.loaded_dbapi.Error as exc:
        raise _wrapped(conn, cursor, sql, exc) from exc
    finally:
        cursor.close()


def _compare_then_write(
    conn: sa.Connection, cas: Hot, row: Mapping[str, Any], gated: Parts, always: Parts
) -> bool:
    if cas.rowcount(conn, row) != 1:
        write_all(conn, always)
        return False
    write_all(conn, [*gated, *always])
    return True


_GATED: dict[tuple[tuple[Hot, tuple[str, ...], bool], ...], str | None] = {}
#: The condition of a gated write: the compare-and-set part updated its row.
_UPDATED = "EXISTS (SELECT 1 FROM c)"


def _compare_and_combined(
    dialect: Dialect,
    cas: Hot,
    row: Mapping[str, Any],
    runs: Sequence[tuple[Hot, Mapping[str, Any], bool]],
) -> tuple[str, tuple[Any, ...]] | None:
    """PostgreSQL: :func:`compare_and_write` as one statement and its values; ``None`` if
    a part has a shape this does not know (it then runs as two)."""
    first = cas._for(dialect, row)
    compiled = [hot._for(dialect, r) for hot, r, _ in runs]
    key = ((cas, tuple(row), False), *((hot, tuple(r), g) for hot, r, g in runs))
    sql = _GATED.get(key, _NOT_YET)
    if sql is _NOT_YET:
        parts = [(hot, one, g) for (hot, _, g), one in zip(runs, compiled, strict=True)]
        sql = _gated_sql(dialect, first, parts)
        if len(_GATED) > 1000:  # bounded: the shapes of a send's outcome are few
            _GATED.clear()
        _GATED[key] = sql
    if sql is None:
        return None
    values = list(_values(first, row))
    for one, (_, r, _) in zip(compiled, runs, strict=True):
        values.extend(_values(one, r))
    return sql, tuple(values)


def _gated_sql(
    dialect: Dialect, cas: _Compiled, parts: Sequence[tuple[Hot, _Compiled, bool]]
) -> str | None:
    # Built from compiled statements only (see _gated_write): no value is part of it.
    if not cas.sql.startswith("UPDATE ") or " RETURNING " in cas.sql:
        return None
    with_parts = [f"c AS ({cas.sql} RETURNING 1)"]
    offset = len(cas.names)
    for n, (hot, one, gated) in enumerate(parts):
        sql = _gated_write(hot, dialect, one) if gated else one.sql
        if sql is None:
            return None
        with_parts.append(f"w{n} AS ({_shifted(sql, offset)})")
        offset += len(one.names)
    return "WITH " + ", ".join(with_parts) + " SELECT count(*) FROM c"  # noqa: S608 (see above)


def _gated_write(hot: Hot, dialect: Dialect, compiled: _Compiled) -> str | None:
    """``compiled`` (one row's write) made to change nothing unless :data:`_UPDATED`.

    An ``INSERT … VALUES ($1, …)`` becomes ``INSERT … SELECT $1::type, … WHERE …`` (each
    value typed as its column, as ``VALUES`` would have typed it); an ``UPDATE`` or
    ``DELETE`` gets the condition added to its ``WHERE``. Built from the compiled text and
    the table's own column types only: no value is ever part of it."""
    statement = hot.statement
    sql = compiled.sql
    if " RETURNING " in sql:
        return None
    if isinstance(statement, sa.Update | sa.Delete):
        head, found, where = sql.partition(" WHERE ")
        if not found:
            return None
        return f"{head} WHERE ({where}) AND {_UPDATED}"
    if not isinstance(statement, sa.Insert) or not isinstance(statement.table, sa.Table):
        return None
    table = statement.table
    match = re.search(r" VALUES \((.*?)\)(?= ON CONFLICT |$)", sql)
    if match is None or _PLACEHOLDER.findall(match.group(1)) != [
        str(n) for n in range(1, len(compiled.names) + 1)
    ]:
        return None
    typed = []
    for n, name in enumerate(compiled.names, start=1):
        column = table.c.get(name)
        if not isinstance(column, sa.Column):
            return None
        typed.append(f"${n}::{column.type.compile(dialect=dialect)}")
    select = f" SELECT {', '.join(typed)} WHERE {_UPDATED}"
    return sql[: match.start()] + select + sql[match.end() :]
