"""SQL store methods for the suppression list.

- The admission check (:meth:`suppressed`) is one prebuilt ``SELECT recipient … WHERE
  workspace_id, livemode, channel = … AND recipient IN (…)`` on the primary key: an index
  lookup per recipient, never cached (an opt-out counts from the next send on). A single
  send's (``recipient = …``) is a :class:`~._sql_hot.Hot` read, on the driver's cursor.
- Adding is ``INSERT … ON CONFLICT DO NOTHING`` on the primary key, then a read of the row
  that is stored: two concurrent adds of one recipient leave one row, and both callers get it.
- The list is a keyset query like the message list (D29): ``(created_at, id)`` below the
  cursor's, newest first (index ``ix_um_suppressions_list``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import RowMapping

from ..suppressions._rules import Suppression
from ._sql_base import SqlBase
from ._sql_hot import Hot
from ._tables import UtcDateTime, suppressions

if TYPE_CHECKING:
    from .._types import Channel
    from .base import SuppressionQuery

__all__ = ["SuppressionsMixin"]

_s = suppressions.c
_COLUMNS = ("workspace_id", "livemode", "channel", "recipient", "id", "reason", "source",
            "created_at")  # fmt: skip
_KEY = sa.and_(
    _s.workspace_id == sa.bindparam("workspace_id"),
    _s.livemode == sa.bindparam("livemode"),
    _s.channel == sa.bindparam("channel"),
)
_SUPPRESSED = sa.select(_s.recipient).where(
    _KEY, _s.recipient.in_(sa.bindparam("recipients", expanding=True))
)
# A single send's check: a Hot read (every send runs it; _sql_hot.HOT_STATEMENTS).
_SUPPRESSED_ONE = Hot(
    sa.select(_s.recipient).where(_KEY, _s.recipient == sa.bindparam("recipient"))
)
_ONE = sa.select(suppressions).where(_KEY, _s.recipient == sa.bindparam("recipient"))
_BY_ID = sa.select(suppressions).where(
    _s.id == sa.bindparam("suppression_id"),
    _s.workspace_id == sa.bindparam("workspace_id"),
    _s.livemode == sa.bindparam("livemode"),
)


class SuppressionsMixin(SqlBase):
    async def add_suppression(self, entry: Suppression) -> tuple[Suppression, bool]:
        values = {name: getattr(entry, name) for name in _COLUMNS}
        key = {
            "workspace_id": entry.workspace_id,
            "livemode": entry.livemode,
            "channel": entry.channel,
            "recipient": entry.recipient,
        }
        insert = (
            self._upsert(suppressions)
            .values(values)
            .on_conflict_do_nothing(
                index_elements=[_s.workspace_id, _s.livemode, _s.channel, _s.recipient]
            )
        )
        async with self._write(missing=f"Workspace {entry.workspace_id} not found.") as conn:
            added = (await conn.execute(insert)).rowcount > 0
            if added:
                return entry, True
            row = (await conn.execute(_ONE, key)).mappings().first()
        if row is None:  # removed again between the two statements: ours is as good
            return entry, False
        return _entry_from(row), False

    async def get_suppression(
        self, workspace_id: str, livemode: bool, suppression_id: str
    ) -> Suppression | None:
        row = await self._first(
            _BY_ID, suppression_id=suppression_id, workspace_id=workspace_id, livemode=livemode
        )
        return None if row is None else _entry_from(row)

    async def remove_suppression(
        self, workspace_id: str, livemode: bool, channel: Channel, recipient: str
    ) -> Suppression | None:
        delete = (
            sa.delete(suppressions)
            .where(
                _s.workspace_id == workspace_id,
                _s.livemode == livemode,
                _s.channel == channel,
                _s.recipient == recipient,
            )
            .returning(*suppressions.c)
        )
        async with self._write() as conn:
            row = (await conn.execute(delete)).mappings().first()
        return None if row is None else _entry_from(row)

    async def list_suppressions(self, query: SuppressionQuery) -> list[Suppression]:
        conditions: list[sa.ColumnElement[bool]] = [
            _s.workspace_id == query.workspace_id,
            _s.livemode == query.livemode,
        ]
        if query.channel is not None:
            conditions.append(_s.channel == query.channel)
        if query.recipients:
            conditions.append(_s.recipient.in_(query.recipients))
        if query.older_than is not None:
            # Typed, so SQLite compares the same naive UTC text the column holds.
            at = sa.literal(query.older_than[0], UtcDateTime)
            below = sa.tuple_(at, sa.literal(query.older_than[1], sa.Text))
            conditions.append(sa.tuple_(_s.created_at, _s.id) < below)
        statement = (
            sa.select(suppressions)
            .where(*conditions)
            .order_by(_s.created_at.desc(), _s.id.desc())
            .limit(query.limit)
        )
        return [_entry_from(row) for row in await self._all(statement)]

    async def suppressed(
        self, workspace_id: str, livemode: bool, channel: Channel, recipients: Sequence[str]
    ) -> set[str]:
        if not recipients:
            return set()
        if len(recipients) == 1:
            key = {"workspace_id": workspace_id, "livemode": livemode, "channel": channel}
            rows = await self._hot_query(_SUPPRESSED_ONE, {**key, "recipient": recipients[0]})
            return {str(row["recipient"]) for row in rows}
        found = await self._column(
            _SUPPRESSED,
            workspace_id=workspace_id,
            livemode=livemode,
            channel=channel,
            recipients=list(recipients),
        )
        return {str(to) for to in found}


def _entry_from(row: RowMapping) -> Suppression:
    values: dict[str, Any] = {name: row[name] for name in _COLUMNS}
    values["livemode"] = bool(values["livemode"])
    return Suppression(**values)
