"""The in-memory store's half of :class:`~..verifications._ops_store.VerificationOpsStore`:
the guard's settings, conversion counts and recent verifications, from its own dicts."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import datetime
from typing import TYPE_CHECKING

from .._errors import ResourceNotFound
from ..verifications._ops_store import VerificationCount

if TYPE_CHECKING:
    from .._domain import Workspace
    from .._types import Channel
    from ..verifications._guard_rules import GuardSettings
    from ..verifications._records import Verification

__all__ = ["MemoryVerifyOpsMixin"]


class MemoryVerifyOpsMixin:
    _lock: threading.Lock
    _workspaces: dict[str, Workspace]
    _verifications: dict[str, Verification]
    _verification_guards: dict[str, GuardSettings]

    async def get_verification_guard(self, workspace_id: str) -> GuardSettings | None:
        return self._verification_guards.get(workspace_id)

    async def put_verification_guard(self, workspace_id: str, settings: GuardSettings) -> None:
        with self._lock:
            if workspace_id not in self._workspaces:
                raise ResourceNotFound(f"Workspace {workspace_id} not found.")
            self._verification_guards[workspace_id] = settings

    async def verification_counts(
        self, since: datetime, *, workspace_id: str | None = None, livemode: bool | None = None
    ) -> list[VerificationCount]:
        started: Counter[tuple[datetime, Channel, bool]] = Counter()
        approved: Counter[tuple[datetime, Channel, bool]] = Counter()
        for v in list(self._verifications.values()):
            if v.created_at < since or workspace_id not in (None, v.workspace_id):
                continue
            if livemode is not None and v.livemode != livemode:
                continue
            hour = v.created_at.replace(minute=0, second=0, microsecond=0)
            key = (hour, v.channel, v.livemode)
            started[key] += 1
            approved[key] += v.status == "approved"
        return [
            VerificationCount(hour, channel, mode, started[key], approved[key])
            for key in sorted(started, key=lambda k: (k[0], k[1], k[2]))
            for hour, channel, mode in [key]
        ]

    async def recent_verifications(
        self, workspace_id: str, livemode: bool, limit: int
    ) -> list[Verification]:
        mine = [
            v
            for v in list(self._verifications.values())
            if v.workspace_id == workspace_id and v.livemode == livemode
        ]
        mine.sort(key=lambda v: (v.created_at, v.id), reverse=True)
        return mine[:limit]
