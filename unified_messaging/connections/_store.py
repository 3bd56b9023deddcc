"""The store's part of provider connections: the protocol the memory and SQL stores implement.

:class:`~unified_messaging.store.base.Store` is the sum of every room's part."""

from __future__ import annotations

from typing import Protocol

from .._domain import Connection

__all__ = ["ConnectionStore"]


class ConnectionStore(Protocol):
    """Protocol: provider connections, one per provider code per workspace."""

    async def add_connection(self, connection: Connection) -> None:
        """Add a connection; :class:`AlreadyExists` if the workspace has its code already.

        The first connection of a workspace becomes its default, whatever ``is_default``
        says; a connection added with ``is_default`` takes the default from the others.
        """
        ...

    async def get_connection(self, connection_id: str) -> Connection | None: ...

    async def list_connections(self, workspace_id: str) -> list[Connection]:
        """The workspace's connections, oldest first."""
        ...

    async def update_connection(self, connection: Connection) -> None:
        """Store the connection's settings. Its default flag and its sealed credentials are
        left as stored: they move only through :meth:`set_default_connection` and
        :meth:`swap_connection_credentials`, so a whole row written from a stale read never
        puts back credentials that a vault rotation re-sealed meanwhile."""
        ...

    async def swap_connection_credentials(
        self, connection_id: str, expected: str, sealed: str
    ) -> bool:
        """Compare-and-set of the sealed credentials (D21, the vault rotation): store
        ``sealed`` only if the stored credentials are still ``expected``, and change nothing
        else of the row. ``False`` when they changed meanwhile or the connection is gone: the
        caller reads the row again rather than write over what another writer stored."""
        ...

    async def set_default_connection(self, workspace_id: str, connection_id: str) -> None:
        """Make one connection the default and every other one of the workspace not."""
        ...

    async def remove_connection(self, connection_id: str) -> bool:
        """Remove it; if it was the default, the oldest remaining one becomes default."""
        ...
