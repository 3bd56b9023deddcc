"""The store's part for consents (D33): the protocol slice :class:`ConsentStore` and its
query. The memory store (``store/_memory_consents``) and the SQL store
(``store/_sql_consents``) implement it; the store contract tests hold them to one answer.

One row per workspace, mode (D2), address, type and recipient type; its history is
append-only. A change is a compare-and-set on the status it was checked against, so two
concurrent changes of one record cannot both pass İYS's "no ONAY after an ONAY" rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from .._types import RecipientType
from .rules import ConsentStatus, ConsentType

if TYPE_CHECKING:  # the records' module loads pydantic; the protocol needs only their names
    from .models import Consent, ConsentChange

__all__ = ["ConsentKey", "ConsentQuery", "ConsentStore"]

#: A consent's identity within a workspace and mode: address, type and recipient type.
ConsentKey = tuple[str, ConsentType, RecipientType]


@dataclass(frozen=True, slots=True)
class ConsentQuery:
    """Which consents of one workspace and mode to list, newest first, below a cursor."""

    workspace_id: str
    livemode: bool
    #: Any of these addresses (a filter typed as a number or an e-mail, in its forms).
    recipients: tuple[str, ...] = ()
    status: ConsentStatus | None = None
    older_than: tuple[datetime, str] | None = None
    limit: int = 20


class ConsentStore(Protocol):
    """Protocol: where consents and their history are kept."""

    async def find_consent(
        self, workspace_id: str, livemode: bool, key: ConsentKey
    ) -> Consent | None:
        """The record of ``key`` (address, type, recipient type), if there is one."""
        ...

    async def get_consent(
        self, workspace_id: str, livemode: bool, consent_id: str
    ) -> Consent | None: ...

    async def record_consent(
        self, consent: Consent, change: ConsentChange, *, previous: ConsentStatus | None
    ) -> bool:
        """Store ``consent`` (new, or its new state) and append ``change`` to its history,
        in one transaction, if the record still is as it was checked: absent when
        ``previous`` is ``None``, else of status ``previous``. ``False``: it was not (a
        concurrent change won), and nothing was written. Raises ``ResourceNotFound`` for a
        workspace that does not exist."""
        ...

    async def consent_history(self, consent_id: str) -> list[ConsentChange]:
        """Every change of one consent, oldest first."""
        ...

    async def list_consents(self, query: ConsentQuery) -> list[Consent]: ...

    async def consent_statuses(
        self,
        workspace_id: str,
        livemode: bool,
        type_: ConsentType,
        recipients: Sequence[str],
    ) -> dict[tuple[str, RecipientType], ConsentStatus]:
        """The status on record for each of ``recipients`` (both recipient types), in one
        lookup: what the hand-over gate asks for a whole bulk."""
        ...
