"""Webhooks: the workspace's endpoints; add one (its secret shown once, on the page the add
redirects to), choose its events,
enable or disable it, rotate its secret (the new one shown once), send it a test event, remove
it; its deliveries with their status and the receiver's answer code, and redelivery.

Every action names an endpoint or a delivery by id; ``Messenger.webhook_endpoint_of`` /
``webhook_delivery_of`` first make sure it is the viewer's workspace's (else 404).
"""

from __future__ import annotations

from typing import Literal

from starlette.responses import Response
from starlette.routing import Route

from ..._errors import RequestInvalid
from ..._lifecycle.rules import EVENT_TYPES
from ...store.base import WebhookEndpoint
from .._app import Dashboard, route
from .._notices import Notice
from .._ui import Page, field_errors

__all__ = ["routes"]


def routes(dashboard: Dashboard) -> list[Route]:
    g = dashboard.guarded
    return [
        route("/webhooks", g(webhooks_page), "GET", "POST"),
        route("/webhooks/{endpoint_id}", g(endpoint_page)),
        route("/webhooks/{endpoint_id}/events", g(set_events), "POST"),
        route("/webhooks/{endpoint_id}/enable", g(enable), "POST"),
        route("/webhooks/{endpoint_id}/disable", g(disable), "POST"),
        route("/webhooks/{endpoint_id}/rotate", g(rotate), "POST"),
        route("/webhooks/{endpoint_id}/test", g(send_test), "POST"),
        route("/webhooks/{endpoint_id}/remove", g(remove), "POST"),
        route("/webhooks/deliveries/{delivery_id}/redeliver", g(redeliver), "POST"),
    ]


async def webhooks_page(page: Page) -> Response:
    workspace = page.require_workspace()
    error: RequestInvalid | None = None
    if page.request.method == "POST":
        try:
            created = await page.messenger.webhooks.create(
                workspace.id, page.form.get("url").strip(), events=page.form.getlist("events")
            )
        except RequestInvalid as exc:
            error = exc
        else:
            shown = Notice(
                "Its signing secret is shown this once and cannot be shown again: copy it to "
                "your receiver now.",
                title="Endpoint added.",
                secret=created.secret,
                element_id="new-webhook-secret",
                copy_text="Copy secret",
                link=(f"/webhooks/{created.endpoint.id}", "Open the endpoint"),
            )
            return await page.done("/webhooks", shown)
    endpoints = await page.messenger.webhooks.list(workspace.id)
    return page.render(
        "webhooks.html",
        endpoints=endpoints,
        error=error and error.message,
        errors=field_errors(error),
        typed=page.form.get("url"),
        chosen=page.form.getlist("events"),
        event_types=EVENT_TYPES,
        status=400 if error else 200,
    )


async def endpoint_page(page: Page) -> Response:
    endpoint = await _endpoint(page)
    deliveries = await page.messenger.webhooks.list_deliveries(endpoint.id)
    return page.render(
        "webhook.html",
        endpoint=endpoint,
        deliveries=list(reversed(deliveries)),  # newest first
        event_types=EVENT_TYPES,
    )


async def set_events(page: Page) -> Response:
    endpoint = await _endpoint(page)
    await page.messenger.webhooks.set_events(endpoint.id, page.form.getlist("events"))
    return await _back(page, endpoint, "Events saved.")


async def enable(page: Page) -> Response:
    endpoint = await _endpoint(page)
    await page.messenger.webhooks.enable(endpoint.id)
    return await _back(page, endpoint, "Enabled: events are sent to it again.")


async def disable(page: Page) -> Response:
    endpoint = await _endpoint(page)
    await page.messenger.webhooks.disable(endpoint.id)
    return await _back(page, endpoint, "Disabled: no events are sent to it.")


async def rotate(page: Page) -> Response:
    endpoint = await _endpoint(page)
    rotated = await page.messenger.webhooks.rotate_secret(endpoint.id)
    shown = Notice(
        "It is shown this once. The old secret keeps signing beside it for a day, so switch "
        "your receiver within that time.",
        title="New signing secret.",
        secret=rotated.secret,
        element_id="rotated-secret",
        copy_text="Copy secret",
    )
    return await page.done(f"/webhooks/{endpoint.id}", shown)


async def send_test(page: Page) -> Response:
    endpoint = await _endpoint(page)
    try:
        await page.messenger.webhooks.send_test(endpoint.id)
    except RequestInvalid as exc:
        return await _back(page, endpoint, f"No test event was sent: {exc.message}", "error")
    return await _back(page, endpoint, "A test event is on its way; it is listed below.")


async def remove(page: Page) -> Response:
    endpoint = await _endpoint(page)
    await page.messenger.webhooks.remove(endpoint.id)
    return await page.done("/webhooks", Notice(f"Removed the endpoint {endpoint.url}."))


async def redeliver(page: Page) -> Response:
    workspace = page.require_workspace()
    delivery = await page.messenger.webhooks.delivery_of(
        workspace.id, page.request.path_params["delivery_id"]
    )
    endpoint = await page.messenger.webhooks.of(workspace.id, delivery.endpoint_id)
    try:
        await page.messenger.webhooks.redeliver(delivery.id)
    except RequestInvalid as exc:
        return await _back(page, endpoint, f"Not sent again: {exc.message}", "error")
    return await _back(page, endpoint, "Sent again: see it below.")


async def _back(
    page: Page, endpoint: WebhookEndpoint, text: str, tone: Literal["notice", "error"] = "notice"
) -> Response:
    return await page.done(f"/webhooks/{endpoint.id}", Notice(text, tone=tone))


async def _endpoint(page: Page) -> WebhookEndpoint:
    workspace = page.require_workspace()
    return await page.messenger.webhooks.of(workspace.id, page.request.path_params["endpoint_id"])
