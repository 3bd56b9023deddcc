"""Admin operations on webhook endpoints (D19): add, list, remove, rotate, re-enable, log.

Mixed into the façade like :class:`~unified_messaging._admin.AdminMixin`, so the CLI, a
host's dashboard and the tests call the same methods and get the same errors.

Rules kept here, once:

- The URL is judged by :func:`~unified_messaging.webhooks._sender.url_problem` under the
  façade's ``TargetPolicy`` (scheme, length, credentials, private IP literals, ``localhost``).
  Where a host *name* resolves is judged again on every delivery, when it is dialled.
- ``events`` lists the event types an endpoint receives. ``None`` or an empty list subscribes
  it to every event type, including ones added in later versions; that is stored as ``()``.
- The secret (``whsec_…``) is returned once, in :class:`CreatedWebhookEndpoint`, and stored
  only sealed in the vault, bound to the workspace and the endpoint id. No ``repr``, log line
  or error message contains it.
- Rotation keeps the old secret signing beside the new one for ``overlap`` (default 24 h), so
  receivers can switch whenever they like within that window.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Final

from .._audit_actions import audited, of_record
from .._errors import Conflict, RequestInvalid, ResourceNotFound
from .._ids import new_id
from .._lifecycle.rules import EVENT_TYPES
from ..store.base import WebhookEndpoint

if TYPE_CHECKING:
    # The sender (httpx), the signer (pydantic) and the vault (cryptography) are imported
    # where they are used: the command line reads this module's settings to build its
    # ``--help``, which needs none of them.
    from .._clock import Clock
    from .._vault import Vault
    from ..store.base import Store, WebhookDelivery
    from ._sender import TargetPolicy

__all__ = [
    "ALLOW_PRIVATE_ENV",
    "DEFAULT_ROTATION_OVERLAP",
    "CreatedWebhookEndpoint",
    "WebhookAdminMixin",
    "endpoint_refusal",
    "endpoint_url_problem",
    "open_secret",
    "seal_secret",
    "webhook_policy_from_env",
]

#: Compare-and-set rounds of a secret rotation before it gives up (it never should).
_SWAP_TRIES: Final = 5
#: How long the previous secret keeps signing after a rotation.
DEFAULT_ROTATION_OVERLAP: Final = timedelta(hours=24)
#: Sealed secrets are bound to this pseudo connection id, so a webhook secret can never be
#: opened as (or swapped with) a connection's credentials.
_AAD_PREFIX: Final = "webhook-endpoint:"
#: ``UM_WEBHOOK_ALLOW_PRIVATE=1`` lets webhooks go to loopback and private addresses.
ALLOW_PRIVATE_ENV: Final = "UM_WEBHOOK_ALLOW_PRIVATE"
_TRUE: Final = frozenset({"1", "true", "yes", "on"})


def webhook_policy_from_env(environ: Mapping[str, str] | None = None) -> TargetPolicy:
    """The operator's webhook target policy: private targets only with ``ALLOW_PRIVATE_ENV``.

    One switch for both ends: the process that adds endpoints and the one that delivers to
    them must agree, or an endpoint would be accepted and then refused on every attempt.
    """
    from ._sender import TargetPolicy

    value = (os.environ if environ is None else environ).get(ALLOW_PRIVATE_ENV, "")
    return TargetPolicy(allow_private=value.strip().lower() in _TRUE)


def seal_secret(vault: Vault, secret: str, *, workspace_id: str, endpoint_id: str) -> str:
    """Encrypt an endpoint secret, bound to its workspace and endpoint."""
    return vault.encrypt(
        secret.encode("ascii"),
        workspace_id=workspace_id,
        connection_id=_AAD_PREFIX + endpoint_id,
    )


def open_secret(vault: Vault, token: str, *, workspace_id: str, endpoint_id: str) -> str:
    """Decrypt what :func:`seal_secret` made (``DecryptionFailed`` for anything else)."""
    raw = vault.decrypt(token, workspace_id=workspace_id, connection_id=_AAD_PREFIX + endpoint_id)
    return raw.decode("ascii")


@dataclass(frozen=True, slots=True)
class CreatedWebhookEndpoint:
    """An endpoint with its new secret, which is shown this once (never in a ``repr``)."""

    endpoint: WebhookEndpoint
    secret: str = field(repr=False)


def _check_events(events: Sequence[str] | None) -> tuple[str, ...]:
    if events is None:
        return ()
    if isinstance(events, str):
        events = [events]  # a lone str is a Sequence[str] of characters: never what is meant
    chosen: list[str] = []
    for name in events:
        if name not in EVENT_TYPES:
            known = ", ".join(EVENT_TYPES)
            raise RequestInvalid.for_field(
                "events", f"unknown event type {str(name)[:64]!r} (known: {known})"
            )
        if name not in chosen:
            chosen.append(name)
    return tuple(chosen)


def endpoint_refusal(url: str, policy: TargetPolicy) -> RequestInvalid | None:
    """The refusal of ``url`` as a new endpoint's address under ``policy``, or None. When only
    this process's private-address rule refuses it, the refusal names the switch that allows
    it (an environment variable the operator would otherwise have to find)."""
    from ._sender import TargetPolicy

    problem = endpoint_url_problem(url, policy)
    if problem is None:
        return None
    if endpoint_url_problem(url, TargetPolicy(allow_private=True)) is None:
        problem += (
            f"; set {ALLOW_PRIVATE_ENV}=1 to allow loopback and private targets (where "
            "endpoints are added and where webhooks are delivered: serve, worker, the command "
            "line), or use serve --demo, which allows them"
        )
    return RequestInvalid.for_field("url", problem)


def endpoint_url_problem(url: str, policy: TargetPolicy) -> str | None:
    """What is wrong with ``url`` as a new endpoint's address under ``policy``, or None."""
    from ._sender import url_problem

    # httpx would percent-encode a space in the path: one URL stored, another read back by
    # the operator. A space is nearly always a pasting mistake, so it is refused.
    if isinstance(url, str) and any(char.isspace() for char in url):
        return "must not contain spaces (percent-encode one as %20)"
    return url_problem(url, policy)


