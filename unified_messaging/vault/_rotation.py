"""Re-sealing everything the vault seals under its active key (D21, ``vault rotate``).

What the vault seals, and so what a rotation must reach:

- each connection's credentials (bound to the workspace and the connection id);
- each webhook endpoint's secret, and its previous secret while that still signs (bound to
  the workspace and the endpoint id, see ``_webhook_admin.seal_secret``);
- each İYS connection's password (and its shared token, dropped: ``iys.rotation``).

A previous secret past its overlap signs nothing any more (``webhook_secrets``), so it is
removed rather than re-sealed: after a rotation no token under the old key is left to fail
once that key is dropped.

Every token is opened before anything is written, so one that cannot be opened (its key
dropped too early: :class:`~unified_messaging.UnknownKeyId`, naming it) stops the rotation
with nothing changed. Each row is read again just before it is written, and only its sealed
fields change: a secret rotated or an endpoint disabled meanwhile is kept, not overwritten
with what the first read saw. Each write is a compare-and-set on the row's sealed fields
alone (``Store.swap_connection_credentials``, ``Store.swap_webhook_secrets``): a row changed
between the re-read and the write is read and planned again, never written over. Running a
rotation twice is harmless: what is already under the active key is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Final

from .._errors import Conflict
from ..webhooks._admin import open_secret, seal_secret

if TYPE_CHECKING:
    from .._domain import Connection
    from ..store.base import Store, WebhookEndpoint
    from ._core import Vault

__all__ = ["VaultRotation", "rotate_sealed"]

#: Compare-and-set rounds per row: a row changing this often during one rotation is a bug.
_SWAP_TRIES: Final = 5


@dataclass(frozen=True, slots=True)
class VaultRotation:
    """What a rotation did, per kind of sealed value (``Messenger.rotate_vault``)."""

    #: The key everything is sealed under now.
    active_key_id: str
    #: Connections whose credentials were re-sealed.
    connections: int
    #: Webhook endpoint secrets re-sealed, current and previous ones counted apart.
    webhook_secrets: int
    #: Previous webhook secrets past their overlap, removed instead of re-sealed.
    expired_secrets_removed: int = 0
    #: İYS connections whose password was re-sealed.
    iys_passwords: int = 0

    @property
    def total(self) -> int:
        """How many tokens were re-sealed, of every kind."""
        return self.connections + self.webhook_secrets + self.iys_passwords


@dataclass(frozen=True, slots=True)
class _EndpointPlan:
    secret: str
    previous: str | None
    previous_expires_at: datetime | None
    resealed: int
    removed: int


async def rotate_sealed(store: Store, vault: Vault, *, now: datetime) -> VaultRotation:
    """Re-seal every connection's credentials and every webhook secret in ``store`` that is
    not under ``vault``'s active key. ``now`` decides which previous secrets have expired."""
    from ..iys.rotation import plan_iys, write_iys

    connections: list[Connection] = []
    endpoints: list[WebhookEndpoint] = []
    workspaces = await store.list_workspaces()
    for workspace in workspaces:
        connections += await store.list_connections(workspace.id)
        endpoints += await store.list_webhook_endpoints(workspace.id)
    # Open everything first (raises before any write), then write.
    credentials = {c.id: _resealed_credentials(vault, c) for c in connections}
    plans = {e.id: _endpoint_plan(vault, e, now) for e in endpoints}
    iys_plan = await plan_iys(store, vault, [w.id for w in workspaces])

    rotated_connections = 0
    for connection in connections:
        sealed = credentials[connection.id]
        if sealed is not None and await _write_connection(store, vault, connection, sealed):
            rotated_connections += 1
    resealed = removed = 0
    for endpoint in endpoints:
        plan = plans[endpoint.id]
        if plan is None:
            continue
        written = await _write_endpoint(store, vault, endpoint, plan, now)
        if written is not None:
            resealed += written.resealed
            removed += written.removed
    iys = await write_iys(store, vault, iys_plan)
    return VaultRotation(vault.active_kid, rotated_connections, resealed, removed, iys)


def _resealed_credentials(vault: Vault, connection: Connection) -> str | None:
    """The connection's credentials under the active key; None when they are already."""
    if not vault.needs_rotation(connection.credentials):
        return None
    return vault.rotate(
        connection.credentials,
        workspace_id=connection.workspace_id,
        connection_id=connection.id,
    )


def _endpoint_plan(vault: Vault, endpoint: WebhookEndpoint, now: datetime) -> _EndpointPlan | None:
    """The endpoint's secrets under the active key, an expired previous one removed; None
    when there is nothing to change."""
    ids = {"workspace_id": endpoint.workspace_id, "endpoint_id": endpoint.id}
    resealed = removed = 0
    secret = endpoint.secret_ciphertext
    if vault.needs_rotation(secret):
        secret = seal_secret(vault, open_secret(vault, secret, **ids), **ids)
        resealed += 1
    previous = endpoint.previous_secret_ciphertext
    expires = endpoint.previous_secret_expires_at
    if previous is not None:
        if expires is None or expires <= now:
            # It signs nothing any more: drop it, whatever key it is under.
            previous, expires = None, None
            removed += 1
        elif vault.needs_rotation(previous):
            previous = seal_secret(vault, open_secret(vault, previous, **ids), **ids)
            resealed += 1
    if not resealed and not removed:
        return None
    return _EndpointPlan(secret, previous, expires, resealed, removed)


async def _write_connection(store: Store, vault: Vault, read: Connection, sealed: str) -> bool:
    """Store ``sealed`` as the connection's credentials by compare-and-set on the row.

    The swap writes the credentials column alone, and only while it still holds what was
    re-sealed: a concurrent admin update (new credentials, a send rate) is never written
    over, and credentials stored meanwhile are re-sealed in their turn.
    """
    expected = read.credentials
    for _ in range(_SWAP_TRIES):
        if await store.swap_connection_credentials(read.id, expected, sealed):
            return True
        current = await store.get_connection(read.id)
        if current is None:
            return False  # removed meanwhile
        resealed = _resealed_credentials(vault, current)
        if resealed is None:
            return False  # stored meanwhile under the active key
        expected, sealed = current.credentials, resealed
    raise Conflict(f"connection {read.id} kept changing during the vault rotation")


async def _write_endpoint(
    store: Store, vault: Vault, read: WebhookEndpoint, plan: _EndpointPlan, now: datetime
) -> _EndpointPlan | None:
    """Store ``plan``'s secrets by compare-and-set on the endpoint's row: only its sealed
    fields, and only while they still are what the plan was made from (a secret rotated
    meanwhile is planned again; the endpoint's health and URL are never touched)."""
    expected = read.sealed_secrets
    for _ in range(_SWAP_TRIES):
        swapped = await store.swap_webhook_secrets(
            read.id,
            expected=expected,
            secret=plan.secret,
            previous=plan.previous,
            previous_expires_at=plan.previous_expires_at,
        )
        if swapped:
            return plan
        current = await store.get_webhook_endpoint(read.id)
        if current is None:
            return None  # removed meanwhile
        fresh = _endpoint_plan(vault, current, now)
        if fresh is None:
            return None  # rotated meanwhile, under the active key
        expected, plan = current.sealed_secrets, fresh
    raise Conflict(f"webhook endpoint {read.id} kept changing during the vault rotation")
