"""The in-memory store's consents (D33): a dict keyed as the SQL primary key, and a list of
changes per consent.

Its half of :class:`~..consents.store.ConsentStore`; the SQL store does the same in SQL
(``_sql_consents``), and the store contract tests hold the two to the same answers.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from .._errors import ResourceNotFound

if TYPE_CHECKING:
    from .._domain import Workspace
    from .._types import RecipientType
    from ..consents.models import Consent, ConsentChange
    from ..consents.rules import ConsentStatus, ConsentType
    from ..consents.store import ConsentKey, ConsentQuery

__all__ = ["MemoryConsentsMixin"]

#: workspace, livemode, type, recipient, recipient type: the SQL primary key's order.
_Key = tuple[str, bool, str, str, str]


def _key(consent: Consent) -> _Key:
    return (
        consent.workspace_id,
        consent.livemode,
        consent.type,
        consent.recipient,
        consent.recipient_type,
    )


def _order(consent: Consent) -> tuple[datetime, str]:
    return consent.created_at, consent.id


class MemoryConsentsMixin:
    _lock: threading.Lock
    _workspaces: dict[str, Workspace]
    _consents: dict[_Key, Consent]
    _consent_changes: dict[str, list[ConsentChange]]

    async def find_consent(
        self, workspace_id: str, livemode: bool, key: ConsentKey
    ) -> Consent | None:
        recipient, type_, recipient_type = key
        with self._lock:
            return self._consents.get((workspace_id, livemode, type_, recipient, recipient_type))

    async def get_consent(
        self, workspace_id: str, livemode: bool, consent_id: str
    ) -> Consent | None:
        with self._lock:
            consents = list(self._consents.values())
        return next(
            (
                c
                for c in consents
                if c.id == consent_id and c.workspace_id == workspace_id and c.livemode == livemode
            ),
            None,
        )

    async def record_consent(
        self, consent: Consent, change: ConsentChange, *, previous: ConsentStatus | None
    ) -> bool:
        key = _key(consent)
        with self._lock:
            if consent.workspace_id not in self._workspaces:
                raise ResourceNotFound(f"Workspace {consent.workspace_id} not found.")
            stored = self._consents.get(key)
            if (None if stored is None else stored.status) != previous:
                return False
            self._consents[key] = consent
            self._consent_changes.setdefault(consent.id, []).append(change)
            return True

    async def consent_history(self, consent_id: str) -> list[ConsentChange]:
        with self._lock:
            return list(self._consent_changes.get(consent_id, ()))

    async def list_consents(self, query: ConsentQuery) -> list[Consent]:
        with self._lock:
            consents = list(self._consents.values())
        found = [
            c
            for c in consents
            if c.workspace_id == query.workspace_id
            and c.livemode == query.livemode
            and (not query.recipients or c.recipient in query.recipients)
            and (query.status is None or c.status == query.status)
            and (query.older_than is None or _order(c) < query.older_than)
        ]
        found.sort(key=_order, reverse=True)
        return found[: query.limit]

    async def consent_statuses(
        self,
        workspace_id: str,
        livemode: bool,
        type_: ConsentType,
        recipients: Sequence[str],
    ) -> dict[tuple[str, RecipientType], ConsentStatus]:
        found: dict[tuple[str, RecipientType], ConsentStatus] = {}
        with self._lock:
            for recipient in recipients:
                for recipient_type in ("BIREYSEL", "TACIR"):
                    key = (workspace_id, livemode, type_, recipient, recipient_type)
                    consent = self._consents.get(key)
                    if consent is not None:
                        found[(recipient, consent.recipient_type)] = consent.status
        return found
