"""SQL store methods for İYS consents (D33).

- A change is a compare-and-set: a new record is ``INSERT … ON CONFLICT DO NOTHING`` on the
  primary key, a change an ``UPDATE … WHERE status = <the status it was checked against>``;
  the history row goes in the same transaction, only when the record did. Two concurrent
  ONAYs of one address: one is stored, the other re-reads and is refused by İYS's rule.
- The gate's lookup (:meth:`consent_statuses`) is one ``SELECT … WHERE workspace_id,
  livemode, type = … AND recipient IN (…)`` on the primary key, for a whole bulk, kept for
  the store's ``cache_ttl`` (``serve``/``worker``: 1 s) like a workspace.
- The list is a keyset query like the suppression list: ``(created_at, id)`` below the
  cursor's, newest first (index ``ix_um_consents_list``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import RowMapping

from ..consents.models import Consent, ConsentChange
from ._sql_base import SqlBase
from ._tables import UtcDateTime, consent_changes, consents

if TYPE_CHECKING:
    from .._types import RecipientType
    from ..consents.rules import ConsentStatus, ConsentType
    from ..consents.store import ConsentKey, ConsentQuery

__all__ = ["ConsentsMixin", "change_from", "change_row", "consent_from"]

_c = consents.c
_h = consent_changes.c
_COLUMNS = ("workspace_id", "livemode", "type", "recipient", "recipient_type", "id", "status",
            "source", "consent_date", "iys_state", "created_at", "updated_at", "last_change_id",
            "iys_transaction_id", "iys_error_code", "iys_error_message")  # fmt: skip
_CHANGED = ("status", "source", "consent_date", "iys_state", "updated_at", "last_change_id",
            "iys_transaction_id", "iys_error_code", "iys_error_message")  # fmt: skip
_SCOPE = sa.and_(
    _c.workspace_id == sa.bindparam("workspace_id"),
    _c.livemode == sa.bindparam("livemode"),
)
_ONE = sa.select(consents).where(
    _SCOPE,
    _c.type == sa.bindparam("type"),
    _c.recipient == sa.bindparam("recipient"),
    _c.recipient_type == sa.bindparam("recipient_type"),
)
_BY_ID = sa.select(consents).where(_SCOPE, _c.id == sa.bindparam("consent_id"))
_STATUSES = sa.select(_c.recipient, _c.recipient_type, _c.status).where(
    _SCOPE,
    _c.type == sa.bindparam("type"),
    _c.recipient.in_(sa.bindparam("recipients", expanding=True)),
)
_HISTORY = (
    sa.select(consent_changes)
    .where(_h.consent_id == sa.bindparam("consent_id"))
    .order_by(_h.recorded_at, _h.id)
)


class ConsentsMixin(SqlBase):
    async def find_consent(
        self, workspace_id: str, livemode: bool, key: ConsentKey
    ) -> Consent | None:
        recipient, type_, recipient_type = key
        row = await self._first(
            _ONE,
            workspace_id=workspace_id,
            livemode=livemode,
            type=type_,
            recipient=recipient,
            recipient_type=recipient_type,
        )
        return None if row is None else _consent_from(row)

    async def get_consent(
        self, workspace_id: str, livemode: bool, consent_id: str
    ) -> Consent | None:
        row = await self._first(
            _BY_ID, workspace_id=workspace_id, livemode=livemode, consent_id=consent_id
        )
        return None if row is None else _consent_from(row)

    async def record_consent(
        self, consent: Consent, change: ConsentChange, *, previous: ConsentStatus | None
    ) -> bool:
        values = {name: getattr(consent, name) for name in _COLUMNS}
        if previous is None:
            statement: sa.Executable = (
                self._upsert(consents)
                .values(values)
                .on_conflict_do_nothing(
                    index_elements=[
                        _c.workspace_id,
                        _c.livemode,
                        _c.type,
                        _c.recipient,
                        _c.recipient_type,
                    ]
                )
            )
        else:
            statement = (
                sa.update(consents)
                .where(_c.id == consent.id, _c.status == previous)
                .values({name: values[name] for name in _CHANGED})
            )
        history = sa.insert(consent_changes).values(change_row(change))
        async with self._write(missing=f"Workspace {consent.workspace_id} not found.") as conn:
            if (await conn.execute(statement)).rowcount != 1:
                return False
            await conn.execute(history)
        return True

    async def consent_history(self, consent_id: str) -> list[ConsentChange]:
        rows = await self._all(_HISTORY, consent_id=consent_id)
        return [change_from(row) for row in rows]

    async def list_consents(self, query: ConsentQuery) -> list[Consent]:
        conditions: list[sa.ColumnElement[bool]] = [
            _c.workspace_id == query.workspace_id,
            _c.livemode == query.livemode,
        ]
        if query.recipients:
            conditions.append(_c.recipient.in_(query.recipients))
        if query.status is not None:
            conditions.append(_c.status == query.status)
        if query.older_than is not None:
            # Typed, so SQLite compares the same naive UTC text the column holds.
            at = sa.literal(query.older_than[0], UtcDateTime)
            below = sa.tuple_(at, sa.literal(query.older_than[1], sa.Text))
            conditions.append(sa.tuple_(_c.created_at, _c.id) < below)
        statement = (
            sa.select(consents)
            .where(*conditions)
            .order_by(_c.created_at.desc(), _c.id.desc())
            .limit(query.limit)
        )
        return [_consent_from(row) for row in await self._all(statement)]

    async def consent_statuses(
        self,
        workspace_id: str,
        livemode: bool,
        type_: ConsentType,
        recipients: Sequence[str],
    ) -> dict[tuple[str, RecipientType], ConsentStatus]:
        if not recipients:
            return {}

        async def load() -> tuple[tuple[str, RecipientType, ConsentStatus], ...]:
            rows = await self._all(
                _STATUSES,
                workspace_id=workspace_id,
                livemode=livemode,
                type=type_,
                recipients=list(recipients),
            )
            return tuple((row["recipient"], row["recipient_type"], row["status"]) for row in rows)

        # ``serve`` and ``worker`` keep the answer as long as a workspace (cache_ttl, 1 s):
        # a single commercial send then costs no query. A change this store writes drops
        # it at once; one another process writes (a pulled RET) is seen within the TTL.
        key = ("consent_statuses", workspace_id, str(livemode), type_, *recipients)
        found = await self._cached(key, load)
        return {(recipient, kind): status for recipient, kind, status in found}


def change_row(change: ConsentChange) -> dict[str, object]:
    """The ``um_consent_changes`` row of ``change``."""
    return {
        "id": change.id,
        "consent_id": change.consent_id,
        "status": change.status,
        "source": change.source,
        "consent_date": change.consent_date,
        "recorded_at": change.recorded_at,
        "iys_state": change.iys_state,
        "iys_transaction_id": change.iys_transaction_id,
    }


def change_from(row: RowMapping) -> ConsentChange:
    return ConsentChange(
        consent_id=row["consent_id"],
        status=row["status"],
        source=row["source"],
        consent_date=row["consent_date"],
        recorded_at=row["recorded_at"],
        id=row["id"],
        iys_state=row["iys_state"],
        iys_transaction_id=row["iys_transaction_id"],
    )


def consent_from(row: RowMapping) -> Consent:
    """The :class:`Consent` of an ``um_consents`` row."""
    return _consent_from(row)


def _consent_from(row: RowMapping) -> Consent:
    values: dict[str, Any] = {name: row[name] for name in _COLUMNS}
    values["livemode"] = bool(values["livemode"])
    return Consent(**values)
