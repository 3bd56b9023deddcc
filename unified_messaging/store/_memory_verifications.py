"""The in-memory store's verifications (D34): dicts under the store's lock.

Its half of :class:`~unified_messaging.verifications._store.VerificationStore`; the SQL store
does the same in SQL (``_sql_verifications``), and the Verify tests run on both.
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import TYPE_CHECKING

from .._errors import ResourceNotFound

if TYPE_CHECKING:
    from .._domain import Workspace
    from ..verifications._records import Verification, VerificationSettings

__all__ = ["MemoryVerificationsMixin"]


class MemoryVerificationsMixin:
    _lock: threading.Lock
    _workspaces: dict[str, Workspace]
    _verifications: dict[str, Verification]
    #: (workspace, mode, recipient) -> the id of its pending verification: the SQL unique
    #: index over pending rows, kept by hand.
    _pending_verifications: dict[tuple[str, bool, str], str]
    _verification_settings: dict[str, VerificationSettings]

    async def add_verification(self, verification: Verification) -> bool:
        key = (verification.workspace_id, verification.livemode, verification.to)
        with self._lock:
            if verification.workspace_id not in self._workspaces:
                raise ResourceNotFound(f"Workspace {verification.workspace_id} not found.")
            if key in self._pending_verifications:
                return False
            self._verifications[verification.id] = verification
            if verification.status == "pending":
                self._pending_verifications[key] = verification.id
            return True

    async def get_verification(
        self, workspace_id: str, livemode: bool, verification_id: str
    ) -> Verification | None:
        found = self._verifications.get(verification_id)
        if found is None or (found.workspace_id, found.livemode) != (workspace_id, livemode):
            return None
        return found

    async def pending_verification(
        self, workspace_id: str, livemode: bool, to: str
    ) -> Verification | None:
        found = self._pending_verifications.get((workspace_id, livemode, to))
        return None if found is None else self._verifications.get(found)

    async def replace_verification(self, verification: Verification) -> bool:
        key = (verification.workspace_id, verification.livemode, verification.to)
        with self._lock:
            stored = self._verifications.get(verification.id)
            if stored is None or stored.version != verification.version - 1:
                return False
            self._verifications[verification.id] = verification
            if verification.status != "pending":
                self._pending_verifications.pop(key, None)
            return True

    async def verifications_started(
        self, workspace_id: str, livemode: bool, to: str, since: datetime
    ) -> list[datetime]:
        return [
            v.created_at
            for v in list(self._verifications.values())
            if (v.workspace_id, v.livemode, v.to) == (workspace_id, livemode, to)
            and v.created_at > since
        ]

    async def get_verification_settings(self, workspace_id: str) -> VerificationSettings | None:
        return self._verification_settings.get(workspace_id)

    async def put_verification_settings(
        self, workspace_id: str, settings: VerificationSettings
    ) -> None:
        with self._lock:
            if workspace_id not in self._workspaces:
                raise ResourceNotFound(f"Workspace {workspace_id} not found.")
            self._verification_settings[workspace_id] = settings
