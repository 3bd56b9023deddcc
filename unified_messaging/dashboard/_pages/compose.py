"""Send a message: the compose form (a recipient; a text, or a template with its
variables; a provider and fallbacks, optional) in the viewer's mode.

It sends through ``Messenger.send``, the same call as ``POST /v1/messages``, wrapped by
:class:`~.._compose.Composer` so the audit log names the signed-in user (``message.send``).
In live mode a real phone gets the message and a provider account is charged: the form
first shows what ``Messenger.preview_send`` says would happen (the connection, the text as
the recipient gets it, its SMS parts) and sends only when that page's "Send now" is
pressed. A refused send is said beside the form, with what was typed kept.
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from ..._errors import MessagingError, RequestInvalid
from ..._types import ALL_PROVIDERS
from ...providers.base import PROFILES
from .._app import Dashboard, route
from .._compose import Composer
from .._notices import Notice
from .._ui import Page, field_errors

__all__ = ["routes"]

_FIELDS = ("to", "mode", "body", "template", "variables", "sender", "provider", "fallback")


def routes(dashboard: Dashboard) -> list[Route]:
    messenger = dashboard.messenger
    composer = Composer(messenger.store, messenger.clock, messenger.send)

    async def compose(page: Page) -> Response:
        if page.request.method == "POST":
            return await _post(page, composer)
        return await _form(page, {"mode": "text"})

    return [route("/compose", dashboard.guarded(compose), "GET", "POST")]


async def _form(
    page: Page,
    typed: dict[str, str],
    *,
    error: MessagingError | None = None,
    status: int = 200,
) -> Response:
    workspace = page.require_workspace()
    connections = await page.messenger.connections.list(workspace.id)
    templates = await page.messenger.templates.list(workspace.id)
    return page.render(
        "compose.html",
        typed=typed,
        templates=templates,
        connections=connections,
        providers=[(code, PROFILES[code].name) for code in ALL_PROVIDERS],
        profiles=PROFILES,
        error=None if error is None else error.message,
        errors=field_errors(error),
        status=status,
    )


async def _post(page: Page, composer: Composer) -> Response:
    typed = {name: page.form.get(name).strip() for name in _FIELDS}
    typed["body"] = page.form.get("body")  # the text as typed, spaces and lines kept
    if page.form.get("edit") == "1":  # "Change it" on the confirmation: the form again
        return await _form(page, typed)
    try:
        request = _request(typed)
        principal = await page.principal()
        if page.viewer.livemode and page.form.get("confirmed") != "1":
            preview = await page.messenger.preview_send(principal, request)
            workspace = page.require_workspace()
            charged = next(
                (c for c in await page.messenger.connections.list(workspace.id)
                 if c.provider == preview.provider),
                None,
            )  # fmt: skip
            return page.render(
                "compose_confirm.html",
                typed=typed,
                preview=preview,
                charged=charged,
                profiles=PROFILES,
            )
        sent = await composer.send(principal, request)
    except MessagingError as exc:
        return await _form(page, typed, error=exc, status=exc.http_status)
    mode = "live" if page.viewer.livemode else "test"
    notice = Notice(f"The {mode} message to {sent.to} was accepted ({sent.status}).")
    return await page.done(f"/messages/{sent.job_id}", notice)


def _request(typed: dict[str, str]) -> dict[str, object]:
    """The form's fields as ``POST /v1/messages``' body; the send's own rules judge it."""
    request: dict[str, object] = {"to": typed["to"]}
    if typed["mode"] == "template":
        request["template"] = typed["template"]
        variables = _variables(typed["variables"])
        if variables:
            request["variables"] = variables
    else:
        request["body"] = typed["body"]
    if typed["sender"]:
        request["sender"] = typed["sender"]
    if typed["provider"]:
        request["provider"] = typed["provider"]
    fallback = [code.strip() for code in typed["fallback"].split(",") if code.strip()]
    if fallback:
        request["fallback"] = fallback
    return request


def _variables(text: str) -> dict[str, str]:
    """``name=value`` lines (a value may hold ``=``); a line without ``=`` is refused."""
    variables: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        name, equals, value = line.partition("=")
        if not equals or not name.strip():
            raise RequestInvalid.for_field("variables", f"write each as name=value: {line!r}")
        variables[name.strip()] = value.strip()
    return variables
