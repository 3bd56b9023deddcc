"""What a vault rotation (D21, ``vault rotate``) does to İYS's sealed values: each
connection's password is re-sealed under the active key (compare-and-set on the sealed
value, like a provider's credentials), and a shared token sealed under an older key is
dropped rather than re-sealed: it lasts two hours at most, and the next call asks İYS for a
new one (one token request)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final

from .._errors import Conflict
from .records import IysConnection
from .tokens import open_password, seal_password

if TYPE_CHECKING:
    from ..store.base import Store
    from ..vault._core import Vault

__all__ = ["IysPlan", "plan_iys", "write_iys"]

_SWAP_TRIES: Final = 5


@dataclass(frozen=True, slots=True)
class IysPlan:
    """The İYS connections read, and each password re-sealed (opened before any write)."""

    connections: tuple[IysConnection, ...]
    passwords: Mapping[str, str]


async def plan_iys(store: Store, vault: Vault, workspace_ids: Sequence[str]) -> IysPlan:
    """Open and re-seal every İYS password of ``workspace_ids`` not under the active key;
    raises (an unknown key id) before anything is written."""
    found = [c for w in workspace_ids if (c := await store.get_iys_connection(w)) is not None]
    plans = {
        c.workspace_id: seal_password(vault, c.workspace_id, open_password(vault, c))
        for c in found
        if vault.needs_rotation(c.password)
    }
    return IysPlan(tuple(found), plans)


async def write_iys(store: Store, vault: Vault, plan: IysPlan) -> int:
    """Write :func:`plan_iys`'s passwords and drop old tokens; returns the passwords
    re-sealed."""
    found, plans = plan.connections, plan.passwords
    for connection in found:
        sealed = connection.token.sealed
        if sealed is not None and vault.needs_rotation(sealed):
            token = connection.token
            dropped = replace(token, version=token.version + 1, sealed=None,
                              access_expires_at=None, refresh_expires_at=None)  # fmt: skip
            await store.swap_iys_token(connection.workspace_id, token.version, dropped)
    resealed = 0
    for connection in found:
        sealed_password = plans.get(connection.workspace_id)
        if sealed_password is not None and await _write(
            store, vault, connection.workspace_id, connection.password, sealed_password
        ):
            resealed += 1
    return resealed


async def _write(store: Store, vault: Vault, workspace_id: str, expected: str, sealed: str) -> bool:
    for _ in range(_SWAP_TRIES):
        if await store.swap_iys_password(workspace_id, expected, sealed):
            return True
        current = await store.get_iys_connection(workspace_id)
        if current is None or not vault.needs_rotation(current.password):
            return False  # gone, or stored meanwhile under the active key
        expected = current.password
        sealed = seal_password(vault, workspace_id, open_password(vault, current))
    raise Conflict(f"the İYS connection of {workspace_id} kept changing during the rotation")
