"""SQL store methods that read many messages at once: the list (D29) and the scorecard.

- ``list_messages`` is a keyset query: the filters, then ``(created_at, job_id)`` below the
  cursor's, newest first, ``LIMIT``. Each filter has an index that leads with the workspace
  and mode and ends with ``created_at, job_id`` (migration 0006), so a page reads about
  ``limit`` index entries however deep it is and however many messages the table holds.
- ``connection_stats`` counts attempts per provider by unnesting each message's ``attempts``
  JSON (``json_each`` on SQLite, ``json_array_elements`` on PostgreSQL), and takes the
  delivery-time percentiles by nearest rank with window functions. The in-memory store
  computes the same in Python (``_memory_search``); the contract tests compare them.

Both can read many rows, so on SQLite they run in a thread rather than on the event loop
(where the store's short reads run): a long scan must not stall the requests beside it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import RowMapping

from .._domain import MessageRecord
from .._types import MessageStatus, ProviderCode
from ._sql_base import SqlBase
from ._sql_engine import storage_errors
from ._sql_rows import message_from
from ._tables import UtcDateTime
from ._tables import messages as message_table
from .base import ConnectionStats, MessageQuery

__all__ = ["SearchMixin"]

_m = message_table.c

#: What each attempt state counts as in :class:`ConnectionStats`.
_STATE_COLUMNS: dict[str, tuple[str, ...]] = {
    "delivered": ("delivered",),
    "expired": ("expired",),
    "failed": ("failed", "rejected", "unavailable"),
    "unknown": ("unknown",),
    "pending": ("accepted",),
}


class SearchMixin(SqlBase):
    async def list_messages(self, query: MessageQuery) -> list[MessageRecord]:
        statement = (
            sa.select(message_table)
            .where(*_conditions(query))
            .order_by(_m.created_at.desc(), _m.job_id.desc())
            .limit(query.limit)
        )
        rows = await self._long_read(statement)
        return [message_from(row) for row in rows]

    async def connection_stats(
        self, workspace_id: str, livemode: bool, since: datetime
    ) -> list[ConnectionStats]:
        window = MessageQuery(workspace_id, livemode, created_after=since)
        counts = await self._long_read(self._attempt_counts(window))
        times = await self._long_read(self._delivery_times(window))
        percentiles = {row["provider"]: row for row in times}
        stats = []
        for row in counts:
            provider = row["provider"]
            found = percentiles.get(provider)
            stats.append(
                ConnectionStats(
                    provider=provider,
                    sent=int(row["sent"]),
                    delivered=int(row["delivered"]),
                    failed=int(row["failed"]),
                    expired=int(row["expired"]),
                    unknown=int(row["unknown"]),
                    pending=int(row["pending"]),
                    fallbacks=int(row["fallbacks"]),
                    p50_ms=None if found is None else _int(found["p50"]),
                    p95_ms=None if found is None else _int(found["p95"]),
                )
            )
        return sorted(stats, key=lambda s: s.provider)

    async def count_messages(
        self, workspace_id: str, livemode: bool, since: datetime
    ) -> dict[tuple[ProviderCode, MessageStatus], int]:
        # A range of ix_um_messages_list, whose trailing status and provider answer it
        # without reading the table: a busy workspace's day (23,000 messages) in about 10 ms
        # on SQLite, where reading each row's status from the table took 150.
        window = MessageQuery(workspace_id, livemode, created_after=since)
        keys: tuple[sa.ColumnElement[Any], ...] = (_m.provider, _m.status)
        if self._dialect == "sqlite":
            # Left to itself SQLite walks the provider index over all the workspace's
            # messages to spare sorting the groups (100 ms at 630,000), when the day's range
            # is what is small; grouping by "+provider" (the same value, but no column an
            # index could order) makes it take the range.
            keys = (sa.literal_column("+provider"), sa.literal_column("+status"))
        statement = (
            sa.select(_m.provider, _m.status, sa.func.count().label("n"))
            .where(*_conditions(window))
            .group_by(*keys)
        )
        rows = await self._long_read(statement)
        return {(row["provider"], row["status"]): int(row["n"]) for row in rows}

    # -- the statements

    def _attempt_counts(self, window: MessageQuery) -> sa.Select[Any]:
        """One row per provider: its attempts' counts (see ``ConnectionStats``)."""
        attempts: sa.FromClause
        if self._dialect == "sqlite":
            attempts = sa.func.json_each(_m.attempts).table_valued("key", "value").alias("a")
            position = attempts.c.key  # 0-based
            last = sa.func.json_array_length(_m.attempts) - 1
        else:
            attempts = (
                sa.func.json_array_elements(_m.attempts)
                .table_valued("value", with_ordinality="position")
                .render_derived()
                .lateral("a")
            )
            position = attempts.c.position  # 1-based
            last = sa.func.json_array_length(_m.attempts)
        doc = sa.type_coerce(attempts.c.value, sa.JSON)
        provider = doc["provider"].as_string()
        state = doc["status"].as_string()
        columns = [
            sa.func.sum(sa.case((state.in_(states), 1), else_=0)).label(name)
            for name, states in _STATE_COLUMNS.items()
        ]
        return (
            sa.select(
                provider.label("provider"),
                sa.func.count(doc["provider_message_id"].as_string()).label("sent"),
                *columns,
                sa.func.sum(sa.case((position < last, 1), else_=0)).label("fallbacks"),
            )
            .select_from(message_table)
            .join(attempts, sa.true())
            .where(*_conditions(window))
            .group_by(provider)
        )

    def _delivery_times(self, window: MessageQuery) -> sa.Select[Any]:
        """One row per provider: p50 and p95 of its delivered messages' delivery times."""
        micros = self._micros_between(_m.sent_at, _m.final_at)
        millis = (micros + 500) // 1000  # half a millisecond up, as _memory_search does
        ranked = (
            sa.select(
                _m.provider.label("provider"),
                millis.label("ms"),
                sa.func.row_number().over(partition_by=_m.provider, order_by=millis).label("rank"),
                sa.func.count().over(partition_by=_m.provider).label("n"),
            )
            .where(
                *_conditions(window),
                _m.status == "delivered",
                _m.sent_at.is_not(None),
                _m.final_at.is_not(None),
            )
            .subquery("d")
        )

        def at_rank(percent: int) -> sa.ColumnElement[Any]:
            # Nearest rank: ceil(percent * n / 100), in integer arithmetic on both dialects.
            wanted = (percent * ranked.c.n + 99) // 100
            return sa.func.max(sa.case((ranked.c.rank == wanted, ranked.c.ms)))

        return sa.select(
            ranked.c.provider, at_rank(50).label("p50"), at_rank(95).label("p95")
        ).group_by(ranked.c.provider)

    def _micros_between(
        self, start: sa.ColumnElement[Any], end: sa.ColumnElement[Any]
    ) -> sa.ColumnElement[Any]:
        """``end - start`` in whole microseconds, exactly."""
        if self._dialect == "postgresql":
            seconds = sa.extract("epoch", end - start)
            return sa.cast(seconds * 1_000_000, sa.BigInteger)

        # SQLite keeps 'YYYY-MM-DD HH:MM:SS.ffffff' (UtcDateTime): whole seconds from the
        # first 19 characters, microseconds from the last six. julianday() would round.
        def whole(value: sa.ColumnElement[Any]) -> sa.ColumnElement[Any]:
            return sa.cast(sa.func.strftime("%s", sa.func.substr(value, 1, 19)), sa.Integer)

        def fraction(value: sa.ColumnElement[Any]) -> sa.ColumnElement[Any]:
            return sa.cast(sa.func.substr(value, 21, 6), sa.Integer)

        return (whole(end) - whole(start)) * 1_000_000 + fraction(end) - fraction(start)

    # -- running them

    async def _long_read(self, statement: sa.Executable) -> Sequence[RowMapping]:
        """A read that may scan many rows: on SQLite in a thread, off the event loop."""
        engines = self._get_engines()
        if engines.sync_read is None:
            return await self._all(statement)
        sync_read = engines.sync_read

        def run() -> Sequence[RowMapping]:
            with storage_errors(password=self._password), sync_read.connect() as connection:
                return connection.execute(statement).mappings().all()

        return await asyncio.to_thread(run)


