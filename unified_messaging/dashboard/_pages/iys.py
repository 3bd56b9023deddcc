"""İYS: the workspace's İYS connection (D33). Shows where it stands (never the password or a
token): the connection, when İYS's changes were last pulled and the pull cursors, how many
consent changes wait to be registered, and the latest refusals. Connects (with İYS's API
user, or through an İletimerkezi or Verimor connection) and disconnects. Every action is a
``messenger.iys`` call, audited under the signed-in user's name; the form's CSRF token is
checked by the dashboard as for every form.
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from ..._errors import MessagingError
from ...iys.records import CONSENT_PROVIDERS, LIVE_BASE_URL
from .._app import Dashboard, route
from .._notices import Notice
from .._ui import Page, field_errors

__all__ = ["routes"]

_FIELDS = ("iys_code", "brand_code", "username", "base_url", "via_provider")


def routes(dashboard: Dashboard) -> list[Route]:
    return [
        route("/iys", dashboard.guarded(iys_page)),
        route("/iys/connect", dashboard.guarded(connect), "POST"),
        route("/iys/disconnect", dashboard.guarded(disconnect), "POST"),
    ]


async def iys_page(
    page: Page, *, error: MessagingError | None = None, typed: dict[str, str] | None = None
) -> Response:
    workspace = page.require_workspace()
    state = await page.messenger.iys.state(workspace.id)
    connections = await page.messenger.connections.list(workspace.id)
    providers = [c for c in connections if c.provider in CONSENT_PROVIDERS]
    return page.render(
        "iys.html",
        status=200 if error is None else error.http_status,
        state=state,
        policy=workspace.consent_policy,
        providers=providers,
        provider_names=CONSENT_PROVIDERS,
        live_base_url=LIVE_BASE_URL,
        error=None if error is None else error.message,
        errors=field_errors(error),
        typed=typed or {},
    )


async def connect(page: Page) -> Response:
    workspace = page.require_workspace()
    # The password is never put back into the form.
    typed = {name: page.form.get(name).strip() for name in _FIELDS}
    body: dict[str, object] = {name: value for name, value in typed.items() if value}
    if page.form.get("mode") == "provider":
        body = {name: body[name] for name in ("brand_code", "via_provider") if name in body}
    else:
        body.pop("via_provider", None)
        password = page.form.get("password")
        if password:
            body["password"] = password
    try:
        out = await page.messenger.iys.connect(workspace.id, body)
    except MessagingError as exc:
        return await iys_page(page, error=exc, typed=typed)
    through = f" through {out.via_provider}" if out.via_provider else ""
    return await page.done("/iys", Notice(f"Connected to İYS{through}."))


async def disconnect(page: Page) -> Response:
    workspace = page.require_workspace()
    try:
        await page.messenger.iys.disconnect(workspace.id)
    except MessagingError as exc:
        return await iys_page(page, error=exc)
    return await page.done("/iys", Notice("Disconnected from İYS."))
