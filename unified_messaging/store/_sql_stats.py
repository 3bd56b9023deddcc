"""The SQL store's delivery figures: counts the database keeps on every write.

Triggers (migration 0027) append every message and verification row written to the log
``um_stat_changes`` (its counted fields, ``n`` = 1; an update also the row as it was,
``n`` = -1). What a logged row counts as is decided here, in SQL, by the same rules as
``stats._contributions`` in Python (the store contract tests hold the two together):
``status``, ``attempt`` and ``latency`` keys for a message, ``verification`` for a
verification, each under the UTC hour of the row's ``created_at``.

:meth:`SqlStatsMixin.fold_stats` counts the log into ``um_stats`` (one row per workspace,
mode, kind, key and UTC hour, and again per UTC day) and deletes what it counted;
:meth:`~SqlStatsMixin.stat_counts` reads a window as a few index ranges of ``um_stats`` plus
the log's rows of that window, counted on the fly, in one statement (one snapshot):
``status`` rows per hour, the other kinds from day rows for the whole UTC days of the window
and hour rows for its edges (``stats._buckets.split_hours``). Thirty days of a busy
workspace are a few thousand rows, whatever the number of messages.

A fold counts at most :data:`FOLD_BATCH` log rows per transaction, so a long backlog never
holds the write lock (SQLite) for long. On PostgreSQL one fold runs at a time (a
transaction-scoped advisory lock; another caller finds it taken and returns at once), and a
row still being written by an open transaction is not yet visible, so it stays for the next
fold: nothing is counted twice or lost.
"""

# ruff: noqa: S608 (the SQL is built from this module's own constants, never from input)
from __future__ import annotations

from typing import Final

import sqlalchemy as sa

from ..stats._buckets import LATENCY_BOUNDS_MS, hour_start, split_hours
from ..stats._records import StatCount
from ._sql_search import SearchMixin
from ._tables import UtcDateTime, stat_changes

__all__ = ["FOLD_BATCH", "SqlStatsMixin"]

#: Log rows counted per transaction at most.
FOLD_BATCH: Final = 20_000
#: The advisory lock class of the fold ("umst"), key 0.
_FOLD_LOCK: Final = 0x756D7374

_KEY: Final = "workspace_id, livemode, kind, hour, provider, status, detail"
_PK: Final = "workspace_id, livemode, kind, span, hour, provider, status, detail"
_DAY: Final = "(hour / 24) * 24"


def _bucket(micros: str) -> str:
    """The delivery-time bucket of ``micros`` (``stats._buckets.latency_bucket``)."""
    whens = " ".join(
        f"WHEN {micros} < {bound * 1000} THEN {i}" for i, bound in enumerate(LATENCY_BOUNDS_MS)
    )
    return f"CASE {whens} ELSE {len(LATENCY_BOUNDS_MS)} END"


