"""Overview: today's messages by status, each provider's delivery rate today, each breaker,
this month's quota."""

from __future__ import annotations

from datetime import datetime, time

from starlette.responses import Response
from starlette.routing import Route

from .._app import Dashboard, route
from .._ui import Page

__all__ = ["routes"]


def routes(dashboard: Dashboard) -> list[Route]:
    return [route("/", dashboard.guarded(overview))]


async def overview(page: Page) -> Response:
    m = page.messenger
    workspace = page.require_workspace()
    now = m.clock.now()
    today = datetime.combine(now.date(), time(0), tzinfo=now.tzinfo)
    livemode = page.viewer.livemode
    counts = await m.messages.counts(workspace.id, since=today, livemode=livemode)
    health = await m.connections.health(workspace.id)
    quota = await m.workspaces.quota_usage(workspace.id)
    return page.render(
        "overview.html",
        workspace=workspace,
        counts=counts.by_status,
        providers=[(p, n, counts.success_rate(p)) for p, n in counts.by_provider.items()],
        health=health,
        quota=quota,
        today=today,
    )
