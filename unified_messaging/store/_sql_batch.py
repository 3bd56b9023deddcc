"""SQL store methods of the report paths: the worker's batches of reports
(``get_messages``, ``replace_messages``), and a pushed report's one read of its ref and its
message together (``find_reported_message``).

A batch is one read (``job_id IN (…)``) and one transaction of a handful of statements,
however many messages it holds: the work items still held (row-locked on PostgreSQL), the
messages' stored versions (row-locked, in job id order, as a bulk send's outcome does), one
``executemany`` of the changes whose compare-and-set holds, and their follow-up work, closed
refs and the items' deletions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import sqlalchemy as sa

from .._domain import MessageRecord
from ._sql_base import SqlBase
from ._sql_core import _CLOSE_REF, _DELETE_ONE_WORK, _update_row, _update_versions_of
from ._sql_hot import Hot, write_all
from ._sql_rows import message_from, provider_ref_from, work_row
from ._tables import due_work, provider_refs
from ._tables import messages as message_table
from .base import BatchWrite, MessageChange, ProviderRef

__all__ = ["BatchMixin"]

_MESSAGES_BY_ID = sa.select(message_table).where(
    message_table.c.job_id.in_(sa.bindparam("ids", expanding=True))
)
# Locked on PostgreSQL (a claim skips locked rows, so it never waits on a batch); SQLite's
# write lock already keeps a claim out until the batch commits.
_HELD_WORK = (
    sa.select(due_work.c.id)
    .where(
        due_work.c.id.in_(sa.bindparam("ids", expanding=True)),
        due_work.c.claimed_by == sa.bindparam("worker_id"),
    )
    .order_by(due_work.c.id)
    .with_for_update()
)
# The ref's columns under ``ref_`` names (the message's share theirs), the message's own;
# an outer join: a ref whose message is gone (or of another workspace or mode) has NULLs.
_REF_PREFIX: Final = "ref_"
_REF_AND_MESSAGE = Hot(
    sa.select(
        *(column.label(_REF_PREFIX + column.name) for column in provider_refs.c),
        *message_table.c,
    )
    .select_from(
        provider_refs.outerjoin(
            message_table,
            sa.and_(
                message_table.c.job_id == provider_refs.c.job_id,
                message_table.c.workspace_id == provider_refs.c.workspace_id,
                message_table.c.livemode == provider_refs.c.livemode,
            ),
        )
    )
    .where(
        provider_refs.c.connection_id == sa.bindparam("connection_id"),
        provider_refs.c.provider_message_id == sa.bindparam("provider_message_id"),
    )
)
#: PostgreSQL: up to this many rows go into one combined statement (``write_all``); a bigger
#: batch runs one ``executemany`` per statement, so the combined shapes stay few.
_COMBINE_AT_MOST: Final = 12


class BatchMixin(SqlBase):
    async def get_messages(self, keys: Sequence[tuple[str, bool, str]]) -> dict[str, MessageRecord]:
        if not keys:
            return {}
        wanted = {job_id: (workspace_id, livemode) for workspace_id, livemode, job_id in keys}
        rows = await self._all(_MESSAGES_BY_ID, ids=sorted(wanted))
        found = {}
        for row in rows:
            if wanted.get(row["job_id"]) == (row["workspace_id"], bool(row["livemode"])):
                found[row["job_id"]] = message_from(row)
        return found

    async def find_reported_message(
        self, connection_id: str, provider_message_id: str
    ) -> tuple[ProviderRef, MessageRecord | None] | None:
        params = {"connection_id": connection_id, "provider_message_id": provider_message_id}
        rows = await self._hot_query(_REF_AND_MESSAGE, params)
        if not rows:
            return None
        row = rows[0]
        ref = provider_ref_from(
            {key.removeprefix(_REF_PREFIX): v for key, v in row.items() if key.startswith("ref_")}
        )
        return ref, (None if row["job_id"] is None else message_from(row))

    async def replace_messages(
        self,
        changes: Sequence[MessageChange],
        *,
        worker_id: str,
        done: Sequence[str] = (),
    ) -> BatchWrite:
        if len({c.record.job_id for c in changes}) != len(changes):
            raise ValueError("replace_messages takes at most one change per job id")
        items = [c.done for c in changes if c.done is not None] + list(done)
        if not changes and not items:
            return BatchWrite()

        def write(conn: sa.Connection) -> BatchWrite:
            held: set[str] = set()
            if items:
                found = conn.execute(_HELD_WORK, {"ids": items, "worker_id": worker_id})
                held = set(found.scalars().all())
            mine = [c for c in changes if c.done is None or c.done in held]
            records = [c.record for c in mine]
            rows = [_update_row(r) for r in records]
            moved = _update_versions_of(conn, records, rows)
            stored = [c for c in mine if c.record.job_id not in moved]
            work = [work_row(item) for c in stored for item in c.work]
            closing: list[dict[str, object]] = [
                {"b_connection_id": connection_id, "b_message_id": message_id}
                for c in stored
                for connection_id, message_id in c.closed
            ]
            deletes: list[dict[str, object]] = [
                {"b_id": c.done} for c in stored if c.done is not None
            ]
            deletes += [{"b_id": item_id} for item_id in done if item_id in held]
            parts: list[tuple[Hot, list[dict[str, object]]]] = [
                (self._prebuilt("work"), work),
                (_CLOSE_REF, closing),
                (_DELETE_ONE_WORK, deletes),
            ]
            if sum(len(rows) for _, rows in parts) <= _COMBINE_AT_MOST:
                write_all(conn, parts)
            else:
                for hot, part in parts:
                    hot.executemany(conn, part)
            lost = tuple(item_id for item_id in items if item_id not in held)
            return BatchWrite(moved=tuple(moved), lost=lost)

        return await self._transact(write)
