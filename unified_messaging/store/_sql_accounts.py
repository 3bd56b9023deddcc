"""SQL store methods for provider accounts: one row per connection (migration 0030).

- A reading is an upsert that leaves ``threshold`` and ``low`` as they are.
- ``low`` changes only by ``UPDATE … WHERE low <> :low``: of two workers that see one
  crossing, one changes the row and fires ``connection.balance_low``.
- Reads join ``um_connections``: a removed connection's account is gone with it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import RowMapping

from ..accounts.records import ProviderAccount
from ._sql_base import SqlBase
from ._tables import connections, provider_accounts

__all__ = ["AccountsMixin"]

_a = provider_accounts.c
_READING = ("state", "balance", "unit", "senders", "read_at", "tried_at", "error")


class AccountsMixin(SqlBase):
    async def get_account(self, connection_id: str) -> ProviderAccount | None:
        row = await self._first(_select().where(_a.connection_id == connection_id))
        return None if row is None else _account_from(row)

    async def list_accounts(self, workspace_id: str | None = None) -> list[ProviderAccount]:
        statement = _select().order_by(_a.connection_id)
        if workspace_id is not None:
            statement = statement.where(_a.workspace_id == workspace_id)
        return [_account_from(row) for row in await self._all(statement)]

    async def save_account_reading(self, account: ProviderAccount) -> None:
        values = _row(account)
        statement = (
            self._upsert(provider_accounts)
            .values(values)
            .on_conflict_do_update(
                index_elements=[_a.connection_id], set_={name: values[name] for name in _READING}
            )
        )
        async with self._write(missing=f"Workspace {account.workspace_id} not found.") as conn:
            await conn.execute(statement)

    async def set_account_threshold(
        self, connection_id: str, workspace_id: str, provider: str, threshold: Decimal | None
    ) -> None:
        values = _row(ProviderAccount(connection_id, workspace_id, provider, threshold=threshold))
        statement = (
            self._upsert(provider_accounts)
            .values(values)
            .on_conflict_do_update(
                index_elements=[_a.connection_id], set_={"threshold": values["threshold"]}
            )
        )
        async with self._write(missing=f"Workspace {workspace_id} not found.") as conn:
            await conn.execute(statement)

    async def swap_account_low(self, connection_id: str, low: bool) -> bool:
        statement = (
            sa.update(provider_accounts)
            .where(_a.connection_id == connection_id, _a.low != low)
            .values(low=low)
        )
        async with self._write() as conn:
            result = await conn.execute(statement)
        return bool(result.rowcount)


def _select() -> sa.Select[Any]:
    return sa.select(provider_accounts).join(connections, connections.c.id == _a.connection_id)


def _row(account: ProviderAccount) -> dict[str, Any]:
    return {
        "connection_id": account.connection_id,
        "workspace_id": account.workspace_id,
        "provider": account.provider,
        "state": account.state,
        "balance": None if account.balance is None else str(account.balance),
        "unit": account.unit,
        "senders": None if account.senders is None else list(account.senders),
        "read_at": account.read_at,
        "tried_at": account.tried_at,
        "error": account.error,
        "threshold": None if account.threshold is None else str(account.threshold),
        "low": account.low,
    }


def _account_from(row: RowMapping) -> ProviderAccount:
    senders = row["senders"]
    return ProviderAccount(
        connection_id=row["connection_id"],
        workspace_id=row["workspace_id"],
        provider=row["provider"],
        state=row["state"],
        balance=None if row["balance"] is None else Decimal(row["balance"]),
        unit=row["unit"],
        senders=None if senders is None else tuple(str(s) for s in senders),
        read_at=row["read_at"],
        tried_at=row["tried_at"],
        error=row["error"],
        threshold=None if row["threshold"] is None else Decimal(row["threshold"]),
        low=bool(row["low"]),
    )
