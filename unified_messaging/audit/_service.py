"""``messenger.audit``: the audit log (D32), read-only: every change made through the
namespaces' methods, newest first. The writer is :func:`._audit_actions.audited`."""

from __future__ import annotations

from datetime import datetime

from ..store.base import Store
from ._events import DEFAULT_AUDIT_LIMIT, AuditPage, audit_page

__all__ = ["AuditLog"]


class AuditLog:
    """``messenger.audit.list(workspace_id=...)``: who changed what, and when."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def __repr__(self) -> str:
        return "<messenger.audit>"

    async def list(
        self,
        *,
        workspace_id: str | None = None,
        action: str | None = None,
        limit: int = DEFAULT_AUDIT_LIMIT,
        starting_after: str | None = None,
        actor: str | None = None,
        occurred_after: datetime | None = None,
        occurred_before: datetime | None = None,
    ) -> AuditPage:
        """The audit log, newest first: every change made through the admin methods (D32).

        Filters: ``workspace_id``, ``action`` (one of ``AUDIT_ACTIONS``), ``actor`` (``cli``,
        ``library``, ``dashboard:<e-mail>``), ``occurred_after`` (inclusive) and
        ``occurred_before`` (exclusive). ``limit`` 1-100 (default 50); ``starting_after``
        the last event id of the previous page (Stripe's cursor).
        """
        return await audit_page(
            self._store,
            workspace_id=workspace_id,
            action=action,
            actor=actor,
            occurred_after=occurred_after,
            occurred_before=occurred_before,
            limit=limit,
            starting_after=starting_after,
        )
