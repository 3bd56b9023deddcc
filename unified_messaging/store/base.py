"""The ``Store`` protocol: everything the library keeps, behind one seam.

Backends: :class:`~unified_messaging.store.memory.MemoryStore` (tests, library default) and
the SQL store (SQLite embedded default, PostgreSQL for many hosts). One contract test suite
runs against all of them, so behaviour never depends on the backend.

Rules every backend keeps:

- Records are frozen dataclasses; a backend returns values, never live references.
- ``insert_messages`` happens *before* a provider is called (write-ahead acceptance), so a
  crash between the two leaves a ``queued`` record to reconcile, never a lost message.
- ``consume_quota`` is atomic across every process sharing the store.
- A backend that cannot reach its database raises
  :class:`~unified_messaging.StorageUnavailable`, never a driver exception.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from .._domain import ApiKey, Connection, MessageRecord, Template, Workspace

__all__ = ["Store"]


@runtime_checkable
class Store(Protocol):
    """Protocol: durable state of workspaces, keys, connections, templates and messages."""

    async def open(self) -> None:
        """Connect and bring the schema up to date. Idempotent."""
        ...

    async def close(self) -> None: ...

    # -- workspaces
    async def create_workspace(self, workspace: Workspace) -> None: ...

    async def get_workspace(self, workspace_id: str) -> Workspace | None: ...

    async def list_workspaces(self) -> list[Workspace]: ...

    async def update_workspace(self, workspace: Workspace) -> None: ...

    # -- API keys (hash only)
    async def add_api_key(self, key: ApiKey) -> None: ...

    async def get_api_key(self, key_id: str) -> ApiKey | None: ...

    async def find_api_key(self, key_hash: str) -> ApiKey | None: ...

    async def list_api_keys(self, workspace_id: str) -> list[ApiKey]: ...

    async def update_api_key(self, key: ApiKey) -> None: ...

    # -- connections (one per provider code per workspace)
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

    async def update_connection(self, connection: Connection) -> None: ...

    async def set_default_connection(self, workspace_id: str, connection_id: str) -> None:
        """Make one connection the default and every other one of the workspace not."""
        ...

    async def remove_connection(self, connection_id: str) -> bool:
        """Remove it; if it was the default, the oldest remaining one becomes default."""
        ...

    # -- templates
    async def put_template(self, template: Template) -> None:
        """Insert or replace by ``(workspace_id, key)``."""
        ...

    async def get_template(self, workspace_id: str, key: str) -> Template | None: ...

    async def list_templates(self, workspace_id: str) -> list[Template]:
        """Ordered by key."""
        ...

    async def delete_template(self, workspace_id: str, key: str) -> bool: ...

    # -- messages
    async def insert_messages(self, messages: Sequence[MessageRecord]) -> None:
        """Insert new records (all or none)."""
        ...

    async def update_messages(self, messages: Sequence[MessageRecord]) -> None:
        """Replace existing records by ``job_id``."""
        ...

    async def get_message(
        self, workspace_id: str, livemode: bool, job_id: str
    ) -> MessageRecord | None:
        """One message, only within its own workspace and mode (D2, D11)."""
        ...

    # -- quota (D17)
    async def consume_quota(
        self, workspace_id: str, period: str, units: int, limit: int | None
    ) -> bool:
        """Atomically add ``units`` to the period's count if it stays within ``limit``.

        ``limit=None`` always succeeds (and still counts). Returns whether it was added.
        """
        ...

    async def release_quota(self, workspace_id: str, period: str, units: int) -> None:
        """Give back units reserved for messages that no provider accepted."""
        ...

    async def quota_used(self, workspace_id: str, period: str) -> int: ...
