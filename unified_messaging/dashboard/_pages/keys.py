"""API keys: the workspace's keys in the mode being viewed; create one (its secret is shown
on the answer to the create, once, never again), revoke one, with its rate limit."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from ..._admin import CreatedApiKey
from ..._errors import RequestInvalid
from .._app import Dashboard, route
from .._ui import Page

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
    page: Page,
    *,
    created: CreatedApiKey | None = None,
    error: RequestInvalid | None = None,
    status: int = 200,
) -> Response:
    workspace = page.require_workspace()
    keys = [k for k in await page.messenger.list_api_keys(workspace.id)
            if k.livemode == page.viewer.livemode]  # fmt: skip
    return page.render(
        "keys.html",
        keys=keys,
        policies={k.id: page.messenger.rate_policy(k) for k in keys},
        created=created,
        error=error,
        form=page.form.first_values(),
        now=page.messenger.now(),
        status=status,
    )


async def _create(page: Page) -> Response:
    workspace = page.require_workspace()
    try:
        created = await page.messenger.create_api_key(
            workspace.id,
            livemode=page.viewer.livemode,
            name=page.form.get("name").strip() or None,
            rate_limit=_number(page, "rate_limit"),
            rate_burst=_whole_number(page, "rate_burst"),
        )
    except RequestInvalid as exc:
        return await _render(page, error=exc, status=400)
    return await _render(page, created=created, status=201)


async def revoke(page: Page) -> Response:
    workspace = page.require_workspace()
    key_id = page.request.path_params["key_id"]
    await page.messenger.revoke_api_key(key_id, workspace_id=workspace.id)
    return page.redirect("/keys")


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
