"""The in-memory store's provider accounts: one row per connection, as the SQL store keeps
them (``_sql_accounts``); the store contract tests hold the two to the same answers."""

from __future__ import annotations

import threading
from dataclasses import replace
from decimal import Decimal
from typing import TYPE_CHECKING

from ..accounts.records import ProviderAccount

if TYPE_CHECKING:
    from .._domain import Connection

__all__ = ["MemoryAccountsMixin"]


class MemoryAccountsMixin:
    _lock: threading.Lock
    _connections: dict[str, Connection]
    _accounts: dict[str, ProviderAccount]

    async def get_account(self, connection_id: str) -> ProviderAccount | None:
        with self._lock:
            if connection_id not in self._connections:
                return None
            return self._accounts.get(connection_id)

    async def list_accounts(self, workspace_id: str | None = None) -> list[ProviderAccount]:
        with self._lock:
            return sorted(
                (
                    account
                    for account in self._accounts.values()
                    if account.connection_id in self._connections
                    and (workspace_id is None or account.workspace_id == workspace_id)
                ),
                key=lambda a: a.connection_id,
            )

    async def save_account_reading(self, account: ProviderAccount) -> None:
        with self._lock:
            stored = self._accounts.get(account.connection_id)
            if stored is not None:
                account = replace(account, threshold=stored.threshold, low=stored.low)
            self._accounts[account.connection_id] = account

    async def set_account_threshold(
        self, connection_id: str, workspace_id: str, provider: str, threshold: Decimal | None
    ) -> None:
        with self._lock:
            stored = self._accounts.get(connection_id)
            if stored is None:
                stored = ProviderAccount(connection_id, workspace_id, provider)
            self._accounts[connection_id] = replace(stored, threshold=threshold)

    async def swap_account_low(self, connection_id: str, low: bool) -> bool:
        with self._lock:
            stored = self._accounts.get(connection_id)
            if stored is None or stored.low == low:
                return False
            self._accounts[connection_id] = replace(stored, low=low)
            return True
