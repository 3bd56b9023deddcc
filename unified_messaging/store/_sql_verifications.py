"""SQL store methods for Verify (D34).

- A start is one ``INSERT``; the unique index over ``(workspace_id, livemode, pending_to)``
  (``pending_to`` is NULL once a verification is no longer pending) refuses a second pending
  verification for a recipient, on SQLite and PostgreSQL alike, so of concurrent starts one
  inserts and the others learn there is one (``False``).
- Every change is ``UPDATE … WHERE id = … AND version = …``: a compare-and-set, so of
  concurrent checks one changes the row and the others re-read it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import RowMapping

from ..verifications._records import CodeSend, Verification, VerificationSettings
from ._sql_base import SqlBase
from ._tables import verification_settings, verifications

__all__ = ["SqlVerificationsMixin", "verification_of"]

_v = verifications.c
_s = verification_settings.c
_COLUMNS = ("id", "workspace_id", "livemode", "to", "channel", "status", "code_digest",
            "code_length", "locale", "created_at", "updated_at", "expires_at", "max_checks",
            "wrong_checks", "version")  # fmt: skip
_ONE = sa.select(verifications).where(
    _v.id == sa.bindparam("verification_id"),
    _v.workspace_id == sa.bindparam("workspace_id"),
    _v.livemode == sa.bindparam("livemode"),
)
_PENDING = sa.select(verifications).where(
    _v.workspace_id == sa.bindparam("workspace_id"),
    _v.livemode == sa.bindparam("livemode"),
    _v.pending_to == sa.bindparam("to"),
)
_STARTED = sa.select(_v.created_at).where(
    _v.workspace_id == sa.bindparam("workspace_id"),
    _v.livemode == sa.bindparam("livemode"),
    _v.to == sa.bindparam("to"),
    _v.created_at > sa.bindparam("since", type_=verifications.c.created_at.type),
)
_SETTINGS = sa.select(verification_settings).where(_s.workspace_id == sa.bindparam("workspace_id"))
#: A verification's columns as one change writes them (``_row``), each a typed bind
#: parameter: the statement is built once, not coerced from a dict on every check.
_WRITTEN = (*_COLUMNS, "pending_to", "sends")
_REPLACE = (
    sa.update(verifications)
    .where(_v.id == sa.bindparam("b_id"), _v.version == sa.bindparam("b_expected"))
    .values({
        name: sa.bindparam(f"v_{name}", type_=verifications.c[name].type)
        for name in _WRITTEN if name != "id"
    })
)  # fmt: skip


class SqlVerificationsMixin(SqlBase):
    async def add_verification(self, verification: Verification) -> bool:
        # In the group commit of the hot path (one fsync with the writes in flight, no cache
        # dropped); a recipient's pending one is a conflict that inserts nothing, not an
        # error, which would roll the whole group back.
        insert = self._upsert(verifications).on_conflict_do_nothing()
        values = _row(verification)

        def add(conn: sa.Connection) -> bool:
            return conn.execute(insert, values).rowcount == 1

        return await self._transact(
            add, missing=f"Workspace {verification.workspace_id} not found."
        )

    async def get_verification(
        self, workspace_id: str, livemode: bool, verification_id: str
    ) -> Verification | None:
        row = await self._first(
            _ONE, verification_id=verification_id, workspace_id=workspace_id, livemode=livemode
        )
        return None if row is None else verification_of(row)

    async def pending_verification(
        self, workspace_id: str, livemode: bool, to: str
    ) -> Verification | None:
        row = await self._first(_PENDING, workspace_id=workspace_id, livemode=livemode, to=to)
        return None if row is None else verification_of(row)

    async def replace_verification(self, verification: Verification) -> bool:
        params = {f"v_{name}": value for name, value in _row(verification).items()}
        params |= {"b_id": verification.id, "b_expected": verification.version - 1}
        del params["v_id"]

        def change(conn: sa.Connection) -> bool:
            return conn.execute(_REPLACE, params).rowcount == 1

        return await self._transact(change)

    async def verifications_started(
        self, workspace_id: str, livemode: bool, to: str, since: datetime
    ) -> list[datetime]:
        found = await self._column(
            _STARTED, workspace_id=workspace_id, livemode=livemode, to=to, since=since
        )
        return list(found)

    async def get_verification_settings(self, workspace_id: str) -> VerificationSettings | None:
        row = await self._first(_SETTINGS, workspace_id=workspace_id)
        if row is None:
            return None
        return VerificationSettings(
            max_checks=row["max_checks"],
            max_sends=row["max_sends"],
            resend_cooldown=timedelta(milliseconds=row["resend_cooldown_ms"]),
            hourly_limit=row["hourly_limit"],
            whatsapp_template=row["whatsapp_template"],
            escalate_after=timedelta(milliseconds=row["escalate_after_ms"]),
        )

    async def put_verification_settings(
        self, workspace_id: str, settings: VerificationSettings
    ) -> None:
        values = {
            "max_checks": settings.max_checks,
            "max_sends": settings.max_sends,
            "resend_cooldown_ms": settings.resend_cooldown // timedelta(milliseconds=1),
            "hourly_limit": settings.hourly_limit,
            "whatsapp_template": settings.whatsapp_template,
            "escalate_after_ms": settings.escalate_after // timedelta(milliseconds=1),
        }
        upsert = (
            self._upsert(verification_settings)
            .values(workspace_id=workspace_id, **values)
            .on_conflict_do_update(index_elements=[_s.workspace_id], set_=values)
        )
        async with self._write(missing=f"Workspace {workspace_id} not found.") as conn:
            await conn.execute(upsert)


def _row(verification: Verification) -> dict[str, Any]:
    values: dict[str, Any] = {name: getattr(verification, name) for name in _COLUMNS}
    values["pending_to"] = verification.to if verification.status == "pending" else None
    values["sends"] = [
        {
            "job_id": send.job_id,
            "channel": send.channel,
            "provider": send.provider,
            "created_at": send.created_at.isoformat(),
        }
        for send in verification.sends
    ]
    return values


def verification_of(row: RowMapping) -> Verification:
    """The verification of a ``um_verifications`` row."""
    values: dict[str, Any] = {name: row[name] for name in _COLUMNS}
    values["livemode"] = bool(values["livemode"])
    values["sends"] = tuple(
        CodeSend(
            job_id=doc["job_id"],
            channel=doc["channel"],
            provider=doc["provider"],
            created_at=datetime.fromisoformat(doc["created_at"]),
        )
        for doc in row["sends"]
    )
    return Verification(**values)
