"""Connections: the workspace's provider connections; add one with a form built from the
provider's credentials schema (secrets in password fields, never shown back), test one, make
one the default, set its senders, send rate and circuit-breaker thresholds; each breaker's
state.

Every action names a connection by id; ``Messenger.connection_of`` first makes sure it is the
viewer's workspace's (else 404).
"""

from __future__ import annotations

from typing import cast

from starlette.responses import Response
from starlette.routing import Route

from ..._domain import Connection
from ..._errors import MessagingError, RequestInvalid
from ..._types import ALL_PROVIDERS, IYS_MODES, IysMode, ProviderCode
from .._app import Dashboard, route
from .._notices import Notice
from .._ui import Page, field_errors

__all__ = ["routes"]

_CREDENTIAL = "cred_"  # a credential field's form name: cred_password
_BREAKER_FIELDS = ("window", "min_calls", "failure_ratio", "consecutive", "cooldown")


def routes(dashboard: Dashboard) -> list[Route]:
    g = dashboard.guarded
    return [
        route("/connections", g(connections_page), "GET", "POST"),
        route("/connections/new", g(new_connection)),
        route("/connections/{connection_id}", g(connection_page)),
        route("/connections/{connection_id}/default", g(make_default), "POST"),
        route("/connections/{connection_id}/test", g(test), "POST"),
        route("/connections/{connection_id}/senders", g(set_senders), "POST"),
        route("/connections/{connection_id}/rate", g(set_rate), "POST"),
        route("/connections/{connection_id}/breaker", g(set_breaker), "POST"),
        route("/connections/{connection_id}/account", g(read_account), "POST"),
        route("/connections/{connection_id}/threshold", g(set_threshold), "POST"),
    ]


async def connections_page(page: Page) -> Response:
    if page.request.method == "POST":
        return await _add(page)
    workspace = page.require_workspace()
    connections = await page.messenger.connections.list(workspace.id)
    health = {h.connection_id: h for h in await page.messenger.connections.health(workspace.id)}
    accounts = {a.connection_id: a for a in await page.messenger.accounts.list(workspace.id)}
    return page.render("connections.html", connections=connections, health=health,
                       accounts=accounts, providers=ALL_PROVIDERS)  # fmt: skip


async def new_connection(page: Page, *, error: MessagingError | None = None) -> Response:
    provider = page.request.query_params.get("provider") or page.form.get("provider")
    fields = page.messenger.connections.credential_fields(provider)  # 400 for an unknown code
    return page.render(
        "connection_new.html",
        provider=provider,
        fields=fields,
        iys_modes=IYS_MODES,
        form=page.form.first_values(),
        error=error and error.message,
        errors=field_errors(error),
        status=error.http_status if error else 200,
    )


async def _add(page: Page) -> Response:
    workspace = page.require_workspace()
    form = page.form
    provider = form.get("provider")
    credentials = {name.removeprefix(_CREDENTIAL): value
                   for name, value in form.first_values().items()
                   if name.startswith(_CREDENTIAL) and value != ""}  # fmt: skip
    try:
        connection = await page.messenger.connections.add(
            workspace.id,
            cast(ProviderCode, provider),
            credentials=credentials,
            default_sender=form.get("default_sender").strip() or None,
            approved_senders=_sender_list(form.get("approved_senders")),
            iys_mode=cast(IysMode, form.get("iys_mode", "informational")),
            make_default=form.get("make_default") == "1",
            base_url=form.get("base_url").strip() or None,
        )
    except MessagingError as exc:
        # Credentials are never put back into the form: the user types them again.
        return await new_connection(page, error=exc)
    return await page.done(
        f"/connections/{connection.id}",
        Notice(f"Connected {connection.provider}; its credentials are stored encrypted."),
    )


async def connection_page(
    page: Page,
    *,
    connection: Connection | None = None,
    error: MessagingError | None = None,
    form: str | None = None,
) -> Response:
    """The connection; after a refused change, with what was typed into ``form`` (the one
    refused) and the error beside its field."""
    connection = connection or await _connection(page)
    health = {h.connection_id: h for h in await page.messenger.connections.health(
        connection.workspace_id)}  # fmt: skip
    return page.render(
        "connection.html",
        connection=connection,
        account=await page.messenger.accounts.get(connection.id),
        health=health.get(connection.id),
        refused=form,
        typed=page.form.first_values(),
        error=error and error.message,
        errors=field_errors(error),
        status=error.http_status if error else 200,
    )


