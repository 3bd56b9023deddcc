"""Webhook operations on the façade beside ``_admin``'s (which disables an endpoint): choose its
events, redeliver a delivery, send a test event, and the one check that an endpoint or a
delivery belongs to a workspace (the dashboard's, D31; the CLI may call them too)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Final

from .._audit_actions import audited, of_record
from .._clock import Clock
from .._domain import Attempt, DeliveryReport, MessageRecord
from .._errors import RequestInvalid, ResourceNotFound
from .._lifecycle.rules import EventType
from .._responses import status_record
from ..store.base import Store, WebhookDelivery, WebhookEndpoint
from ._admin import _check_events
from ._outbox import WebhookOutbox
from ._signing import event_id

__all__ = ["TEST_EVENT_TYPE", "WebhookOpsMixin"]

#: The event a test sends: a made-up message (test mode, ``msg_test…``) that was delivered.
TEST_EVENT_TYPE: Final[EventType] = "message.delivered"


class WebhookOpsMixin:
    _store: Store
    _clock: Clock
    _webhooks: WebhookOutbox

    async def webhook_endpoint_of(self, workspace_id: str, endpoint_id: str) -> WebhookEndpoint:
        """The endpoint, if it belongs to the workspace; else :class:`ResourceNotFound`, as
        for one that does not exist (no hint that another workspace has it)."""
        endpoint = await self._store.get_webhook_endpoint(endpoint_id)
        if endpoint is None or endpoint.workspace_id != workspace_id:
            raise ResourceNotFound(f"Webhook endpoint {endpoint_id} not found.")
        return endpoint

    async def webhook_delivery_of(self, workspace_id: str, delivery_id: str) -> WebhookDelivery:
        """The delivery, if its endpoint belongs to the workspace; else ResourceNotFound."""
        delivery = await self._store.get_webhook_delivery(delivery_id)
        if delivery is None:
            raise ResourceNotFound(f"Webhook delivery {delivery_id} not found.")
        await self.webhook_endpoint_of(workspace_id, delivery.endpoint_id)
        return delivery

    async def webhook_deliveries_about(
        self, workspace_id: str, job_id: str
    ) -> list[WebhookDelivery]:
        """The workspace's webhook deliveries whose event is about ``job_id``, oldest first
        (a message's timeline: ``messages show`` and the dashboard).

        Deliveries are kept per endpoint, not per message: each event's body names its job.
        Reading every endpoint's log is fine for one message an operator looks at.
        """
        found = []
        for endpoint in await self._store.list_webhook_endpoints(workspace_id):
            for delivery in await self._store.list_webhook_deliveries(endpoint.id):
                if _job_of(delivery.payload) == job_id:
                    found.append(delivery)
        return sorted(found, key=lambda d: (d.created_at, d.id))

    @audited("webhook_endpoint.events", of_record)
    async def set_webhook_events(
        self, endpoint_id: str, events: Sequence[str] | None
    ) -> WebhookEndpoint:
        """Which events an endpoint receives (``None`` or empty: every event)."""
        endpoint = replace(await self._endpoint(endpoint_id), events=_check_events(events))
        await self._store.update_webhook_endpoint(endpoint)
        return endpoint

    async def redeliver_webhook(self, delivery_id: str) -> WebhookDelivery:
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

    async def send_test_webhook(self, endpoint_id: str) -> WebhookDelivery:
        """Queue a test event to one endpoint, whatever events it chose: a made-up test-mode
        message (``msg_test…``, ``livemode: false``) that was delivered, signed as any other.
        Returns its delivery; the worker makes it."""
        endpoint = await self._endpoint(endpoint_id)
        if not endpoint.enabled:
            raise RequestInvalid.for_field("endpoint", "is disabled: enable it first")
        data = status_record(_sample_message(endpoint.workspace_id, self._clock.now())).to_dict()
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


def _job_of(payload: bytes) -> str | None:
    try:
        event = json.loads(payload)
    except ValueError:
        return None
    data = event.get("data") if isinstance(event, dict) else None
    job_id = data.get("job_id") if isinstance(data, dict) else None
    return job_id if isinstance(job_id, str) else None


def _sample_message(workspace_id: str, now: datetime) -> MessageRecord:
    return MessageRecord(
        job_id="msg_test_webhook",
        workspace_id=workspace_id,
        livemode=False,
        status="delivered",
        to="+905550000000",
        channel="sms",
        provider="sms_a",
        created_at=now,
        updated_at=now,
        text="A test event from the unified-messaging dashboard.",
        sender="TEST",
        sent_at=now,
        final_at=now,
        attempts=(Attempt("sms_a", "delivered", now, provider_message_id="test"),),
        dlr=DeliveryReport(status="delivered", received_at=now, provider_status="DELIVERED"),
        segments=1,
        encoding="gsm7",
    )
