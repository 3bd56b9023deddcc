"""The store's part of provider accounts: the protocol the memory and SQL stores implement."""

from __future__ import annotations

from decimal import Decimal
from typing import Protocol

from .records import ProviderAccount

__all__ = ["AccountStore"]


class AccountStore(Protocol):
    """Protocol: provider accounts, one row per connection."""

    async def get_account(self, connection_id: str) -> ProviderAccount | None:
        """The stored account of a connection that still exists, else ``None``."""
        ...

    async def list_accounts(self, workspace_id: str | None = None) -> list[ProviderAccount]:
        """The stored accounts of the workspace's existing connections (every workspace's
        for ``None``), by connection id."""
        ...

    async def save_account_reading(self, account: ProviderAccount) -> None:
        """Store a reading (state, balance, unit, senders, read_at, tried_at, error), keeping
        the row's ``threshold`` and ``low``; a new row takes them from ``account``."""
        ...

    async def set_account_threshold(
        self, connection_id: str, workspace_id: str, provider: str, threshold: Decimal | None
    ) -> None:
        """Set the low-balance threshold (a row is made if there is none yet)."""
        ...

    async def swap_account_low(self, connection_id: str, low: bool) -> bool:
        """Set ``low``; ``True`` only if it changed (one caller of many wins a crossing)."""
        ...
