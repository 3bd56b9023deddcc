"""SQL store methods for İYS (D33): connections, the shared token, registrations, pulls.

- A connection is one row per workspace; saving one replaces the row (token and cursors
  with it).
- The token changes only through :meth:`swap_iys_token`: an ``UPDATE … WHERE
  token_version = <the version read>``, so of two processes only one fetches a token.
- :meth:`begin_iys_attempts` counts an attempt for the pending changes, in one transaction
  before the call to İYS: a registration row is made for a change at its first attempt.
- :meth:`settle_iys_registration` writes the change, and its consent when it is the
  consent's current change, in one transaction, only while the change is pending.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import RowMapping

from ..iys.records import (
    BULK_IN_FLIGHT,
    IysConnection,
    IysOutcome,
    IysRegistration,
    IysToken,
    PullSource,
)
from ._sql_base import SqlBase
from ._sql_consents import change_from, change_row, consent_from
from ._tables import consent_changes, consents, iys_connections, iys_registrations

if TYPE_CHECKING:
    from ..consents.models import Consent, ConsentChange

__all__ = ["IysMixin"]

_i = iys_connections.c
_r = iys_registrations.c
_h = consent_changes.c
_c = consents.c
_TOKEN = ("token_version", "token", "access_expires_at", "refresh_expires_at",
          "token_lease_by", "token_lease_until", "token_grants")  # fmt: skip


class IysMixin(SqlBase):
    async def save_iys_connection(self, connection: IysConnection) -> None:
        values = _connection_row(connection)
        statement = (
            self._upsert(iys_connections)
            .values(values)
            .on_conflict_do_update(
                index_elements=[_i.workspace_id],
                set_={name: value for name, value in values.items() if name != "workspace_id"},
            )
        )
        async with self._write(missing=f"Workspace {connection.workspace_id} not found.") as conn:
            await conn.execute(statement)

    async def get_iys_connection(self, workspace_id: str) -> IysConnection | None:
        row = await self._first(sa.select(iys_connections).where(_i.workspace_id == workspace_id))
        return None if row is None else _connection_from(row)

    async def delete_iys_connection(self, workspace_id: str) -> bool:
        async with self._write() as conn:
            result = await conn.execute(
                sa.delete(iys_connections).where(_i.workspace_id == workspace_id)
            )
        return bool(result.rowcount)

    async def swap_iys_token(self, workspace_id: str, version: int, token: IysToken) -> bool:
        statement = (
            sa.update(iys_connections)
            .where(_i.workspace_id == workspace_id, _i.token_version == version)
            .values(_token_row(token))
        )
        async with self._write() as conn:
            result = await conn.execute(statement)
        return result.rowcount == 1

    async def swap_iys_password(self, workspace_id: str, expected: str, sealed: str) -> bool:
        statement = (
            sa.update(iys_connections)
            .where(_i.workspace_id == workspace_id, _i.password == expected)
            .values(password=sealed)
        )
        async with self._write() as conn:
            result = await conn.execute(statement)
        return result.rowcount == 1

    async def set_iys_cursor(
        self, workspace_id: str, source: PullSource, after: str | None, pulled_at: datetime
    ) -> None:
        column = "after_hs" if source == "HS" else "after_iys"
        async with self._write() as conn:
            await conn.execute(
                sa.update(iys_connections)
                .where(_i.workspace_id == workspace_id)
                .values({column: after, "pulled_at": pulled_at})
            )

    async def consent_change(self, change_id: str) -> tuple[Consent, ConsentChange] | None:
        change = await self._first(sa.select(consent_changes).where(_h.id == change_id))
        if change is None:
            return None
        consent = await self._first(sa.select(consents).where(_c.id == change["consent_id"]))
        return None if consent is None else (consent_from(consent), change_from(change))

    async def pending_iys_changes(
        self, workspace_id: str, livemode: bool, limit: int
    ) -> list[ConsentChange]:
        statement = (
            sa.select(consent_changes)
            .join(consents, _c.id == _h.consent_id)
            .where(
                _h.iys_state == "pending",
                _c.workspace_id == workspace_id,
                _c.livemode == livemode,
            )
            .order_by(_h.recorded_at, _h.id)
            .limit(limit)
        )
        return [change_from(row) for row in await self._all(statement)]

    async def iys_registration(self, change_id: str) -> IysRegistration | None:
        row = await self._first(sa.select(iys_registrations).where(_r.change_id == change_id))
        return None if row is None else _registration_from(row)

    async def begin_iys_attempts(
        self, change_ids: Sequence[str], *, now: datetime, bulk: bool = False
    ) -> dict[str, int]:
        if not change_ids:
            return {}
        pending = sa.select(_h.id).where(_h.id.in_(list(change_ids)), _h.iys_state == "pending")
        counted: dict[str, int] = {}
        async with self._write() as conn:
            ids = list((await conn.execute(pending)).scalars().all())
            if not ids:
                return {}
            await conn.execute(
                self._upsert(iys_registrations)
                .values([{"change_id": i, "attempts": 0} for i in ids])
                .on_conflict_do_nothing(index_elements=[_r.change_id])
            )
            rows = await conn.execute(
                sa.select(_r.change_id, _r.attempts).where(
                    _r.change_id.in_(ids), _r.request_id.is_(None)
                )
            )
            for change_id, attempts in rows.all():
                counted[change_id] = attempts
            if counted:
                await conn.execute(
                    sa.update(iys_registrations)
                    .where(_r.change_id.in_(list(counted)))
                    .values(
                        attempts=_r.attempts + 1,
                        attempted_at=now,
                        request_id=BULK_IN_FLIGHT if bulk else None,
                    )
                )
        return counted

    async def undo_iys_attempt(self, change_id: str) -> None:
        async with self._write() as conn:
            await conn.execute(
                sa.update(iys_registrations)
                .where(_r.change_id == change_id, _r.attempts > 0)
                .values(attempts=_r.attempts - 1, request_id=None)
            )

    async def leave_iys_bulk(self, change_id: str) -> None:
        async with self._write() as conn:
            await conn.execute(
                sa.update(iys_registrations)
                .where(_r.change_id == change_id, _r.request_id == BULK_IN_FLIGHT)
                .values(request_id=None)
            )

    async def set_iys_request(self, request_id: str, subrequests: Mapping[str, str]) -> None:
        if not subrequests:
            return
        async with self._write() as conn:
            for change_id, subrequest_id in subrequests.items():
                await conn.execute(
                    sa.update(iys_registrations)
                    .where(_r.change_id == change_id)
                    .values(request_id=request_id, subrequest_id=subrequest_id)
                )

    async def settle_iys_registration(self, change_id: str, outcome: IysOutcome) -> bool:
        async with self._write() as conn:
            result = await conn.execute(
                sa.update(consent_changes)
                .where(_h.id == change_id, _h.iys_state == "pending")
                .values(iys_state=outcome.state, iys_transaction_id=outcome.transaction_id)
            )
            if result.rowcount != 1:
                return False
            await conn.execute(
                sa.update(consents)
                .where(_c.last_change_id == change_id)
                .values(
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
        statement = (
            sa.select(consent_changes)
            .join(consents, _c.id == _h.consent_id)
            .where(
                _h.iys_transaction_id == transaction_id,
                _c.workspace_id == workspace_id,
                _c.livemode == livemode,
            )
            .limit(1)
        )
        row = await self._first(statement)
        return None if row is None else change_from(row)

    async def add_consent_change(self, change: ConsentChange) -> None:
        async with self._write(missing=f"Consent {change.consent_id} not found.") as conn:
            await conn.execute(sa.insert(consent_changes).values(change_row(change)))

    async def fill_iys_transaction(self, change_id: str, transaction_id: str) -> None:
        async with self._write() as conn:
            result = await conn.execute(
                sa.update(consent_changes)
                .where(_h.id == change_id, _h.iys_transaction_id.is_(None))
                .values(iys_transaction_id=transaction_id)
            )
            if result.rowcount == 1:
                await conn.execute(
                    sa.update(consents)
                    .where(_c.last_change_id == change_id)
                    .values(iys_transaction_id=transaction_id)
                )


def _token_row(token: IysToken) -> dict[str, Any]:
    return {
        "token_version": token.version,
        "token": token.sealed,
        "access_expires_at": token.access_expires_at,
        "refresh_expires_at": token.refresh_expires_at,
        "token_lease_by": token.lease_by,
        "token_lease_until": token.lease_until,
        "token_grants": [moment.isoformat() for moment in token.grants],
    }


def _connection_row(connection: IysConnection) -> dict[str, Any]:
    return {
        "workspace_id": connection.workspace_id,
        "iys_code": connection.iys_code,
        "brand_code": connection.brand_code,
        "username": connection.username,
        "password": connection.password,
        "base_url": connection.base_url,
        "created_at": connection.created_at,
        "updated_at": connection.updated_at,
        "after_hs": connection.after_hs,
        "after_iys": connection.after_iys,
        "pulled_at": connection.pulled_at,
        "via_connection": connection.via_connection,
        **_token_row(connection.token),
    }


def _connection_from(row: RowMapping) -> IysConnection:
    grants = tuple(
        datetime.fromisoformat(moment).astimezone(UTC) for moment in row["token_grants"] or ()
    )
    return IysConnection(
        workspace_id=row["workspace_id"],
        iys_code=int(row["iys_code"]),
        brand_code=int(row["brand_code"]),
        username=row["username"],
        password=row["password"],
        base_url=row["base_url"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        after_hs=row["after_hs"],
        after_iys=row["after_iys"],
        pulled_at=row["pulled_at"],
        via_connection=row["via_connection"],
        token=IysToken(
            version=int(row["token_version"]),
            sealed=row["token"],
            access_expires_at=row["access_expires_at"],
            refresh_expires_at=row["refresh_expires_at"],
            lease_by=row["token_lease_by"],
            lease_until=row["token_lease_until"],
            grants=grants,
        ),
    )


def _registration_from(row: RowMapping) -> IysRegistration:
    return IysRegistration(
        change_id=row["change_id"],
        attempts=int(row["attempts"]),
        request_id=row["request_id"],
        subrequest_id=row["subrequest_id"],
        attempted_at=row["attempted_at"],
    )
