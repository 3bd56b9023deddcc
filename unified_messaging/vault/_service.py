"""``messenger.vault``: re-sealing what the vault seals under its active key (D21)."""

from __future__ import annotations

from .._clock import Clock
from ..audit._actions import audited
from ..store.base import Store
from ._core import Vault
from ._rotation import VaultRotation, rotate_sealed

__all__ = ["VaultAdmin"]


class VaultAdmin:
    """``messenger.vault.rotate()`` after adding a new master key."""

    def __init__(self, store: Store, clock: Clock, vault: Vault) -> None:
        self._store = store
        self._clock = clock
        self._vault = vault

    def __repr__(self) -> str:
        return "<messenger.vault>"

    # Not atomic: a rotation writes rows of every workspace, and one transaction would hold
    # the write lock (SQLite: every send) for all of it. Its row follows once it succeeded.
    @audited("vault.rotate", lambda rotation, _: (None, rotation.active_key_id), atomic=False)
    async def rotate(self) -> VaultRotation:
        """Re-seal everything the vault seals under its active key (D21): every connection's
        credentials and every webhook endpoint's secret, the previous one too while it still
        signs (an expired one is removed). Returns what it did per kind.

        Nothing is written unless every token opens: a token under a key that is no longer
        configured raises :class:`~unified_messaging.UnknownKeyId` naming it. Safe to repeat.
        """
        return await rotate_sealed(self._store, self._vault, now=self._clock.now())
