"""The store's part of workspaces: the protocol the memory and SQL stores implement.

:class:`~unified_messaging.store.base.Store` is the sum of every room's part."""

from __future__ import annotations

from typing import Protocol

from .._domain import Workspace

__all__ = ["WorkspaceStore"]


class WorkspaceStore(Protocol):
    """Protocol: workspaces."""

    async def create_workspace(self, workspace: Workspace) -> None: ...

    async def get_workspace(self, workspace_id: str) -> Workspace | None: ...

    async def list_workspaces(self) -> list[Workspace]: ...

    async def update_workspace(self, workspace: Workspace) -> None: ...
