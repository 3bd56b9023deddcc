"""SQL store methods for the audit log (D32): append a row, list them newest first.

The list is a keyset query like the message list (D29): the filters, then ``(at, id)``
below the cursor's, newest first, ``LIMIT``; each filter an operator reaches for first has
an index that ends in ``at, id`` (migration 0012). There is no update or delete.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import RowMapping

from .._errors import ResourceNotFound
from ..audit._events import AuditEvent, AuditQuery
from ._sql_base import SqlBase
from ._tables import UtcDateTime, audit_log

__all__ = ["AuditMixin"]

_a = audit_log.c
_COLUMNS = ("id", "at", "actor", "workspace_id", "action", "target", "client_address")
_CURSOR = sa.select(_a.at, _a.id).where(_a.id == sa.bindparam("event_id"))


class AuditMixin(SqlBase):
    async def append_audit_event(self, event: AuditEvent) -> None:
        values = {name: getattr(event, name) for name in _COLUMNS}
        async with self._write(exists=f"Audit event {event.id} already exists.") as conn:
            await conn.execute(sa.insert(audit_log).values(values))

    async def list_audit_events(self, query: AuditQuery) -> list[AuditEvent]:
        conditions: list[sa.ColumnElement[bool]] = []
        if query.starting_after is not None:
            cursor = await self._first(_CURSOR, event_id=query.starting_after)
            if cursor is None:
                raise ResourceNotFound(f"starting_after: no audit event {query.starting_after!r}.")
            # Typed, so SQLite compares the same naive UTC text the column holds.
            at, event_id = sa.literal(cursor["at"], UtcDateTime), sa.literal(cursor["id"], sa.Text)
            below = sa.tuple_(at, event_id)
            conditions.append(sa.tuple_(_a.at, _a.id) < below)
        # An empty filter text matches nothing stored; it is taken as "not given".
        filters: dict[str, Any] = {
            "workspace_id": query.workspace_id,
            "action": query.action,
            "actor": query.actor,
        }
        conditions += [audit_log.c[name] == value for name, value in filters.items() if value]
        if query.occurred_after is not None:
            conditions.append(_a.at >= query.occurred_after)
        if query.occurred_before is not None:
            conditions.append(_a.at < query.occurred_before)
        statement = (
            sa.select(audit_log)
            .where(*conditions)
            .order_by(_a.at.desc(), _a.id.desc())
            .limit(query.limit)
        )
        return [_event_from(row) for row in await self._all(statement)]


def _event_from(row: RowMapping) -> AuditEvent:
    return AuditEvent.model_validate({name: row[name] for name in _COLUMNS})
