"""Who is calling: the answer every check in :mod:`~unified_messaging._access` gives."""

from __future__ import annotations

from dataclasses import dataclass

from .._domain import ApiKey, Workspace

__all__ = ["Principal"]


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: a workspace, in live or test mode, through which API key (if any)."""

    workspace: Workspace
    livemode: bool
    key: ApiKey | None = None

    @property
    def workspace_id(self) -> str:
        return self.workspace.id
