"""The hand-over gate's consent rule (D33, D35 rule 4) under every policy.

- ``off``: nothing is checked (the providers decide, as before);
- ``local``: :class:`~..consents.check.LocalConsentCheck`: our records only;
- ``iys``: our records first; a commercial SMS whose recipient we hold no record of is
  looked up in İYS (:class:`~.lookup.StatusLookups`, cached), the simulated İYS for a test
  message. ONAY goes; RET or no record anywhere ends ``failed`` with
  ``IYS_CONSENT_MISSING`` (201), with no provider call. If İYS cannot be asked in time, the
  message is held (:data:`HOLD`) and asked about again, within the workspace's queue TTL.

Why a lookup and not a refusal for an unknown recipient: D33 says unknown recipients are
looked up; a brand whose consents were collected elsewhere (İYS's portal, another system)
holds ONAYs we have no record of, and refusing them would stop lawful messages. The cost is
one İYS round trip per unknown recipient per cache lifetime, all the unknown recipients of a
bulk at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Final

from .._domain import Connection, ErrorInfo, MessageRecord, Workspace
from .._routing.verdicts import HoldUntil
from .._types import RecipientType
from ..consents.check import (
    CONSENT_MISSING,
    LocalConsentCheck,
    commercial_types,
    consent_missing,
)
from .errors import IysCredentialsRefused, IysUnavailable

if TYPE_CHECKING:
    from ..consents.store import ConsentStore
    from .lookup import StatusLookups

__all__ = ["HOLD", "IysConsentCheck"]

#: How long a message waits when İYS cannot be asked about its recipient.
HOLD: Final = timedelta(seconds=30)


class IysConsentCheck:
    """:class:`~.._routing.gate.ConsentCheck` under the workspace's policy."""

    def __init__(self, store: ConsentStore, lookups: StatusLookups) -> None:
        self._store = store
        self._local = LocalConsentCheck(store)
        self._lookups = lookups

    async def refusals(
        self,
        records: Sequence[MessageRecord],
        connection: Connection,
        *,
        now: datetime,
        workspace: Workspace,
    ) -> Sequence[ErrorInfo | HoldUntil | None]:
        if workspace.consent_policy == "local":
            return await self._local.refusals(records, connection, now=now, workspace=workspace)
        verdicts: list[ErrorInfo | HoldUntil | None] = [None] * len(records)
        if workspace.consent_policy != "iys" or connection.channel != "sms":
            return verdicts
        types = commercial_types(records, connection)
        if not types:
            return verdicts
        first = records[next(iter(types))]
        statuses = await self._store.consent_statuses(
            first.workspace_id, first.livemode, "MESAJ", sorted({records[i].to for i in types})
        )
        unknown: dict[tuple[str, RecipientType], list[int]] = {}
        for i, recipient_type in types.items():
            status = statuses.get((records[i].to, recipient_type))
            if status == "RET":
                verdicts[i] = consent_missing(records[i].to, recipient_type)
            elif status is None:
                unknown.setdefault((records[i].to, recipient_type), []).append(i)
        if not unknown:
            return verdicts
        try:
            answers = await self._lookups.statuses(
                first.workspace_id, first.livemode, list(unknown)
            )
        except (IysUnavailable, IysCredentialsRefused) as exc:
            wait = max(HOLD, timedelta(seconds=getattr(exc, "retry_after", None) or 0))
            for indices in unknown.values():
                for i in indices:
                    verdicts[i] = HoldUntil(now + wait)
            return verdicts
        for (to, recipient_type), indices in unknown.items():
            status = answers.get((to, recipient_type))
            if status != "ONAY":
                for i in indices:
                    verdicts[i] = _missing_in_iys(to, recipient_type, status)
        return verdicts


def _missing_in_iys(to: str, recipient_type: RecipientType, status: str | None) -> ErrorInfo:
    """Why the gate stopped a message whose recipient İYS was asked about."""
    said = "RET" if status == "RET" else "no record"
    return ErrorInfo(
        CONSENT_MISSING,
        f"{to} has no ONAY on record here, and İYS has {said}, for commercial messages "
        f"(MESAJ, {recipient_type}).",
    )