async def make_default(page: Page) -> Response:
    connection = await _connection(page)
    await page.messenger.connections.set_default(connection.id)
    notice = f"{connection.provider} is the default connection now."
    return await page.done("/connections", Notice(notice))


async def test(page: Page) -> Response:
    connection = await _connection(page)
    try:
        await page.messenger.connections.test(connection.id)
    except MessagingError as exc:
        why = Notice(f"The provider did not accept it: {exc.message}", tone="error")
        return await page.done(f"/connections/{connection.id}", why)
    return await page.done(
        f"/connections/{connection.id}", Notice("The provider accepted the credentials.")
    )


async def read_account(page: Page) -> Response:
    """Read the provider account now (the worker does it every 15 minutes)."""
    connection = await _connection(page)
    account = await page.messenger.accounts.refresh(connection.id)
    if account.state == "failed":
        why = Notice(f"The provider could not be read: {account.error}", tone="error")
        return await page.done(f"/connections/{connection.id}", why)
    return await page.done(f"/connections/{connection.id}", Notice("Account read."))


async def set_threshold(page: Page) -> Response:
    connection = await _connection(page)
    try:
        await page.messenger.accounts.set_threshold(
            connection.id, page.form.get("threshold").strip() or None
        )
    except RequestInvalid as exc:
        return await connection_page(page, connection=connection, error=exc, form="threshold")
    return await page.done(f"/connections/{connection.id}", Notice("Low-balance alert saved."))


async def set_senders(page: Page) -> Response:
    connection = await _connection(page)
    try:
        await page.messenger.connections.set_senders(
            connection.id,
            default_sender=page.form.get("default_sender").strip() or None,
            approved_senders=_sender_list(page.form.get("approved_senders")),
        )
    except RequestInvalid as exc:
        return await connection_page(page, connection=connection, error=exc, form="senders")
    return await page.done(f"/connections/{connection.id}", Notice("Senders saved."))


async def set_rate(page: Page) -> Response:
    connection = await _connection(page)
    try:
        limits = {name: _rate(page.form.get(name), name) for name in ("max_rate", "max_calls")}
        await page.messenger.connections.set_send_rate(connection.id, **limits)
    except RequestInvalid as exc:
        return await connection_page(page, connection=connection, error=exc, form="rate")
    return await page.done(f"/connections/{connection.id}", Notice("Send rate saved."))


async def set_breaker(page: Page) -> Response:
    connection = await _connection(page)
    typed = {name: page.form.get(name) for name in _BREAKER_FIELDS if page.form.get(name).strip()}
    try:
        changes: dict[str, object] = {
            name: _number(text, f"breaker_{name}") for name, text in typed.items()
        }
        await page.messenger.connections.set_breaker_policy(connection.id, None, **changes)
    except RequestInvalid as exc:
        return await connection_page(page, connection=connection, error=exc, form="breaker")
    return await page.done(f"/connections/{connection.id}", Notice("Breaker thresholds saved."))


def _sender_list(text: str) -> list[str]:
    """The approved senders field: comma-separated, as the form says."""
    return [s.strip() for s in text.split(",") if s.strip()]


def _rate(text: str, name: str) -> float | str | None:
    """A rate field: blank is the provider's default, ``off`` no limit, else a number that
    ``set_send_rate`` judges."""
    text = text.strip().lower()
    if text in ("", "default"):
        return "default"
    if text == "off":
        return "off"
    return _number(text, name)


def _number(text: str, name: str) -> float | int:
    """A number as typed (a whole one stays whole: counts are whole); its rule judges it."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    try:
        return float(text)
    except ValueError:
        raise RequestInvalid.for_field(name, "must be a number") from None


async def _connection(page: Page) -> Connection:
    workspace = page.require_workspace()
    return await page.messenger.connections.of(
        workspace.id, page.request.path_params["connection_id"]
    )
