"""``messenger.allowlist``: a workspace's IP allowlist (D18)."""

from __future__ import annotations

import builtins

from .._access.authorize import normalize_allowlist_entry
from .._clock import Clock
from .._errors import RequestInvalid, ResourceNotFound
from ..audit._actions import audited
from ..store.base import Store
from ..workspaces._service import Workspaces

__all__ = ["Allowlist"]


class Allowlist:
    """The addresses a workspace's keys may call from: ``messenger.allowlist.add(ws, cidr)``."""

    def __init__(self, store: Store, clock: Clock, workspaces: Workspaces) -> None:
        self._store = store
        self._clock = clock
        self._workspaces = workspaces

    def __repr__(self) -> str:
        return "<messenger.allowlist>"

    @audited("allowlist.add", lambda entry, call: (call["workspace_id"], entry))
    async def add(self, workspace_id: str, cidr: str) -> str:
        """Admit an IPv4/IPv6 address or network (D18); returns the entry as stored.

        While a workspace's allowlist is empty every address may call; the first entry
        closes it to everything else.
        """
        await self._workspaces.get(workspace_id)
        entry = _allowlist_entry(cidr)
        await self._store.add_allowlist_entry(workspace_id, entry)
        return entry

    @audited("allowlist.remove", lambda entry, call: (call["workspace_id"], entry))
    async def remove(self, workspace_id: str, cidr: str) -> str:
        """Remove an entry (given as added, or in any form that normalizes to it); returns
        the entry as it was stored."""
        await self._workspaces.get(workspace_id)
        entry = _allowlist_entry(cidr)
        if not await self._store.remove_allowlist_entry(workspace_id, entry):
            raise ResourceNotFound(f"{entry} is not on the allowlist.")
        return entry

    async def list(self, workspace_id: str) -> builtins.list[str]:
        await self._workspaces.get(workspace_id)
        return await self._store.list_allowlist(workspace_id)


def _allowlist_entry(cidr: str) -> str:
    # Spaces around an entry are refused, not trimmed: the entry stored is then exactly the
    # one the operator reads back, and a pasted line with a stray tab is noticed.
    if isinstance(cidr, str) and cidr != cidr.strip():
        raise RequestInvalid.for_field("cidr", "must not have spaces around it")
    return normalize_allowlist_entry(cidr)