def _counted(dialect: str, source: str, where: str) -> str:
    """What each log row ``r`` of ``source`` that meets ``where`` counts as, one row per
    key: ``workspace_id, livemode, kind, hour, provider, status, detail, n``."""
    if dialect == "sqlite":
        hour = "(CAST(strftime('%s', substr(r.created_at, 1, 19)) AS INTEGER) / 3600)"

        def seconds(column: str) -> str:
            return f"CAST(strftime('%s', substr(r.{column}, 1, 19)) AS INTEGER)"

        def fraction(column: str) -> str:
            return f"CAST(substr(r.{column}, 21, 6) AS INTEGER)"

        # Whole microseconds from the stored text, as _sql_search reads them.
        micros = (
            f"(({seconds('final_at')} - {seconds('sent_at')}) * 1000000"
            f" + {fraction('final_at')} - {fraction('sent_at')})"
        )
        first = "json_extract(r.attempts, '$[0].provider')"
        attempts = "json_each(r.attempts) AS a"
        provider, state = "json_extract(a.value, '$.provider')", "json_extract(a.value, '$.status')"
        taken = "json_extract(a.value, '$.provider_message_id') IS NOT NULL"
        followed = "a.key < json_array_length(r.attempts) - 1"  # json_each: 0-based keys
        text = ""
    else:
        hour = "floor(extract(epoch FROM r.created_at) / 3600)::bigint"
        micros = "(extract(epoch FROM r.final_at - r.sent_at) * 1000000)::bigint"
        first = "(r.attempts -> 0 ->> 'provider')"
        attempts = "json_array_elements(r.attempts) WITH ORDINALITY AS a(value, i)"
        provider, state = "a.value ->> 'provider'", "a.value ->> 'status'"
        taken = "(a.value ->> 'provider_message_id') IS NOT NULL"
        followed = "a.i < json_array_length(r.attempts)"  # ordinality: 1-based
        text = "::text"
    message = f"r.kind = 'message' AND {where}"
    return f"""
    SELECT r.workspace_id AS workspace_id, r.livemode AS livemode, 'status'{text} AS kind,
        {hour} AS hour, ''{text} AS provider, r.status AS status,
        CASE WHEN json_array_length(r.attempts) = 0 THEN 0
             WHEN {first} = r.provider THEN 1 ELSE 2 END AS detail,
        r.n AS n
    FROM {source} WHERE {message}
    UNION ALL
    SELECT r.workspace_id, r.livemode, 'attempt', {hour}, {provider}, {state},
        (CASE WHEN {followed} THEN 1 ELSE 0 END) + (CASE WHEN {taken} THEN 2 ELSE 0 END), r.n
    FROM {source}, {attempts} WHERE {message}
    UNION ALL
    SELECT r.workspace_id, r.livemode, 'latency', {hour}, r.provider, '', {_bucket(micros)}, r.n
    FROM {source} WHERE {message} AND r.status = 'delivered'
        AND r.sent_at IS NOT NULL AND r.final_at IS NOT NULL
    UNION ALL
    SELECT r.workspace_id, r.livemode, 'verification', {hour}, '', r.status, 0, r.n
    FROM {source} WHERE r.kind = 'verification' AND {where}"""


def _spans(counted: str) -> str:
    """The counts of ``counted`` (a CTE) as hour rows (span 1) and UTC day rows (span 24),
    in ``_PK`` order, keys whose changes cancel out left out."""
    return (
        f"SELECT workspace_id, livemode, kind, 1, hour, provider, status, detail, sum(n) "
        f"FROM {counted} GROUP BY {_KEY} HAVING sum(n) <> 0 UNION ALL "
        f"SELECT workspace_id, livemode, kind, 24, {_DAY}, provider, status, detail, sum(n) "
        f"FROM {counted} GROUP BY {_KEY.replace('hour', _DAY)} HAVING sum(n) <> 0"
    )


_ADD: Final = f"ON CONFLICT ({_PK}) DO UPDATE SET n = um_stats.n + excluded.n"
# SQLite: a batch is the log up to a rowid; its writer holds the only write lock.
_SQLITE_LAST: Final = sa.text(
    "SELECT max(rowid) FROM (SELECT rowid FROM um_stat_changes ORDER BY rowid LIMIT :limit)"
)
_SQLITE_FOLD: Final = sa.text(
    f"WITH counted AS ({_counted('sqlite', 'um_stat_changes AS r', 'r.rowid <= :last')}) "
    f"INSERT INTO um_stats ({_PK}, n) SELECT * FROM ({_spans('counted')}) WHERE true {_ADD}"
)
_SQLITE_DROP: Final = sa.text("DELETE FROM um_stat_changes WHERE rowid <= :last")
# PostgreSQL: one statement; the deleted rows are the ones counted (data-modifying CTEs).
_POSTGRES_FOLD: Final = sa.text(
    "WITH moved AS (DELETE FROM um_stat_changes WHERE ctid = ANY(ARRAY("
    "SELECT ctid FROM um_stat_changes LIMIT :limit)) RETURNING *), "
    f"counted AS ({_counted('postgresql', 'moved AS r', 'true')}), "
    f"folded AS (INSERT INTO um_stats ({_PK}, n) {_spans('counted')} {_ADD}) "
    "SELECT count(*) FROM moved"
)
_POSTGRES_LOCK: Final = sa.text(f"SELECT pg_try_advisory_xact_lock({_FOLD_LOCK}, 0)")
_ANY_CHANGE: Final = sa.select(stat_changes.c.n).limit(1)


