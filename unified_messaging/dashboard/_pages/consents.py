"""Consents: the workspace's İYS consents (D33) in the viewer's mode; list and search them,
read one with its history, record one, import a CSV. Every action is a ``messenger.consents``
call (audited ``consent.record`` under the signed-in user's name); İYS's rules, the
normalisation of an address and the CSV's rules are the library's.

The CSV comes as a form field (the dashboard reads no file uploads): the page's script reads
a chosen file into it, in the browser. A file larger than a form may be
(:data:`~.._forms.MAX_FORM_BYTES`) goes through ``unified-messaging consents import``.
"""

from __future__ import annotations

from typing import Final, get_args

from starlette.responses import Response
from starlette.routing import Route

from ..._errors import MessagingError
from ..._types import RecipientType
from ...campaigns._csv import CsvSource
from ...consents.importing import CSV_COLUMNS, RECIPIENT_COLUMN, ConsentImport, import_consents
from ...consents.rules import CONSENT_SOURCES, CONSENT_TYPES, ConsentStatus, iys_date
from .._app import Dashboard, route
from .._notices import Notice
from .._ui import Page, field_errors

__all__ = ["routes"]

_PAGE: Final = 50
#: How many refused rows an import's notice names; the rest are counted.
_SHOWN_REFUSALS: Final = 5
_FIELDS: Final = ("recipient", "status", "type", "recipient_type", "source", "consent_date")
_CHOICES: Final = {
    "statuses": get_args(ConsentStatus),
    "types": CONSENT_TYPES,
    "recipient_types": get_args(RecipientType),
    "sources": CONSENT_SOURCES,
    "csv_columns": CSV_COLUMNS,
}


def routes(dashboard: Dashboard) -> list[Route]:
    return [
        route("/consents", dashboard.guarded(consents_page), "GET", "POST"),
        route("/consents/import", dashboard.guarded(import_csv), "POST"),
        route("/consents/{consent_id}", dashboard.guarded(consent_page)),
    ]


async def consents_page(page: Page) -> Response:
    if page.request.method == "POST":
        return await _record(page)
    return await _render(page)


async def consent_page(page: Page) -> Response:
    principal = await page.principal()
    detail = await page.messenger.consents.get(principal, page.request.path_params["consent_id"])
    # Newest first, each date as İYS reads it (GMT+3), as the list shows them.
    history = [(change, None if change.consent_date is None else iys_date(change.consent_date))
               for change in reversed(detail.history)]  # fmt: skip
    return page.render("consent.html", consent=detail, history=history)


async def _render(
    page: Page,
    *,
    error: MessagingError | None = None,
    typed: dict[str, str] | None = None,
    csv_error: str | None = None,
    csv_text: str = "",
    status: int = 200,
) -> Response:
    principal = await page.principal()
    query = page.request.query_params
    search = {name: query[name] for name in ("recipient", "status", "starting_after")
              if query.get(name)}  # fmt: skip
    search_error = None
    try:
        listing = await page.messenger.consents.list(principal, {**search, "limit": _PAGE})
    except MessagingError as exc:
        # A filter the rules refuse (an address no type takes, a stale cursor): say so.
        search_error, search = exc.message, {}
        listing = await page.messenger.consents.list(principal, {"limit": _PAGE})
        status = 400 if status == 200 else status
    return page.render(
        "consents.html",
        status=status,
        consents=listing.data,
        has_more=listing.has_more,
        search=search,
        search_error=search_error,
        policy=page.require_workspace().consent_policy,
        error=None if error is None else error.message,
        errors=field_errors(error),
        typed=typed or {},
        csv_error=csv_error,
        csv_text=csv_text,
        **_CHOICES,
    )


async def _record(page: Page) -> Response:
    principal = await page.principal()
    typed = {name: page.form.get(name).strip() for name in _FIELDS}
    # An empty field is one left out: the library's defaults apply (MESAJ, BIREYSEL, now).
    body = {name: value for name, value in typed.items() if value}
    try:
        consent = await page.messenger.consents.create(principal, body)
    except MessagingError as exc:
        return await _render(page, error=exc, typed=typed, status=exc.http_status)
    text = f"Recorded {consent.status} for {consent.recipient} ({consent.type}, " \
           f"{consent.recipient_type})."  # fmt: skip
    notice = Notice(text, link=(f"/consents/{consent.id}", "Open it"))
    return await page.done("/consents", notice)


async def import_csv(page: Page) -> Response:
    principal = await page.principal()
    text = page.form.get("csv")
    if not text.strip():
        return await _render(page, csv_error="Paste the CSV or choose a file.", status=400)
    source = CsvSource.of_text(text, to_column=RECIPIENT_COLUMN)
    try:
        done = await import_consents(page.messenger.consents, principal, source)
    except MessagingError as exc:  # the file as a whole (no header, no recipient column)
        return await _render(page, csv_error=exc.message, csv_text=text, status=exc.http_status)
    return await page.done("/consents", _import_notice(done))


def _import_notice(done: ConsentImport) -> Notice:
    recorded = f"Recorded {done.recorded} consent{'' if done.recorded == 1 else 's'}."
    if not done.refused:
        return Notice(recorded)
    shown = "; ".join(f"row {r.row}: {r.error}" for r in done.refused[:_SHOWN_REFUSALS])
    more = len(done.refused) - _SHOWN_REFUSALS
    rest = f"; and {more} more" if more > 0 else ""
    count = len(done.refused)
    refused = f"{count} row{'' if count == 1 else 's'} refused: {shown}{rest}."
    return Notice(f"{recorded} {refused}", tone="error")
