"""The store's part of the audit log: the protocol the memory and SQL stores implement.

:class:`~unified_messaging.store.base.Store` is the sum of every room's part."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    # The records bring pydantic, which the command line's ``--help`` never needs.
    from ._events import AuditEvent, AuditQuery

__all__ = ["AuditStore"]


class AuditStore(Protocol):
    """Protocol: the audit log (D32): append and list, nothing else; no row is ever
    changed or deleted."""

    async def append_audit_event(self, event: AuditEvent) -> None:
        """Append one event (inside :meth:`atomic`, with the change it records)."""
        ...

    async def list_audit_events(self, query: AuditQuery) -> list[AuditEvent]:
        """Up to ``query.limit`` events that match it, newest first: ``at`` descending, ties
        by ``id`` descending. :class:`ResourceNotFound` if ``query.starting_after`` names no
        stored event."""
        ...
