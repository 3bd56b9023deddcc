"""The in-memory store's suppression list: a dict keyed as the SQL primary key.

Its half of the ``Store`` suppression methods; the SQL store does the same in SQL
(``_sql_suppressions``), and the store contract tests hold the two to the same answers.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from .._errors import ResourceNotFound

if TYPE_CHECKING:
    from .._domain import Workspace
    from .._types import Channel
    from ..suppressions._rules import Suppression
    from .base import SuppressionQuery

__all__ = ["MemorySuppressionsMixin"]

_Key = tuple[str, bool, str, str]


def _order(entry: Suppression) -> tuple[datetime, str]:
    return entry.created_at, entry.id


class MemorySuppressionsMixin:
    _lock: threading.Lock
    _workspaces: dict[str, Workspace]
    _suppressions: dict[_Key, Suppression]

    async def add_suppression(self, entry: Suppression) -> tuple[Suppression, bool]:
        key = (entry.workspace_id, entry.livemode, entry.channel, entry.recipient)
        with self._lock:
            if entry.workspace_id not in self._workspaces:
                raise ResourceNotFound(f"Workspace {entry.workspace_id} not found.")
            stored = self._suppressions.get(key)
            if stored is not None:
                return stored, False
            self._suppressions[key] = entry
            return entry, True

    async def get_suppression(
        self, workspace_id: str, livemode: bool, suppression_id: str
    ) -> Suppression | None:
        with self._lock:
            entries = list(self._suppressions.values())
        return next(
            (
                e
                for e in entries
                if e.id == suppression_id
                and e.workspace_id == workspace_id
                and e.livemode == livemode
            ),
            None,
        )

    async def remove_suppression(
        self, workspace_id: str, livemode: bool, channel: Channel, recipient: str
    ) -> Suppression | None:
        with self._lock:
            return self._suppressions.pop((workspace_id, livemode, channel, recipient), None)

    async def list_suppressions(self, query: SuppressionQuery) -> list[Suppression]:
        with self._lock:
            entries = list(self._suppressions.values())
        found = [
            e
            for e in entries
            if e.workspace_id == query.workspace_id
            and e.livemode == query.livemode
            and (query.channel is None or e.channel == query.channel)
            and (not query.recipients or e.recipient in query.recipients)
            and (query.older_than is None or _order(e) < query.older_than)
        ]
        found.sort(key=_order, reverse=True)
        return found[: query.limit]

    async def suppressed(
        self, workspace_id: str, livemode: bool, channel: Channel, recipients: Sequence[str]
    ) -> set[str]:
        with self._lock:
            return {
                to
                for to in recipients
                if (workspace_id, livemode, channel, to) in self._suppressions
            }
