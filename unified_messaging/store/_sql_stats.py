"""The SQL store's delivery figures: counts the database keeps on every write.

Triggers (migration 0027) append each write's count changes to ``um_stat_changes``;
:meth:`SqlStatsMixin.fold_stats` sums that log into ``um_stats`` (one row per workspace,
mode, kind, key and UTC hour, and again per UTC day), and :meth:`~SqlStatsMixin.stat_counts`
reads a window as a few index ranges of ``um_stats`` plus what is still in the log, in one
statement (one snapshot): ``status`` rows per hour, the other kinds from day rows for the
whole UTC days of the window and hour rows for its edges (``stats._buckets.split_hours``).
Thirty days of a busy workspace are then a few thousand rows, whatever the messages number.

The fold moves at most :data:`FOLD_BATCH` changes per transaction, so a long backlog never
holds the write lock (SQLite) for long. On PostgreSQL one fold runs at a time (a
transaction-scoped advisory lock; another caller finds it taken and returns at once), and a
change still being written by an open transaction is not yet visible, so it stays for the
next fold: nothing is counted twice or lost.
"""

# ruff: noqa: S608 (the SQL is built from this module's own constants, never from input)
from __future__ import annotations

from typing import Any, Final

import sqlalchemy as sa

from ..stats._buckets import split_hours
from ..stats._records import StatCount
from ._sql_search import SearchMixin
from ._tables import stat_changes, stats

__all__ = ["FOLD_BATCH", "SqlStatsMixin"]

#: Changes folded per transaction at most.
FOLD_BATCH: Final = 20_000
#: The advisory lock class of the fold ("umst"), key 0.
_FOLD_LOCK: Final = 0x756D7374

_s = stats.c
_c = stat_changes.c
_KEY: Final = "workspace_id, livemode, kind, hour, provider, status, detail"
_COLUMNS: Final = f"{_KEY}, n"
_PK: Final = "workspace_id, livemode, kind, span, hour, provider, status, detail"


def _spans(source: str) -> str:
    """The changes in ``source`` as hour rows (span 1) and UTC day rows (span 24)."""
    day = "(hour / 24) * 24"
    return (
        f"SELECT workspace_id, livemode, kind, 1, hour, provider, status, detail, sum(n) "
        f"FROM {source} GROUP BY {_KEY} UNION ALL "
        f"SELECT workspace_id, livemode, kind, 24, {day}, provider, status, detail, sum(n) "
        f"FROM {source} GROUP BY {_KEY.replace('hour', day)}"
    )


_ADD: Final = f"ON CONFLICT ({_PK}) DO UPDATE SET n = um_stats.n + excluded.n"
# SQLite: the batch is the changes up to a rowid; its writes hold the only write lock.
_SQLITE_LAST = sa.text(
    "SELECT max(rowid) FROM (SELECT rowid FROM um_stat_changes ORDER BY rowid LIMIT :limit)"
)
_SQLITE_BATCH = "(SELECT * FROM um_stat_changes WHERE rowid <= :last)"
_SQLITE_FOLD = sa.text(
    f"INSERT INTO um_stats ({_PK}, n) SELECT * FROM ({_spans(_SQLITE_BATCH)}) WHERE true {_ADD}"
)
_SQLITE_DROP = sa.text("DELETE FROM um_stat_changes WHERE rowid <= :last")
# PostgreSQL: one statement; the deleted rows are the ones folded (data-modifying CTEs).
_POSTGRES_FOLD = sa.text(
    "WITH moved AS (DELETE FROM um_stat_changes WHERE ctid = ANY(ARRAY("
    f"SELECT ctid FROM um_stat_changes LIMIT :limit)) RETURNING {_COLUMNS}), "
    f"folded AS (INSERT INTO um_stats ({_PK}, n) {_spans('moved')} {_ADD}) "
    "SELECT count(*) FROM moved"
)
_POSTGRES_LOCK = sa.text(f"SELECT pg_try_advisory_xact_lock({_FOLD_LOCK}, 0)")
_ANY_CHANGE = sa.select(_c.hour).limit(1)


class SqlStatsMixin(SearchMixin):
    async def stat_counts(
        self, workspace_id: str, livemode: bool, start_hour: int, end_hour: int
    ) -> list[StatCount]:
        rows = await self._long_read(self._window(workspace_id, livemode, start_hour, end_hour))
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

    @staticmethod
    def _window(workspace_id: str, livemode: bool, start: int, end: int) -> sa.Select[Any]:
        """One statement for the window ``[start, end)`` (see the module's docstring)."""
        ranges = split_hours(start, end)
        owner = (_s.workspace_id == workspace_id, _s.livemode == livemode)
        others = _s.kind.in_(("attempt", "latency", "verification"))
        no_hour = sa.null().cast(sa.BigInteger)

        def kept(span: int, first: int, last: int, *where: Any, per_hour: bool) -> Any:
            return sa.select(
                _s.kind, _s.hour if per_hour else no_hour, _s.provider, _s.status, _s.detail, _s.n
            ).where(*owner, _s.span == span, _s.hour >= first, _s.hour < last, *where)

        parts = [kept(1, start, end, _s.kind == "status", per_hour=True)]
        if ranges.days[0] < ranges.days[1]:
            parts.append(kept(24, *ranges.days, others, per_hour=False))
        parts.extend(kept(1, first, last, others, per_hour=False) for first, last in ranges.hours)
        parts.append(
            sa.select(
                _c.kind,
                sa.case((_c.kind == "status", _c.hour), else_=no_hour),
                _c.provider,
                _c.status,
                _c.detail,
                _c.n,
            ).where(
                _c.workspace_id == workspace_id,
                _c.livemode == livemode,
                _c.hour >= start,
                _c.hour < end,
            )
        )
        window = sa.union_all(*parts).subquery("w")
        keys = (window.c.kind, window.c.hour, window.c.provider, window.c.status, window.c.detail)
        total = sa.func.sum(window.c.n)
        return sa.select(*keys, total.label("n")).group_by(*keys).having(total != 0)
