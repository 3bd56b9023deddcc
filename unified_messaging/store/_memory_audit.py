"""The in-memory store's audit log (D32): a list that is only ever appended to.

Its half of ``Store.append_audit_event`` and ``Store.list_audit_events``; the SQL store does
the same in SQL (``_sql_audit``), and the store contract tests hold the two to the same
answers.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime

from .._errors import ResourceNotFound
from ..audit._events import AuditEvent, AuditQuery

__all__ = ["MemoryAuditMixin", "audit_matches", "audit_order"]


def audit_order(event: AuditEvent) -> tuple[datetime, str]:
    """The list's sort key (descending): newest first, ties by id."""
    return event.at, event.id


def audit_matches(
    event: AuditEvent, query: AuditQuery, older_than: tuple[datetime, str] | None
) -> bool:
    """Does ``event`` belong in the answer to ``query`` (below the cursor ``older_than``)?"""
    checks = (
        not query.workspace_id or event.workspace_id == query.workspace_id,
        not query.action or event.action == query.action,
        not query.actor or event.actor == query.actor,
        query.occurred_after is None or event.at >= query.occurred_after,
        query.occurred_before is None or event.at < query.occurred_before,
        older_than is None or audit_order(event) < older_than,
    )
    return all(checks)


class MemoryAuditMixin:
    _lock: threading.Lock
    _audit_log: list[AuditEvent]

    @asynccontextmanager
    async def atomic(self) -> AsyncIterator[None]:
        # Each write applies at once (see Store.atomic): there is no transaction to join.
        yield

    async def append_audit_event(self, event: AuditEvent) -> None:
        with self._lock:
            self._audit_log.append(event)

    async def list_audit_events(self, query: AuditQuery) -> list[AuditEvent]:
        with self._lock:
            events = list(self._audit_log)
        older_than = None
        if query.starting_after is not None:
            cursor = next((e for e in events if e.id == query.starting_after), None)
            if cursor is None:
                raise ResourceNotFound(f"starting_after: no audit event {query.starting_after!r}.")
            older_than = audit_order(cursor)
        found = [e for e in events if audit_matches(e, query, older_than)]
        found.sort(key=audit_order, reverse=True)
        return found[: query.limit]
