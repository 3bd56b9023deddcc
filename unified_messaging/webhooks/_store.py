"""The store's part of webhook endpoints and deliveries: the protocol both stores implement.

:class:`~unified_messaging.store.base.Store` is the sum of every room's part."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from ..store._records import WorkItem

__all__ = ["WebhookDelivery", "WebhookEndpoint", "WebhookStore"]


@dataclass(frozen=True, slots=True)
class WebhookEndpoint:
    """A workspace's webhook receiver (D19). The secret is a vault ciphertext."""

    id: str
    workspace_id: str
    url: str
    events: tuple[str, ...]
    secret_ciphertext: str = field(repr=False)
    created_at: datetime
    enabled: bool = True
    disabled_at: datetime | None = None
    #: When the current run of failed deliveries began; five days of it disables the endpoint.
    failing_since: datetime | None = None
    #: The secret before the last rotation, still signing beside the new one until it expires.
    previous_secret_ciphertext: str | None = field(default=None, repr=False)
    previous_secret_expires_at: datetime | None = None

    @property
    def sealed_secrets(self) -> tuple[str, str | None]:
        """(secret, previous secret) as sealed: what :meth:`Store.swap_webhook_secrets`
        compares before it writes."""
        return self.secret_ciphertext, self.previous_secret_ciphertext


@dataclass(frozen=True, slots=True)
class WebhookDelivery:
    """One event on its way to one endpoint; retried under the same ``event_id`` (D19)."""

    id: str
    endpoint_id: str
    event_id: str
    event_type: str
    payload: bytes = field(repr=False)
    #: ``pending`` until it succeeds or is given up; the lifecycle names the other states.
    status: str
    created_at: datetime
    updated_at: datetime
    attempts: int = 0
    next_attempt_at: datetime | None = None
    last_status_code: int | None = None
    last_error: str | None = None
    #: The start of the receiver's last answer (at most 2 KiB), as it sent it.
    last_answer: str | None = None


class WebhookStore(Protocol):
    """Protocol: webhook endpoints and their deliveries (D19)."""

    async def add_webhook_endpoint(self, endpoint: WebhookEndpoint) -> None: ...

    async def get_webhook_endpoint(self, endpoint_id: str) -> WebhookEndpoint | None: ...

    async def list_webhook_endpoints(self, workspace_id: str) -> list[WebhookEndpoint]:
        """Oldest first."""
        ...

    async def update_webhook_endpoint(self, endpoint: WebhookEndpoint) -> None:
        """Store an endpoint's settings (URL, events, health); its sealed secrets are left as
        they are stored: they move only by :meth:`swap_webhook_secrets`."""
        ...

    async def swap_webhook_secrets(
        self,
        endpoint_id: str,
        *,
        expected: tuple[str, str | None],
        secret: str,
        previous: str | None,
        previous_expires_at: datetime | None,
    ) -> bool:
        """Compare-and-set of an endpoint's sealed secrets (D19, D21): store ``secret``,
        ``previous`` and its expiry only if its (secret, previous secret) are still
        ``expected``, and change nothing else of the row (its health, its URL). ``False``
        when they changed meanwhile or the endpoint is gone: the caller reads it again."""
        ...

    async def set_webhook_endpoint_health(
        self,
        endpoint_id: str,
        *,
        enabled: bool,
        disabled_at: datetime | None,
        failing_since: datetime | None,
    ) -> None:
        """Change only how an endpoint is faring, so a delivery's outcome never overwrites a
        secret rotated meanwhile. An endpoint that is gone is left gone (no error)."""
        ...

    async def remove_webhook_endpoint(self, endpoint_id: str) -> bool:
        """Remove the endpoint and its deliveries."""
        ...

    async def add_webhook_delivery(
        self, delivery: WebhookDelivery, work: WorkItem | None = None
    ) -> None:
        """Insert a delivery, and with it (in the same transaction) the work item that will
        make it: a crash can never leave one without the other. :class:`AlreadyExists` if the
        endpoint has this ``event_id`` already (or the work id is taken);
        :class:`ResourceNotFound` if the endpoint does not exist."""
        ...

    async def record_webhook_attempt(
        self,
        delivery: WebhookDelivery,
        *,
        retry: WorkItem | None,
        held: str,
        worker_id: str,
        now: datetime,
        complete: bool,
    ) -> bool:
        """Insert a delivery whose first attempt was just made, its outcome in it, with the
        work item of its next attempt (``retry``, while it stays pending), in **one**
        transaction, and only while ``worker_id`` holds the work item ``held`` (the event
        item whose handler made the attempt) under a lease that runs past ``now``.
        ``complete`` deletes ``held`` in the same transaction (the event item is done).

        ``False``, and nothing written, if the item is no longer held so (its lease was lost
        or ran out: another worker may run it now). :class:`AlreadyExists` if the endpoint
        has this ``event_id`` already; :class:`ResourceNotFound` if the endpoint is gone.
        Either error writes nothing either (``held`` stays held)."""
        ...

    async def get_webhook_delivery(self, delivery_id: str) -> WebhookDelivery | None: ...

    async def update_webhook_delivery(self, delivery: WebhookDelivery) -> None: ...

    async def list_webhook_deliveries(self, endpoint_id: str) -> list[WebhookDelivery]:
        """Oldest first."""
        ...
