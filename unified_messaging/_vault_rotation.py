"""Re-sealing everything the vault seals under its active key (D21, ``vault rotate``).

What the vault seals, and so what a rotation must reach:

- each connection's credentials (bound to the workspace and the connection id);
- each webhook endpoint's secret, and its previous secret while that still signs (bound to
  the workspace and the endpoint id, see ``_webhook_admin.seal_secret``).

A previous secret past its overlap signs nothing any more (``webhook_secrets``), so it is
removed rather than re-sealed: after a rotation no token under the old key is left to fail
once that key is dropped.

Every token is opened before anything is written, so one that cannot be opened (its key
dropped too early: :class:`~unified_messaging.UnknownKeyId`, naming it) stops the rotation
with nothing changed. Each row is read again just before it is written, and only its sealed
fields change: a secret rotated or an endpoint disabled meanwhile is kept, not overwritten
with what the first read saw. Running a rotation twice is harmless: what is already under
the active key is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

from .webhooks._admin import open_secret, seal_secret

if TYPE_CHECKING:
    from ._domain import Connection
    from ._vault import Vault
    from .store.base import Store, WebhookEndpoint

__all__ = ["VaultRotation", "rotate_sealed"]


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

    @property
    def total(self) -> int:
        """How many tokens were re-sealed, of every kind."""
        return self.connections + self.webhook_secrets


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
    connections: list[Connection] = []
    endpoints: list[WebhookEndpoint] = []
    for workspace in await store.list_workspaces():
        connections += await store.list_connections(workspace.id)
        endpoints += await store.list_webhook_endpoints(workspace.id)
    # Open everything first (raises before any write), then write.
    credentials = {c.id: _resealed_credentials(vault, c) for c in connections}
    plans = {e.id: _endpoint_plan(vault, e, now) for e in endpoints}

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
    return VaultRotation(vault.active_kid, rotated_connections, resealed, removed)


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
    """Store ``sealed`` as the connection's credentials, on its current row."""
    current = await store.get_connection(read.id)
    if current is None:
        return False  # removed meanwhile
    if current.credentials != read.credentials:
        # New credentials stored meanwhile: re-seal those, if they need it.
        resealed = _resealed_credentials(vault, current)
        if resealed is None:
            return False
        sealed = resealed
    await store.update_connection(replace(current, credentials=sealed))
    return True


async def _write_endpoint(
    store: Store, vault: Vault, read: WebhookEndpoint, plan: _EndpointPlan, now: datetime
) -> _EndpointPlan | None:
    """Store ``plan``'s secrets on the endpoint's current row (its health as it is now)."""
    current = await store.get_webhook_endpoint(read.id)
    if current is None:
        return None  # removed meanwhile
    if (current.secret_ciphertext, current.previous_secret_ciphertext) != (
        read.secret_ciphertext,
        read.previous_secret_ciphertext,
    ):
        # Its secret was rotated meanwhile: plan again from what is stored now.
        fresh = _endpoint_plan(vault, current, now)
        if fresh is None:
            return None
        plan = fresh
    await store.update_webhook_endpoint(
        replace(
            current,
            secret_ciphertext=plan.secret,
            previous_secret_ciphertext=plan.previous,
            previous_secret_expires_at=plan.previous_expires_at,
        )
    )
    return plan
