"""``audit list``: who changed what, newest first (D32, ``Messenger.list_audit_events``).

Every change made through the admin methods, from this command line (actor ``cli``), a
dashboard (``dashboard:<e-mail>``) or a host's own code (``library``), is one row. The façade
checks every value (an unknown ``--action`` is its ``VALIDATION_ERROR``); only what cannot
even be read (``--limit x``, a time without a zone) is a usage error here.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ._args import Subparsers, add_command, add_group, aware_datetime
from ._context import admin_command
from ._output import Column, JsonObject, JsonValue, Report, cell, table_report

if TYPE_CHECKING:
    from .._messenger import Messenger

__all__ = ["add_audit"]


def add_audit(commands: Subparsers) -> None:
    from ..audit._actions import AUDIT_ACTIONS

    group = add_group(commands, "audit", help="the audit log: every admin change, who and when")
    listing = add_command(
        group,
        "list",
        help="changes made through the admin commands, the dashboard and the library",
        description=(
            "The audit log, newest first, a page at a time: while the last line says more "
            "follow, pass the last event id as --starting-after. No secret is ever in it."
        ),
        run=admin_command(_list),
    )
    listing.add_argument("--workspace", metavar="ID", help="only changes to this workspace")
    listing.add_argument(
        "--action", metavar="ACTION", help=f"only this action: {', '.join(AUDIT_ACTIONS)}"
    )
    listing.add_argument(
        "--actor", metavar="NAME", help="only by this actor: cli, library, dashboard:<e-mail>"
    )
    listing.add_argument(
        "--after", type=aware_datetime, metavar="TIME", help="at or after (ISO 8601, with a zone)"
    )
    listing.add_argument("--before", type=aware_datetime, metavar="TIME", help="before this time")
    listing.add_argument(
        "--limit", type=int, default=50, metavar="N", help="events per page, 1-100 (default 50)"
    )
    listing.add_argument("--starting-after", metavar="EVENT_ID", help="the page after this event")


def _shown(value: JsonValue) -> str:
    # An actor's name is whatever an edge said; a control character in it must not reach
    # the operator's terminal as one (an escape sequence would rewrite the screen).
    text = cell(value)
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


def _moment(value: JsonValue) -> str:
    return cell(value)[:19].replace("T", " ") if value else "-"


AUDIT_COLUMNS = (
    Column("ID", "id"),
    Column("AT (UTC)", "at", _moment),
    Column("ACTOR", "actor", _shown),
    Column("WORKSPACE", "workspace_id", _shown),
    Column("ACTION", "action"),
    Column("TARGET", "target", _shown),
    Column("CLIENT", "client_address", _shown),
)


async def _list(m: Messenger, args: argparse.Namespace) -> Report:
    page = await m.audit.list(
        workspace_id=args.workspace,
        action=args.action,
        actor=args.actor,
        occurred_after=args.after,
        occurred_before=args.before,
        limit=args.limit,
        starting_after=args.starting_after,
    )
    data: JsonObject = page.to_dict()
    rows: list[JsonObject] = [event.model_dump(mode="json") for event in page.data]
    table = table_report(rows, AUDIT_COLUMNS, empty="No audit events.").text
    if page.has_more:
        table += f"\nMore follow: --starting-after {page.data[-1].id}"
    return Report(data, table)