def _window_statement(dialect: str) -> sa.TextClause:
    """The read of a window: kept rows by index ranges, and the log's rows counted."""
    no_hour = "NULL" if dialect == "sqlite" else "NULL::bigint"
    owner = "workspace_id = :workspace_id AND livemode = :livemode"
    others = "kind IN ('attempt', 'latency', 'verification')"

    def kept(span: int, first: str, last: str, where: str, hour: str) -> str:
        return (
            f"SELECT kind, {hour} AS hour, provider, status, detail, n FROM um_stats "
            f"WHERE {owner} AND {where} AND span = {span} AND hour >= :{first} AND hour < :{last}"
        )

    logged = _counted(
        dialect,
        "um_stat_changes AS r",
        "r.workspace_id = :workspace_id AND r.livemode = :livemode "
        "AND r.created_at >= :since AND r.created_at < :until",
    )
    parts = [
        kept(1, "start", "end", "kind = 'status'", "hour"),
        kept(24, "day_start", "day_end", others, no_hour),
        kept(1, "edge1_start", "edge1_end", others, no_hour),
        kept(1, "edge2_start", "edge2_end", others, no_hour),
        f"SELECT kind, CASE WHEN kind = 'status' THEN hour END, provider, status, detail, n "
        f"FROM ({logged}) AS l",
    ]
    return sa.text(
        f"SELECT kind, hour, provider, status, detail, sum(n) AS n "
        f"FROM ({' UNION ALL '.join(parts)}) AS w "
        f"GROUP BY kind, hour, provider, status, detail HAVING sum(n) <> 0"
    ).bindparams(
        sa.bindparam("since", type_=UtcDateTime()), sa.bindparam("until", type_=UtcDateTime())
    )


_WINDOWS: Final = {name: _window_statement(name) for name in ("sqlite", "postgresql")}


class SqlStatsMixin(SearchMixin):
    async def stat_counts(
        self, workspace_id: str, livemode: bool, start_hour: int, end_hour: int
    ) -> list[StatCount]:
        ranges = split_hours(start_hour, end_hour)
        edges = [*ranges.hours, (start_hour, start_hour), (start_hour, start_hour)]
        params = {
            "workspace_id": workspace_id,
            "livemode": livemode,
            "start": start_hour,
            "end": end_hour,
            "day_start": ranges.days[0],
            "day_end": ranges.days[1],
            "edge1_start": edges[0][0],
            "edge1_end": edges[0][1],
            "edge2_start": edges[1][0],
            "edge2_end": edges[1][1],
            "since": hour_start(start_hour),
            "until": hour_start(max(start_hour, end_hour)),
        }
        rows = await self._long_read(_WINDOWS[self._dialect].bindparams(**params))
        return sorted(
            StatCount(
                row["kind"],
                None if row["hour"] is None else int(row["hour"]),
                row["provider"],
                row["status"],
                int(row["detail"]),
                int(row["n"]),
            )
            for row in rows
        )

    async def fold_stats(self) -> int:
        folded = 0
        while True:
            if not await self._first(_ANY_CHANGE):
                return folded  # nothing to fold: no write transaction at all
            moved = await self._transact(self._fold_batch)
            folded += moved
            if moved < FOLD_BATCH:
                return folded

    def _fold_batch(self, conn: sa.Connection) -> int:
        if self._dialect == "sqlite":
            last = conn.execute(_SQLITE_LAST, {"limit": FOLD_BATCH}).scalar()
            if last is None:
                return 0
            conn.execute(_SQLITE_FOLD, {"last": last})
            return int(conn.execute(_SQLITE_DROP, {"last": last}).rowcount)
        if not conn.execute(_POSTGRES_LOCK).scalar():
            return 0  # another process is folding: its fold covers these
        return int(conn.execute(_POSTGRES_FOLD, {"limit": FOLD_BATCH}).scalar() or 0)
