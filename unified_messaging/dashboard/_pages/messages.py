"""Messages: the D29 list with its filters, and one message's timeline (attempts, fallbacks,
the delivery report), each with its text and the API key that sent it; the workspace's
switch that hides live text (personal data).

Both read through the viewer's principal, so another workspace's message, or the other
mode's, is "not found" here exactly as it is over REST, whatever id the URL names.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import get_args
from zoneinfo import ZoneInfo

from starlette.responses import Response
from starlette.routing import Route

from ..._errors import MessageNotFound, RequestInvalid
from ..._types import ALL_PROVIDERS, MessageStatus
from .._app import Dashboard, route
from .._notices import Notice
from .._ui import Page, display_zone

__all__ = ["routes"]

_FILTERS = ("to", "status", "provider", "created_after", "created_before", "starting_after")
_PAGE_SIZE = 50
_PICKER = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?")


def routes(dashboard: Dashboard) -> list[Route]:
    return [
        route("/messages", dashboard.guarded(message_list)),
        route("/messages/text-masking", dashboard.guarded(set_text_masking), "POST"),
        route("/messages/{job_id}", dashboard.guarded(message_detail)),
    ]


async def message_list(page: Page) -> Response:
    params = page.request.query_params
    filters = {name: params[name] for name in _FILTERS if params.get(name)}
    search: dict[str, object] = {**filters, "limit": _PAGE_SIZE}
    zone = display_zone(page.viewer.workspace)
    for name in ("created_after", "created_before"):
        if name in filters:
            search[name] = _as_utc(filters[name], zone)
    error = None
    try:
        listing = await page.messenger.list_messages(await page.principal(), search)
    except (RequestInvalid, MessageNotFound) as exc:
        # A filter the list cannot read (a bad date): said next to the form, nothing listed.
        listing, error = None, exc.message
    template = "_message_rows.html" if page.is_htmx else "messages.html"
    return page.render(
        template,
        masked=page.require_workspace().mask_live_text,
        listing=listing,
        filters=filters,
        error=error,
        statuses=get_args(MessageStatus),
        providers=ALL_PROVIDERS,
        status=400 if error else 200,
    )


def _as_utc(text: str, zone: str) -> str:
    """A date picker's ``2026-01-31T10:00`` (no zone: the form names the workspace's) as
    RFC 3339 UTC; anything else is left for D29's own check to judge."""
    if _PICKER.fullmatch(text):
        local = datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(zone))
        return local.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return text


async def message_detail(page: Page) -> Response:
    principal = await page.principal()
    record = await page.messenger.get_message(principal, page.request.path_params["job_id"])
    workspace_id = principal.workspace_id
    deliveries = await page.messenger.webhooks.deliveries_about(workspace_id, record.job_id)
    urls = {e.id: e.url for e in await page.messenger.webhooks.list(workspace_id)}
    masked = record.livemode and principal.workspace.mask_live_text
    return page.render(
        "message.html", message=record, deliveries=deliveries, urls=urls, masked=masked
    )


async def set_text_masking(page: Page) -> Response:
    """Hide (or show again) the text of the workspace's live messages: audited, with the
    user's name, like every change."""
    workspace = page.require_workspace()
    enabled = page.form.get("mask_live_text") == "1"
    await page.messenger.workspaces.set_text_masking(workspace.id, enabled)
    said = "hidden everywhere" if enabled else "shown again"
    return await page.done("/messages", Notice(f"The text of live messages is {said}."))
