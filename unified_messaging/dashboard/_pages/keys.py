"""API keys: the workspace's keys in the mode being viewed; create one (with a rate limit and
an expiry if wanted; its secret is shown on the page the create redirects to, once, never
again), revoke one."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from starlette.responses import Response
from starlette.routing import Route

from ..._errors import RequestInvalid
from .._app import Dashboard, route
from .._notices import Notice
from .._ui import Page, field_errors

__all__ = ["routes"]


def routes(dashboard: Dashboard) -> list[Route]:
    return [
        route("/keys", dashboard.guarded(keys_page), "GET", "POST"),
        route("/keys/{key_id}/revoke", dashboard.guarded(revoke), "POST"),
    ]


async def keys_page(page: Page) -> Response:
    if page.request.method == "POST":
        return await _create(page)
    return await _render(page)


async def _render(
    page: Page, *, error: RequestInvalid | None = None, status: int = 200
) -> Response:
    workspace = page.require_workspace()
    keys = [k for k in await page.messenger.keys.list(workspace.id)
            if k.livemode == page.viewer.livemode]  # fmt: skip
    return page.render(
        "keys.html",
        keys=keys,
        policies={k.id: page.messenger.access.rate_policy(k) for k in keys},
        error=error,
        errors=field_errors(error),
        form=page.form.first_values(),
        now=page.messenger.clock.now(),
        status=status,
    )


async def _create(page: Page) -> Response:
    workspace = page.require_workspace()
    try:
        created = await page.messenger.keys.create(
            workspace.id,
            livemode=page.viewer.livemode,
            name=page.form.get("name").strip() or None,
            rate_limit=_number(page, "rate_limit"),
            rate_burst=_whole_number(page, "rate_burst"),
            expires_at=_expiry(page),
        )
    except RequestInvalid as exc:
        return await _render(page, error=exc, status=400)
    mode = "live" if created.record.livemode else "test"
    shown = Notice(
        "Copy it now: it is shown this once and cannot be shown again.",
        title=f"Your new {mode} key.",
        secret=created.secret,
        element_id="new-key-secret",
        copy_text="Copy key",
    )
    return await page.done("/keys", shown)


async def revoke(page: Page) -> Response:
    workspace = page.require_workspace()
    key_id = page.request.path_params["key_id"]
    key = await page.messenger.keys.revoke(key_id, workspace_id=workspace.id)
    return await page.done("/keys", Notice(f"Revoked the key {key.display_prefix}…."))


_PICKED = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?")


def _expiry(page: Page) -> datetime | None:
    """The expiry field (a date picker's ``2027-01-31T00:00``, read as UTC as the form
    says); blank: the key never expires. Whether it may be that time is the admin rule's."""
    text = page.form.get("expires_at").strip()
    if not text:
        return None
    if not _PICKED.fullmatch(text):
        raise RequestInvalid.for_field(
            "expires_at", "must be a date and time, e.g. 2027-01-31T00:00"
        )
    try:
        return datetime.fromisoformat(text).replace(tzinfo=UTC)
    except ValueError:
        raise RequestInvalid.for_field("expires_at", "is not a real date and time") from None


def _number(page: Page, name: str) -> float | None:
    """A number field as typed (blank: not given); the admin method judges its value."""
    text = page.form.get(name).strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise RequestInvalid.for_field(name, "must be a number") from None


def _whole_number(page: Page, name: str) -> int | None:
    text = page.form.get(name).strip()
    if not text:
        return None
    if not text.isdigit():
        raise RequestInvalid.for_field(name, "must be a whole number") from None
    return int(text)