def _conditions(query: MessageQuery) -> list[sa.ColumnElement[bool]]:
    """The WHERE clause of ``query``: workspace and mode, each filter given, the cursor."""
    found: list[sa.ColumnElement[bool]] = [
        _m.workspace_id == query.workspace_id,
        _m.livemode == query.livemode,
    ]
    if len(query.to) == 1:
        found.append(_m.to == query.to[0])
    elif query.to:
        found.append(_m.to.in_(query.to))
    if query.status is not None:
        found.append(_m.status == query.status)
    if query.provider is not None:
        found.append(_m.provider == query.provider)
    if query.created_after is not None:
        found.append(_m.created_at >= _moment(query.created_after))
    if query.created_before is not None:
        found.append(_m.created_at < _moment(query.created_before))
    if query.older_than is not None:
        created_at, job_id = query.older_than
        found.append(
            sa.tuple_(_m.created_at, _m.job_id)
            < sa.tuple_(_moment(created_at), sa.literal(job_id, sa.Text))
        )
    return found


def _moment(value: datetime) -> sa.BindParameter[datetime]:
    # Typed, so SQLite gets the same naive UTC text the column holds (text order = time order).
    return sa.literal(value, UtcDateTime)


def _int(value: object) -> int | None:
    return None if value is None else int(value)  # type: ignore[call-overload]
