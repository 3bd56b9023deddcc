"""The store's part of the IP allowlist: the protocol the memory and SQL stores implement.

:class:`~unified_messaging.store.base.Store` is the sum of every room's part."""

from __future__ import annotations

from typing import Protocol

__all__ = ["AllowlistStore"]


class AllowlistStore(Protocol):
    """Protocol: the IP allowlist (D18): strings as given, the caller validates them."""

    async def add_allowlist_entry(self, workspace_id: str, cidr: str) -> None:
        """Add an entry; adding one that is there already changes nothing."""
        ...

    async def remove_allowlist_entry(self, workspace_id: str, cidr: str) -> bool: ...

    async def list_allowlist(self, workspace_id: str) -> list[str]:
        """The workspace's entries, sorted; empty means every address is allowed."""
        ...
