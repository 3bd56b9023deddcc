"""The hand-over gate's consent rule (D33, D35 rule 4) over our own records: policy
``local``.

A commercial SMS (its class ``commercial_individual`` or ``commercial_merchant``, fixed at
acceptance) goes only to a recipient whose MESAJ consent of the matching recipient type is
``ONAY`` on record here; any other (``RET``, or no record) ends ``failed`` with
``IYS_CONSENT_MISSING`` and no provider call. Informational messages are never checked, and
a workspace whose policy is ``off`` (the default) leaves consent to the providers, as
before. A RET refuses commercial messages only; a suppression refuses everything (the
gate's rule 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final

from .._domain import Connection, ErrorInfo, MessageRecord, Workspace
from .._types import IysMode, RecipientType
from .store import ConsentStore

__all__ = ["CONSENT_MISSING", "LocalConsentCheck", "commercial_types", "consent_missing"]

CONSENT_MISSING: Final = "IYS_CONSENT_MISSING"
_RECIPIENT_TYPE: Final[dict[IysMode, RecipientType]] = {
    "commercial_individual": "BIREYSEL",
    "commercial_merchant": "TACIR",
}


def consent_missing(to: str, recipient_type: RecipientType) -> ErrorInfo:
    """Why the gate stopped a commercial message (201 ``failed``, D14)."""
    return ErrorInfo(
        CONSENT_MISSING,
        f"{to} has no ONAY on record for commercial messages (MESAJ, {recipient_type}).",
    )


def commercial_types(
    records: Sequence[MessageRecord], connection: Connection
) -> dict[int, RecipientType]:
    """The commercial messages among ``records`` (by index) and the recipient type whose
    consent each needs. A message stored before D33 has no class of its own: its hop's
    mode, as it sends."""
    return {
        i: _RECIPIENT_TYPE[mode]
        for i, record in enumerate(records)
        if (mode := record.iys_mode or connection.iys_mode) in _RECIPIENT_TYPE
    }


class LocalConsentCheck:
    """:class:`~.._routing.gate.ConsentCheck` over the consents store."""

    def __init__(self, store: ConsentStore) -> None:
        self._store = store

    async def refusals(
        self,
        records: Sequence[MessageRecord],
        connection: Connection,
        *,
        now: datetime,
        workspace: Workspace,
    ) -> list[ErrorInfo | None]:
        """One store lookup for all ``records`` (a bulk's), and only when the workspace's
        policy is ``local``, the hop is SMS (İYS's MESAJ) and some message is commercial."""
        verdicts: list[ErrorInfo | None] = [None] * len(records)
        if workspace.consent_policy != "local" or connection.channel != "sms":
            return verdicts
        types = commercial_types(records, connection)
        if not types:
            return verdicts
        first = records[next(iter(types))]
        recipients = sorted({records[i].to for i in types})
        statuses = await self._store.consent_statuses(
            first.workspace_id, first.livemode, "MESAJ", recipients
        )
        for i, recipient_type in types.items():
            if statuses.get((records[i].to, recipient_type)) != "ONAY":
                verdicts[i] = consent_missing(records[i].to, recipient_type)
        return verdicts
