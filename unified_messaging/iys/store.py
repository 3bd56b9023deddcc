"""The store's part for İYS (D33): the protocol slice :class:`IysStore`. The memory store
(``store/_memory_iys``) and the SQL store (``store/_sql_iys``) implement it; the store
contract tests hold them to one answer.

- The connection: one row per workspace; the shared token changes only by compare-and-set
  on its ``version`` (:meth:`IysStore.swap_iys_token`), so two processes never both fetch.
- Registration: a change is registered through its own work item, which one worker holds at
  a time; :meth:`IysStore.begin_iys_attempts` counts an attempt before the call that may
  reach İYS, so a worker that finds an attempt already counted knows a process died after
  the call may have gone out, and asks İYS before sending again.
- Pulled changes: appended once each (İYS's transaction id).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from .records import IysConnection, IysOutcome, IysRegistration, IysToken, PullSource

if TYPE_CHECKING:  # the records' module loads pydantic; the protocol needs only their names
    from ..consents.models import Consent, ConsentChange

__all__ = ["IysStore"]


class IysStore(Protocol):
    """Protocol: İYS connections, the shared token, registrations and pulled changes."""

    async def save_iys_connection(self, connection: IysConnection) -> None:
        """Store the workspace's connection, replacing one it had (its token and cursors
        with it). ``ResourceNotFound`` for a workspace that does not exist."""
        ...

    async def get_iys_connection(self, workspace_id: str) -> IysConnection | None: ...

    async def delete_iys_connection(self, workspace_id: str) -> bool: ...

    async def swap_iys_token(self, workspace_id: str, version: int, token: IysToken) -> bool:
        """Store ``token`` if the stored token still has ``version``; ``False`` (nothing
        written) if another process changed it first, or the connection is gone."""
        ...

    async def swap_iys_password(self, workspace_id: str, expected: str, sealed: str) -> bool:
        """Store ``sealed`` as the connection's password while it still is ``expected``
        (a vault rotation re-sealing it); ``False`` if it changed or is gone."""
        ...

    async def set_iys_cursor(
        self, workspace_id: str, source: PullSource, after: str | None, pulled_at: datetime
    ) -> None:
        """Where the next pull of ``source`` starts (İYS's ``after``)."""
        ...

    async def consent_change(self, change_id: str) -> tuple[Consent, ConsentChange] | None:
        """A change and the consent it belongs to (as it is now)."""
        ...

    async def pending_iys_changes(
        self, workspace_id: str, livemode: bool, limit: int
    ) -> list[ConsentChange]:
        """Changes of the workspace and mode not yet registered or refused, oldest first."""
        ...

    async def iys_registration(self, change_id: str) -> IysRegistration | None: ...

    async def begin_iys_attempts(
        self, change_ids: Sequence[str], *, now: datetime, bulk: bool = False
    ) -> dict[str, int]:
        """Count an attempt (made ``now``) for each of ``change_ids`` that is still pending
        and in no bulk request, in one transaction, before the call that may reach İYS;
        ``bulk``: they go in one bulk request (``request_id`` :data:`BULK_IN_FLIGHT` until
        İYS answers). Returns each counted change's attempts before this one (0: it never
        went out)."""
        ...

    async def undo_iys_attempt(self, change_id: str) -> None:
        """The attempt just counted surely never reached İYS (refused before it was sent):
        uncount it, and take it out of the bulk it was to go in."""
        ...

    async def leave_iys_bulk(self, change_id: str) -> None:
        """A change whose bulk request was never answered is given up on that bulk: its
        own registration goes on (asking İYS first: the attempt stays counted)."""
        ...

    async def set_iys_request(self, request_id: str, subrequests: Mapping[str, str]) -> None:
        """The changes (``change id → subrequest id``) ride in İYS's bulk request
        ``request_id``."""
        ...

    async def settle_iys_registration(self, change_id: str, outcome: IysOutcome) -> bool:
        """Record what became of a pending change, on it and, when it is its consent's
        current change, on the consent. ``False`` (nothing written) when it was settled
        already."""
        ...

    async def find_iys_transaction(
        self, workspace_id: str, livemode: bool, transaction_id: str
    ) -> ConsentChange | None:
        """The change of the workspace and mode with İYS's ``transaction_id``, if any."""
        ...

    async def add_consent_change(self, change: ConsentChange) -> None:
        """Append a change to a consent's history without changing the consent (an older
        change pulled from İYS)."""
        ...

    async def fill_iys_transaction(self, change_id: str, transaction_id: str) -> None:
        """İYS's transaction id of a change registered without one (found registered by a
        status lookup), learnt from a pull."""
        ...
