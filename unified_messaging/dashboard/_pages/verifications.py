"""Verifications (D34): the viewer's mode's newest one-time code verifications (each with its
code message's text as the status record shows it: a live code masked), the conversion per
channel over the last day, the SMS-pumping guard's refusals and its settings (a change is
audited under the signed-in user's name). Every figure is a ``Messenger`` call."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from ..._errors import MessageNotFound, MessagingError, RequestInvalid
from ...verifications._guard_rules import parse_velocity
from .._app import Dashboard, route
from .._notices import Notice
from .._ui import Page

__all__ = ["routes"]

RECENT = 20
REFUSALS = 20
HOURS = 24


def routes(dashboard: Dashboard) -> list[Route]:
    return [
        route("/verifications", dashboard.guarded(verifications_page), "GET"),
        route("/verifications/guard", dashboard.guarded(change_guard), "POST"),
    ]


async def verifications_page(
    page: Page, *, error: str | None = None, status: int = 200
) -> Response:
    principal = await page.principal()
    service = page.messenger.verifications
    recent = await service.recent(principal, RECENT)
    texts: dict[str, str] = {}
    for verification in recent:
        jobs = [send.job_id for send in verification.sends]
        if jobs:
            try:
                record = await page.messenger.get_message(principal, jobs[-1])
            except MessageNotFound:
                continue
            texts[verification.id] = record.body or ""
    stats = await service.stats(principal, {"hours": HOURS})
    refusals = await page.messenger.audit.list(
        workspace_id=principal.workspace_id, action="verification.fraud_refused", limit=REFUSALS
    )
    guard = await service.guard.settings(principal.workspace_id)
    return page.render(
        "verifications.html",
        recent=recent,
        texts=texts,
        stats=stats,
        refusals=refusals.data,
        guard=guard,
        typed=page.form.first_values() if error else {},
        error=error,
        status=status,
    )


async def change_guard(page: Page) -> Response:
    workspace = page.require_workspace()
    form = page.form
    try:
        prefix = parse_velocity(form.get("prefix_limit"), "prefix_limit")
        address = parse_velocity(form.get("address_limit"), "address_limit")
        digits_text = form.get("prefix_digits").strip()
        if not digits_text.isdigit():
            raise RequestInvalid.for_field("prefix_digits", "must be 3-9")
        await page.messenger.verifications.guard.update_settings(
            workspace.id, prefix_limit=prefix, prefix_digits=int(digits_text),
            address_limit=address,
        )  # fmt: skip
    except MessagingError as exc:
        return await verifications_page(page, error=exc.message, status=exc.http_status)
    return await page.done("/verifications", Notice("The SMS-pumping guard is changed."))
