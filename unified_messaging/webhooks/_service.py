"""``messenger.webhooks``: a workspace's webhook endpoints (D19) and their deliveries: add,
list, remove, rotate the secret, enable and disable, choose the events, read the delivery
log, redeliver, send a test event.

The rules (URL checks, events, sealing the secret) are in :mod:`._admin`; the deliveries are
made by the outbox (:mod:`._outbox`) in the worker.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING

from .._errors import Conflict, RequestInvalid, ResourceNotFound
from .._ids import new_id
from .._responses import status_record
from ..audit._actions import audited, of_record
from ..store.base import WebhookEndpoint
from ._admin import (
    DEFAULT_ROTATION_OVERLAP,
    SWAP_TRIES,
    CreatedWebhookEndpoint,
    check_events,
    endpoint_refusal,
    seal_secret,
)
from ._operations import TEST_EVENT_TYPE, job_of, sample_message
from ._signing import event_id

if TYPE_CHECKING:
    from .._clock import Clock
    from ..store.base import Store, WebhookDelivery
    from ..vault._core import Vault
    from ._outbox import WebhookOutbox
    from ._sender import TargetPolicy

__all__ = ["Webhooks"]


class Webhooks:
    """``messenger.webhooks.create(workspace_id, url)`` and the rest of an endpoint's life."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        vault: Vault,
        policy: TargetPolicy,
        outbox: WebhookOutbox,
    ) -> None:
        self._store = store
        self._clock = clock
        self._vault = vault
        #: Which webhook targets are allowed (private and loopback addresses only if it says so).
        self._webhook_policy = policy
        self._webhooks = outbox

    def __repr__(self) -> str:
        return "<messenger.webhooks>"

    @audited("webhook_endpoint.create", lambda created, _: of_record(created.endpoint, _))
    async def create(
        self, workspace_id: str, url: str, *, events: Sequence[str] | None = None
    ) -> CreatedWebhookEndpoint:
        """Add a receiver for the workspace's message events; the secret is in the result."""
        from ._signing import generate_secret

        if await self._store.get_workspace(workspace_id) is None:
            raise ResourceNotFound(f"Workspace {workspace_id} not found.")
        refusal = endpoint_refusal(url, self._webhook_policy)
        if refusal is not None:
            raise refusal
        chosen = check_events(events)
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

    async def list(self, workspace_id: str) -> builtins.list[WebhookEndpoint]:
        if await self._store.get_workspace(workspace_id) is None:
            raise ResourceNotFound(f"Workspace {workspace_id} not found.")
        return await self._store.list_webhook_endpoints(workspace_id)

    async def get(self, endpoint_id: str) -> WebhookEndpoint:
        endpoint = await self._store.get_webhook_endpoint(endpoint_id)
        if endpoint is None:
            raise ResourceNotFound(f"Webhook endpoint {endpoint_id} not found.")
        return endpoint

    async def of(self, workspace_id: str, endpoint_id: str) -> WebhookEndpoint:
        """The endpoint, if it belongs to the workspace; else :class:`ResourceNotFound`, as
        for one that does not exist (no hint that another workspace has it)."""
        endpoint = await self._store.get_webhook_endpoint(endpoint_id)
        if endpoint is None or endpoint.workspace_id != workspace_id:
            raise ResourceNotFound(f"Webhook endpoint {endpoint_id} not found.")
        return endpoint

    @audited("webhook_endpoint.remove", of_record)
    async def remove(self, endpoint_id: str) -> WebhookEndpoint:
        """Remove the endpoint and its delivery log; pending deliveries are dropped.
        Returns the endpoint as it was."""
        endpoint = await self.get(endpoint_id)
        if not await self._store.remove_webhook_endpoint(endpoint_id):
            raise ResourceNotFound(f"Webhook endpoint {endpoint_id} not found.")
        return endpoint

    @audited("webhook_endpoint.rotate_secret", lambda created, _: of_record(created.endpoint, _))
    async def rotate_secret(
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
        # and the endpoint's health is never touched.
        for _ in range(SWAP_TRIES):
            endpoint = await self.get(endpoint_id)
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
    async def enable(self, endpoint_id: str) -> WebhookEndpoint:
        """Re-enable an endpoint (after it was disabled for failing); its failure run restarts.

        Deliveries given up while it was disabled are not sent again.
        """
        await self.get(endpoint_id)
        # Its health alone: a whole-row write of what was read could put back secrets that a
        # rotation re-sealed meanwhile.
        await self._store.set_webhook_endpoint_health(
            endpoint_id, enabled=True, disabled_at=None, failing_since=None
        )
        return await self.get(endpoint_id)

    @audited("webhook_endpoint.disable", of_record)
    async def disable(self, endpoint_id: str) -> WebhookEndpoint:
        """Stop delivering to an endpoint until :meth:`enable`: its events
        are not queued meanwhile (the same as when failures disabled it)."""
        endpoint = await self.get(endpoint_id)
        if endpoint.enabled:
            endpoint = replace(endpoint, enabled=False, disabled_at=self._clock.now())
            await self._store.update_webhook_endpoint(endpoint)
        return endpoint

    @audited("webhook_endpoint.events", of_record)
    async def set_events(self, endpoint_id: str, events: Sequence[str] | None) -> WebhookEndpoint:
        """Which events an endpoint receives (``None`` or empty: every event)."""
        endpoint = replace(await self._endpoint(endpoint_id), events=check_events(events))
        await self._store.update_webhook_endpoint(endpoint)
        return endpoint

    async def list_deliveries(self, endpoint_id: str) -> builtins.list[WebhookDelivery]:
        """The endpoint's delivery log, oldest first."""
        await self.get(endpoint_id)
        return await self._store.list_webhook_deliveries(endpoint_id)

    async def delivery_of(self, workspace_id: str, delivery_id: str) -> WebhookDelivery:
        """The delivery, if its endpoint belongs to the workspace; else ResourceNotFound."""
        delivery = await self._store.get_webhook_delivery(delivery_id)
        if delivery is None:
            raise ResourceNotFound(f"Webhook delivery {delivery_id} not found.")
        await self.of(workspace_id, delivery.endpoint_id)
        return delivery

    async def deliveries_about(
        self, workspace_id: str, job_id: str
    ) -> builtins.list[WebhookDelivery]:
        """The workspace's webhook deliveries whose event is about ``job_id``, oldest first
        (a message's timeline: ``messages show`` and the dashboard).

        Deliveries are kept per endpoint, not per message: each event's body names its job.
        Reading every endpoint's log is fine for one message an operator looks at.
        """
        found = []
        for endpoint in await self._store.list_webhook_endpoints(workspace_id):
            for delivery in await self._store.list_webhook_deliveries(endpoint.id):
                if job_of(delivery.payload) == job_id:
                    found.append(delivery)
        return sorted(found, key=lambda d: (d.created_at, d.id))

    async def redeliver(self, delivery_id: str) -> WebhookDelivery:
        """Send a finished delivery again, now, with the same ``webhook-id`` (D19). One that
        is still on its way is :class:`RequestInvalid`: it is being retried already."""
        delivery = await self._store.get_webhook_delivery(delivery_id)
        if delivery is None:
            raise ResourceNotFound(f"Webhook delivery {delivery_id} not found.")
        if delivery.status == "pending":
            raise RequestInvalid.for_field("delivery", "is still being delivered")
        endpoint = await self._endpoint(delivery.endpoint_id)
        if not endpoint.enabled:
            raise RequestInvalid.for_field("endpoint", "is disabled: enable it first")
        return await self._webhooks.redeliver(delivery)

    async def send_test(self, endpoint_id: str) -> WebhookDelivery:
        """Queue a test event to one endpoint, whatever events it chose: a made-up test-mode
        message (``msg_test…``, ``livemode: false``) that was delivered, signed as any other.
        Returns its delivery; the worker makes it."""
        endpoint = await self._endpoint(endpoint_id)
        if not endpoint.enabled:
            raise RequestInvalid.for_field("endpoint", "is disabled: enable it first")
        data = status_record(sample_message(endpoint.workspace_id, self._clock.now())).to_dict()
        delivery = await self._webhooks.queue_to(
            endpoint, TEST_EVENT_TYPE, data, event_id=event_id()
        )
        assert delivery is not None, "a new event id is never in the log"
        return delivery

    async def _endpoint(self, endpoint_id: str) -> WebhookEndpoint:
        endpoint = await self._store.get_webhook_endpoint(endpoint_id)
        if endpoint is None:
            raise ResourceNotFound(f"Webhook endpoint {endpoint_id} not found.")
        return endpoint
