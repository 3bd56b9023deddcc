"""Audit log (D32): every change made through the dashboard, the CLI or the admin methods,
newest first, for operators. Filters by workspace and action; pages follow the log's cursor.

The reading and its rules (the action names, the page size, an unknown cursor) are
``Messenger.list_audit_events``'; this page turns the query string into its arguments.
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from ..._errors import MessagingError
from ..._observability.logsafe import mask_numbers
from ...audit._events import AuditEvent
from ...audit._names import AUDIT_ACTIONS
from .._app import Dashboard, route
from .._ui import Page, provider_label

__all__ = ["routes"]

PAGE_SIZE = 50


def routes(dashboard: Dashboard) -> list[Route]:
    return [route("/audit", dashboard.guarded(audit_page), "GET")]


async def audit_page(page: Page) -> Response:
    if not page.viewer.user.is_operator:
        # D32: operators read the log; a member's workspace is one of many in it.
        return page.render("audit.html", operator=False, status=403)
    query = page.request.query_params
    workspace_id = query.get("workspace") or None
    action = query.get("action") or None
    starting_after = query.get("after") or None
    error = None
    try:
        found = await page.messenger.audit.list(
            workspace_id=workspace_id,
            action=action,
            limit=PAGE_SIZE,
            starting_after=starting_after,
        )
        events, has_more = found.data, found.has_more
    except MessagingError as exc:  # an unknown action or cursor typed into the URL
        events, has_more, error = [], False, exc.message
    names = {w.id: w.name for w in page.viewer.workspaces}
    labels = await _labels(page, {e.workspace_id for e in events if e.workspace_id})
    labels.update(await _recipients(page, events))
    return page.render(
        "audit.html",
        labels=labels,
        operator=True,
        events=events,
        has_more=has_more,
        names=names,
        actions=AUDIT_ACTIONS,
        chosen_workspace=workspace_id,
        chosen_action=action,
        error=error,
        status=400 if error else 200,
    )


async def _labels(page: Page, workspace_ids: set[str]) -> dict[str, str]:
    """What a person recognises beside an id the log names: a key's name, a connection's
    provider (``sms_c · Verimor``). Ids of what was removed since keep no label."""
    labels: dict[str, str] = {}
    for workspace_id in workspace_ids:
        for key in await page.messenger.keys.list(workspace_id):
            labels[key.id] = key.name or "(no name)"
        for connection in await page.messenger.connections.list(workspace_id):
            labels[connection.id] = provider_label(connection.provider)
    return labels


async def _recipients(page: Page, events: list[AuditEvent]) -> dict[str, str]:
    """A suppression's or a consent's recipient beside its id, masked as the logs mask a
    number (its last four digits): who it was about, without the whole number on screen.
    Entries removed since keep no label."""
    store = page.messenger.store
    labels: dict[str, str] = {}
    for event in events:
        target, workspace_id = event.target, event.workspace_id
        if workspace_id is None or target in labels:
            continue
        for livemode in (True, False):
            if target.startswith("sup_"):
                entry = await store.get_suppression(workspace_id, livemode, target)
                recipient = None if entry is None else entry.recipient
            elif target.startswith("cns_"):
                consent = await store.get_consent(workspace_id, livemode, target)
                recipient = None if consent is None else consent.recipient
            else:
                break
            if recipient is not None:
                labels[target] = mask_numbers(recipient)
                break
    return labels
