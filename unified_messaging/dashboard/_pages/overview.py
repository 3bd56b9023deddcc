"""Overview: the delivery figures of the last 24 hours, 7 or 30 days (``messenger.stats``) as
charts, each breaker, this month's quota."""

from __future__ import annotations

from zoneinfo import ZoneInfo

from starlette.responses import Response
from starlette.routing import Route

from .._app import Dashboard, route
from .._overview_charts import DEFAULT_ZONE, WINDOW_NAMES, overview_view
from .._ui import Page

__all__ = ["routes"]


def routes(dashboard: Dashboard) -> list[Route]:
    return [route("/", dashboard.guarded(overview))]


async def overview(page: Page) -> Response:
    m = page.messenger
    workspace = page.require_workspace()
    # An unknown ?window= is the 400 of messenger.stats, shown as the error page.
    window = page.request.query_params.get("window", "24h")
    figures = await m.stats.overview(
        workspace.id,
        window=window,  # type: ignore[arg-type]
        livemode=page.viewer.livemode,
        time_zone=DEFAULT_ZONE,
    )
    health = await m.connections.health(workspace.id)
    accounts = await m.accounts.list(workspace.id)
    quota = await m.workspaces.quota_usage(workspace.id)
    return page.render(
        "overview.html",
        workspace=workspace,
        figures=figures,
        view=overview_view(figures, ZoneInfo(DEFAULT_ZONE), m.clock.now()),
        windows=WINDOW_NAMES,
        health=health,
        quota=quota,
        low_accounts=[a for a in accounts if a.low],
        accounts={a.connection_id: a for a in accounts},
    )
