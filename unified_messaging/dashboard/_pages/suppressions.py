"""Suppressions: the workspace's suppression list in the viewer's mode; add,
filter, page and remove entries. Every action is a ``Messenger`` call (audited under the
signed-in user's name); the rules, normalisation included, are the façade's."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from ..._errors import MessagingError, NotFound
from ...suppressions._rules import CHANNELS
from .._app import Dashboard, route
from .._notices import Notice
from .._ui import Page

__all__ = ["routes"]


def routes(dashboard: Dashboard) -> list[Route]:
    return [
        route("/suppressions", dashboard.guarded(suppressions_page), "GET", "POST"),
        route("/suppressions/remove", dashboard.guarded(remove), "POST"),
    ]


async def suppressions_page(page: Page) -> Response:
    if page.request.method == "POST":
        return await _add(page)
    return await _render(page)


async def _render(page: Page, *, error: str | None = None, status: int = 200) -> Response:
    principal = await page.principal()
    query = page.request.query_params
    search = {
        name: query[name] for name in ("channel", "recipient", "starting_after") if query.get(name)
    }
    try:
        listing = await page.messenger.suppressions.list(principal, {**search, "limit": 50})
    except MessagingError as exc:
        # A filter the rules refuse (a number no channel takes, a stale cursor): say so.
        error, search = exc.message, {}
        listing = await page.messenger.suppressions.list(principal, {"limit": 50})
        status = 400 if status == 200 else status
    return page.render(
        "suppressions.html",
        entries=listing.data,
        has_more=listing.has_more,
        channels=CHANNELS,
        search=search,
        typed=page.form.first_values() if error else {},
        error=error,
        status=status,
    )


async def _add(page: Page) -> Response:
    principal = await page.principal()
    entry = {
        "channel": page.form.get("channel"),
        "recipient": page.form.get("recipient").strip(),
    }
    reason = page.form.get("reason").strip()
    if reason:
        entry["reason"] = reason
    try:
        added = await page.messenger.suppressions.add(principal, entry, source="dashboard")
    except MessagingError as exc:
        return await _render(page, error=exc.message, status=exc.http_status)
    notice = Notice(f"{added.recipient} is suppressed on {added.channel}.")
    return await page.done("/suppressions", notice)


async def remove(page: Page) -> Response:
    principal = await page.principal()
    target = {"channel": page.form.get("channel"), "recipient": page.form.get("recipient")}
    try:
        removed = await page.messenger.suppressions.remove(principal, target)
    except NotFound:
        # Removed meanwhile (another tab, another user): the list shows it gone.
        return await page.done("/suppressions")
    except MessagingError as exc:
        return await _render(page, error=exc.message, status=exc.http_status)
    notice = Notice(f"{removed.recipient} is no longer suppressed on {removed.channel}.")
    return await page.done("/suppressions", notice)