class WebhookAdminMixin:
    _store: Store
    _clock: Clock
    _vault: Vault
    #: Which webhook targets are allowed (private and loopback addresses only if it says so).
    _webhook_policy: TargetPolicy

    @audited("webhook_endpoint.create", lambda created, _: of_record(created.endpoint, _))
    async def create_webhook_endpoint(
        self, workspace_id: str, url: str, *, events: Sequence[str] | None = None
    ) -> CreatedWebhookEndpoint:
        """Add a receiver for the workspace's message events; the secret is in the result."""
        from ._signing import generate_secret

        if await self._store.get_workspace(workspace_id) is None:
            raise ResourceNotFound(f"Workspace {workspace_id} not found.")
        refusal = endpoint_refusal(url, self._webhook_policy)
        if refusal is not None:
            raise refusal
        chosen = _check_events(events)
        endpoint_id = new_id("whe")
        secret = generate_secret()
        endpoint = WebhookEndpoint(
            id=endpoint_id,
            workspace_id=workspace_id,
            url=url,
            events=chosen,
            secret_ciphertext=seal_secret(
                self._vault, secret, workspace_id=workspace_id, endpoint_id=endpoint_id
            ),
            created_at=self._clock.now(),
        )
        await self._store.add_webhook_endpoint(endpoint)
        return CreatedWebhookEndpoint(endpoint, secret)

    async def list_webhook_endpoints(self, workspace_id: str) -> list[WebhookEndpoint]:
        if await self._store.get_workspace(workspace_id) is None:
            raise ResourceNotFound(f"Workspace {workspace_id} not found.")
        return await self._store.list_webhook_endpoints(workspace_id)

    async def get_webhook_endpoint(self, endpoint_id: str) -> WebhookEndpoint:
        endpoint = await self._store.get_webhook_endpoint(endpoint_id)
        if endpoint is None:
            raise ResourceNotFound(f"Webhook endpoint {endpoint_id} not found.")
        return endpoint

    @audited("webhook_endpoint.remove", of_record)
    async def remove_webhook_endpoint(self, endpoint_id: str) -> WebhookEndpoint:
        """Remove the endpoint and its delivery log; pending deliveries are dropped.
        Returns the endpoint as it was."""
        endpoint = await self.get_webhook_endpoint(endpoint_id)
        if not await self._store.remove_webhook_endpoint(endpoint_id):
            raise ResourceNotFound(f"Webhook endpoint {endpoint_id} not found.")
        return endpoint

    @audited("webhook_endpoint.rotate_secret", lambda created, _: of_record(created.endpoint, _))
    async def rotate_webhook_secret(
        self, endpoint_id: str, *, overlap: timedelta = DEFAULT_ROTATION_OVERLAP
    ) -> CreatedWebhookEndpoint:
        """Make a new secret active; the old one keeps signing beside it until now + overlap.

        ``overlap=timedelta(0)`` retires the old secret at once. Rotating again during an
        overlap retires the oldest secret: only the last two ever sign.
        """
        from ._signing import generate_secret

        if overlap < timedelta(0):
            raise RequestInvalid.for_field("overlap", "must not be negative")
        secret = generate_secret()
        keep_old = overlap > timedelta(0)
        # Compare-and-set of the sealed fields alone: a vault rotation (or another secret
        # rotation) landing between the read and the write is read again, not written over,
        # and the endpoint's health is never touched (issue 22, item 20).
        for _ in range(_SWAP_TRIES):
            endpoint = await self.get_webhook_endpoint(endpoint_id)
            now = self._clock.now()
            rotated = replace(
                endpoint,
                secret_ciphertext=seal_secret(
                    self._vault, secret, workspace_id=endpoint.workspace_id, endpoint_id=endpoint.id
                ),
                previous_secret_ciphertext=endpoint.secret_ciphertext if keep_old else None,
                previous_secret_expires_at=now + overlap if keep_old else None,
            )
            swapped = await self._store.swap_webhook_secrets(
                endpoint_id,
                expected=endpoint.sealed_secrets,
                secret=rotated.secret_ciphertext,
                previous=rotated.previous_secret_ciphertext,
                previous_expires_at=rotated.previous_secret_expires_at,
            )
            if swapped:
                return CreatedWebhookEndpoint(rotated, secret)
        raise Conflict(f"Webhook endpoint {endpoint_id} kept changing; try again.")

    @audited("webhook_endpoint.enable", of_record)
    async def enable_webhook_endpoint(self, endpoint_id: str) -> WebhookEndpoint:
        """Re-enable an endpoint (after it was disabled for failing); its failure run restarts.

        Deliveries given up while it was disabled are not sent again.
        """
        await self.get_webhook_endpoint(endpoint_id)
        # Its health alone: a whole-row write of what was read could put back secrets that a
        # rotation re-sealed meanwhile.
        await self._store.set_webhook_endpoint_health(
            endpoint_id, enabled=True, disabled_at=None, failing_since=None
        )
        return await self.get_webhook_endpoint(endpoint_id)

    @audited("webhook_endpoint.disable", of_record)
    async def disable_webhook_endpoint(self, endpoint_id: str) -> WebhookEndpoint:
        """Stop delivering to an endpoint until :meth:`enable_webhook_endpoint`: its events
        are not queued meanwhile (the same as when failures disabled it)."""
        endpoint = await self.get_webhook_endpoint(endpoint_id)
        if endpoint.enabled:
            endpoint = replace(endpoint, enabled=False, disabled_at=self._clock.now())
            await self._store.update_webhook_endpoint(endpoint)
        return endpoint

    async def list_webhook_deliveries(self, endpoint_id: str) -> list[WebhookDelivery]:
        """The endpoint's delivery log, oldest first."""
        await self.get_webhook_endpoint(endpoint_id)
        return await self._store.list_webhook_deliveries(endpoint_id)
