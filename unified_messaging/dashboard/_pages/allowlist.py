"""Allowlist: the workspace's IP allowlist (D18) for its API keys; add and remove entries.

Before a change that would shut out the address the user is on (the first entry that does
not cover it, or removing the entry that does), the page asks again and says so; the answer
is the same rule the API applies (``_access.authorize.admits``).
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from ..._access.authorize import admits, normalize_allowlist_entry
from ..._errors import RequestInvalid
from .._app import Dashboard, route
from .._notices import Notice
from .._ui import Page

__all__ = ["routes"]


def routes(dashboard: Dashboard) -> list[Route]:
    return [
        route("/allowlist", dashboard.guarded(allowlist_page), "GET", "POST"),
        route("/allowlist/remove", dashboard.guarded(remove), "POST"),
    ]


async def allowlist_page(page: Page) -> Response:
    if page.request.method == "POST":
        return await _add(page)
    return await _render(page)


async def _render(
    page: Page,
    *,
    error: str | None = None,
    confirm: dict[str, str] | None = None,
    status: int = 200,
) -> Response:
    workspace = page.require_workspace()
    entries = await page.messenger.allowlist.list(workspace.id)
    me = page.viewer.client_address
    return page.render(
        "allowlist.html",
        entries=entries,
        me=me,
        covering={e for e in entries if me is not None and admits([e], me)},
        admitted=admits(entries, me),
        error=error,
        confirm=confirm,
        typed=page.form.get("cidr"),
        status=status,
    )


async def _add(page: Page) -> Response:
    workspace = page.require_workspace()
    cidr = page.form.get("cidr")
    entries = await page.messenger.allowlist.list(workspace.id)
    me = page.viewer.client_address
    if page.form.get("confirmed") != "1" and not entries:
        # The first entry closes the list to everything else: if it leaves out this address,
        # say so first (the entry is read by D18's own rule before we ask).
        try:
            entry = normalize_allowlist_entry(cidr)
        except RequestInvalid as exc:
            return await _render(page, error=exc.message, status=400)
        if not admits([entry], me):
            return await _render(page, confirm={"action": "add", "cidr": entry})
    try:
        entry = await page.messenger.allowlist.add(workspace.id, cidr)
    except RequestInvalid as exc:
        return await _render(page, error=exc.message, status=400)
    return await page.done("/allowlist", Notice(f"Added {entry} to the allowlist."))


async def remove(page: Page) -> Response:
    workspace = page.require_workspace()
    cidr = page.form.get("cidr")
    entries = await page.messenger.allowlist.list(workspace.id)
    me = page.viewer.client_address
    left = [e for e in entries if e != cidr]
    if page.form.get("confirmed") != "1" and admits(entries, me) and not admits(left, me):
        return await _render(page, confirm={"action": "remove", "cidr": cidr})
    removed = await page.messenger.allowlist.remove(workspace.id, cidr)
    return await page.done("/allowlist", Notice(f"Removed {removed} from the allowlist."))
