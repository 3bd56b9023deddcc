"""The in-memory store's İYS half (D33): connections by workspace, registrations by change.

Its half of :class:`~..iys.store.IysStore`; the SQL store does the same in SQL
(``_sql_iys``), and the store contract tests hold the two to the same answers.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from .._errors import ResourceNotFound
from ..iys.records import (
    BULK_IN_FLIGHT,
    IysConnection,
    IysOutcome,
    IysRegistration,
    IysToken,
    PullSource,
)

if TYPE_CHECKING:
    from .._domain import Workspace
    from ..consents.models import Consent, ConsentChange

__all__ = ["MemoryIysMixin"]


class MemoryIysMixin:
    _lock: threading.Lock
    _workspaces: dict[str, Workspace]
    _consents: dict[tuple[str, bool, str, str, str], Consent]
    _consent_changes: dict[str, list[ConsentChange]]
    _iys_connections: dict[str, IysConnection]
    _iys_registrations: dict[str, IysRegistration]

    async def save_iys_connection(self, connection: IysConnection) -> None:
        with self._lock:
            if connection.workspace_id not in self._workspaces:
                raise ResourceNotFound(f"Workspace {connection.workspace_id} not found.")
            self._iys_connections[connection.workspace_id] = connection

    async def get_iys_connection(self, workspace_id: str) -> IysConnection | None:
        with self._lock:
            return self._iys_connections.get(workspace_id)

    async def delete_iys_connection(self, workspace_id: str) -> bool:
        with self._lock:
            return self._iys_connections.pop(workspace_id, None) is not None

    async def swap_iys_token(self, workspace_id: str, version: int, token: IysToken) -> bool:
        with self._lock:
            stored = self._iys_connections.get(workspace_id)
            if stored is None or stored.token.version != version:
                return False
            self._iys_connections[workspace_id] = replace(stored, token=token)
            return True

    async def swap_iys_password(self, workspace_id: str, expected: str, sealed: str) -> bool:
        with self._lock:
            stored = self._iys_connections.get(workspace_id)
            if stored is None or stored.password != expected:
                return False
            self._iys_connections[workspace_id] = replace(stored, password=sealed)
            return True

    async def set_iys_cursor(
        self, workspace_id: str, source: PullSource, after: str | None, pulled_at: datetime
    ) -> None:
        with self._lock:
            stored = self._iys_connections.get(workspace_id)
            if stored is None:
                return
            if source == "HS":
                stored = replace(stored, after_hs=after, pulled_at=pulled_at)
            else:
                stored = replace(stored, after_iys=after, pulled_at=pulled_at)
            self._iys_connections[workspace_id] = stored

    async def consent_change(self, change_id: str) -> tuple[Consent, ConsentChange] | None:
        with self._lock:
            found = self._change(change_id)
            if found is None:
                return None
            consent = self._consent_by_id(found.consent_id)
            return None if consent is None else (consent, found)

    async def pending_iys_changes(
        self, workspace_id: str, livemode: bool, limit: int
    ) -> list[ConsentChange]:
        with self._lock:
            ids = {
                c.id
                for c in self._consents.values()
                if c.workspace_id == workspace_id and c.livemode == livemode
            }
            found = [
                change
                for consent_id in ids
                for change in self._consent_changes.get(consent_id, ())
                if change.iys_state == "pending"
            ]
        found.sort(key=lambda change: (change.recorded_at, change.id))
        return found[:limit]

    async def iys_registration(self, change_id: str) -> IysRegistration | None:
        with self._lock:
            return self._iys_registrations.get(change_id)

    async def begin_iys_attempts(
        self, change_ids: Sequence[str], *, now: datetime, bulk: bool = False
    ) -> dict[str, int]:
        counted: dict[str, int] = {}
        with self._lock:
            for change_id in change_ids:
                change = self._change(change_id)
                if change is None or change.iys_state != "pending":
                    continue
                registration = self._iys_registrations.get(change_id) or IysRegistration(change_id)
                if registration.request_id is not None:
                    continue
                counted[change_id] = registration.attempts
                self._iys_registrations[change_id] = replace(
                    registration,
                    attempts=registration.attempts + 1,
                    attempted_at=now,
                    request_id=BULK_IN_FLIGHT if bulk else None,
                )
        return counted

    async def undo_iys_attempt(self, change_id: str) -> None:
        with self._lock:
            registration = self._iys_registrations.get(change_id)
            if registration is not None and registration.attempts > 0:
                self._iys_registrations[change_id] = replace(
                    registration, attempts=registration.attempts - 1, request_id=None
                )

    async def leave_iys_bulk(self, change_id: str) -> None:
        with self._lock:
            registration = self._iys_registrations.get(change_id)
            if registration is not None and registration.request_id == BULK_IN_FLIGHT:
                self._iys_registrations[change_id] = replace(registration, request_id=None)

    async def set_iys_request(self, request_id: str, subrequests: Mapping[str, str]) -> None:
        with self._lock:
            for change_id, subrequest_id in subrequests.items():
                registration = self._iys_registrations.get(change_id) or IysRegistration(change_id)
                self._iys_registrations[change_id] = replace(
                    registration, request_id=request_id, subrequest_id=subrequest_id
                )

    async def settle_iys_registration(self, change_id: str, outcome: IysOutcome) -> bool:
        with self._lock:
            change = self._change(change_id)
            if change is None or change.iys_state != "pending":
                return False
            settled = replace(
                change, iys_state=outcome.state, iys_transaction_id=outcome.transaction_id
            )
            self._replace_change(settled)
            consent = self._consent_by_id(change.consent_id)
            if consent is not None and consent.last_change_id == change_id:
                self._put_consent(
                    replace(
                        consent,
                        iys_state=outcome.state,
                        iys_transaction_id=outcome.transaction_id,
                        iys_error_code=outcome.error_code,
                        iys_error_message=outcome.error_message,
                    )
                )
            return True

    async def find_iys_transaction(
        self, workspace_id: str, livemode: bool, transaction_id: str
    ) -> ConsentChange | None:
        with self._lock:
            for consent in self._consents.values():
                if consent.workspace_id != workspace_id or consent.livemode != livemode:
                    continue
                for change in self._consent_changes.get(consent.id, ()):
                    if change.iys_transaction_id == transaction_id:
                        return change
        return None

    async def add_consent_change(self, change: ConsentChange) -> None:
        with self._lock:
            if self._consent_by_id(change.consent_id) is None:
                raise ResourceNotFound(f"Consent {change.consent_id} not found.")
            self._consent_changes.setdefault(change.consent_id, []).append(change)

    async def fill_iys_transaction(self, change_id: str, transaction_id: str) -> None:
        with self._lock:
            change = self._change(change_id)
            if change is None or change.iys_transaction_id is not None:
                return
            self._replace_change(replace(change, iys_transaction_id=transaction_id))
            consent = self._consent_by_id(change.consent_id)
            if consent is not None and consent.last_change_id == change_id:
                self._put_consent(replace(consent, iys_transaction_id=transaction_id))

    # -- helpers (the lock held)

    def _change(self, change_id: str) -> ConsentChange | None:
        for changes in self._consent_changes.values():
            for change in changes:
                if change.id == change_id:
                    return change
        return None

    def _replace_change(self, change: ConsentChange) -> None:
        changes = self._consent_changes[change.consent_id]
        for i, stored in enumerate(changes):
            if stored.id == change.id:
                changes[i] = change
                return

    def _consent_by_id(self, consent_id: str) -> Consent | None:
        return next((c for c in self._consents.values() if c.id == consent_id), None)

    def _put_consent(self, consent: Consent) -> None:
        key = (
            consent.workspace_id,
            consent.livemode,
            consent.type,
            consent.recipient,
            consent.recipient_type,
        )
        self._consents[key] = consent
