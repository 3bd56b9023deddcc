"""``messages list``, ``messages show``, ``messages cancel`` and ``stats``: what was sent,
how providers fare, and stopping a send that waits.

- ``messages list`` is ``GET /v1/messages`` for an operator: the same filters and pages
  (``Messenger.list_messages``), for one workspace in live or test mode.
- ``messages show JOB_ID`` tells one message's story as a timeline: its creation, every
  attempt, the delivery report, the end, and each webhook delivery about it.
- ``messages cancel JOB_ID`` is ``POST /v1/messages/{job_id}/cancel``
  (``Messenger.cancel_message``): a message no provider has yet ends ``failed`` with
  ``CANCELED``; one handed over already is the 409 ``MESSAGE_NOT_CANCELABLE`` (exit 1).
- ``stats`` is the provider scorecard (``Messenger.connection_stats``), one row per
  connection of the workspace.

The façade checks every value (a bad ``--status`` is the ``VALIDATION_ERROR`` the REST edge
gives), so the rules live in one place; only what cannot even be read (``--since 3x``) is a
usage error here.
"""

from __future__ import annotations

import argparse
import re
from datetime import timedelta
from typing import TYPE_CHECKING, get_args

from .._figures import percent, plural
from .._types import MessageStatus, ProviderCode
from ._args import Subparsers, add_command, add_group
from ._args import workspace_option as _workspace
from ._context import admin_command
from ._output import Column, JsonObject, JsonValue, Report, cell, iso, table_report
from ._webhook_commands import delivery_json

if TYPE_CHECKING:
    from datetime import datetime

    from .._domain import Connection
    from .._messenger import Messenger, Principal
    from .._models import StatusRecord
    from ..store.base import ConnectionStats, WebhookDelivery

__all__ = ["add_messages", "add_stats", "duration"]

# The vocabularies, for the help text only: the façade checks the values.
_STATUSES: tuple[str, ...] = get_args(MessageStatus)
_PROVIDERS: tuple[str, ...] = get_args(ProviderCode)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")


def duration(text: str) -> timedelta:
    """``90s``, ``30m``, ``24h``, ``7d`` or ``2w``: a positive length of time."""
    found = _DURATION.fullmatch(text.strip())
    if found is None or float(found.group(1)) <= 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration such as 90s, 30m, 24h, 7d or 2w"
        )
    return timedelta(seconds=float(found.group(1)) * _UNITS[found.group(2)])


def _mode_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--test", action="store_true", help="test-mode messages (default: live ones)"
    )


def add_messages(commands: Subparsers) -> None:
    group = add_group(commands, "messages", help="list messages and show one's history")
    listing = add_command(
        group,
        "list",
        help="a workspace's messages, newest first (GET /v1/messages)",
        description=(
            "A workspace's messages, newest first, a page at a time: while the last line "
            "says more follow, pass the last job id as --starting-after."
        ),
        run=admin_command(_list),
    )
    _workspace(listing)
    _mode_option(listing)
    listing.add_argument("--to", metavar="RECIPIENT", help="only to this recipient")
    listing.add_argument(
        "--status", metavar="STATUS", help=f"only in this status: {', '.join(_STATUSES)}"
    )
    listing.add_argument(
        "--provider", metavar="CODE", help=f"only on this provider: {', '.join(_PROVIDERS)}"
    )
    listing.add_argument(
        "--created-after", metavar="TIME", help="created at or after (RFC 3339, with a zone)"
    )
    listing.add_argument("--created-before", metavar="TIME", help="created before (RFC 3339)")
    listing.add_argument("--limit", metavar="N", help="messages per page, 1-100 (default 20)")
    listing.add_argument("--starting-after", metavar="JOB_ID", help="the page after this job")
    show = add_command(
        group,
        "show",
        help="one message's attempts, report and webhook deliveries, as a timeline",
        run=admin_command(_show),
    )
    show.add_argument("job_id", metavar="JOB_ID")
    show.add_argument(
        "--workspace", metavar="ID", help="the message's workspace (default: found by its id)"
    )
    cancel = add_command(
        group,
        "cancel",
        help="cancel a message no provider has yet (one waiting for its send time)",
        description=(
            "Cancel a message still queued (for its send_at, quiet hours, a send slot or a "
            "retry): it ends failed with the code CANCELED and a message.failed webhook goes "
            "out. One a provider has already is refused (MESSAGE_NOT_CANCELABLE)."
        ),
        run=admin_command(_cancel),
    )
    cancel.add_argument("job_id", metavar="JOB_ID")
    cancel.add_argument(
        "--workspace", metavar="ID", help="the message's workspace (default: found by its id)"
    )


def add_stats(commands: Subparsers) -> None:
    parser = add_command(
        commands,
        "stats",
        help="the provider scorecard: sent, delivered, failed, delivery times, fallbacks",
        description=(
            "How each connection of a workspace fared for the messages created within "
            "--since: attempts sent, delivered, failed (refused or reported), expired, the "
            "delivery rate (delivered of those whose outcome is known), p50/p95 time from "
            "hand-over to delivery, and fallbacks taken away from the connection."
        ),
        run=admin_command(_stats),
    )
    _workspace(parser)
    _mode_option(parser)
    parser.add_argument(
        "--since",
        type=duration,
        default=timedelta(hours=24),
        metavar="DURATION",
        help="how far back, e.g. 30m, 24h, 7d (default 24h)",
    )


# ------------------------------------------------------------------------------ messages list


def _short(moment: JsonValue) -> str:
    return cell(moment)[:19].replace("T", " ") if moment else "-"


def _error_code(error: JsonValue) -> str:
    return cell(error.get("code")) if isinstance(error, dict) else "-"


MESSAGE_COLUMNS = (
    Column("JOB ID", "job_id"),
    Column("CREATED", "created_at", _short),
    Column("STATUS", "status"),
    Column("PROVIDER", "provider"),
    Column("TO", "to"),
    Column("ERROR", "error", _error_code),
)


async def _list(m: Messenger, args: argparse.Namespace) -> Report:
    principal = await m.principal(args.workspace, livemode=not args.test)
    given = {
        "to": args.to,
        "status": args.status,
        "provider": args.provider,
        "created_after": args.created_after,
        "created_before": args.created_before,
        "limit": args.limit,
        "starting_after": args.starting_after,
    }
    page = await m.list_messages(principal, {k: v for k, v in given.items() if v is not None})
    data: JsonObject = page.to_dict()
    rows: list[JsonObject] = [record.to_dict() for record in page.data]
    table = table_report(rows, MESSAGE_COLUMNS, empty="No messages.").text
    if page.has_more:
        table += f"\nMore follow: --starting-after {page.data[-1].job_id}"
    return Report(data, table)


# ------------------------------------------------------------------------------ messages show


async def _find(m: Messenger, args: argparse.Namespace) -> tuple[Principal, StatusRecord]:
    """The message ``args.job_id`` and a principal of its workspace and mode."""
    from .._errors import MessageNotFound

    # Job ids are unique across workspaces: without --workspace, every one is asked (an
    # operator's command; a deployment has few workspaces).
    workspaces = [args.workspace] if args.workspace else [w.id for w in await m.workspaces.list()]
    for workspace_id in workspaces:
        for livemode in (True, False):  # an operator may read both modes
            principal = await m.principal(workspace_id, livemode=livemode)
            try:
                return principal, await m.get_message(principal, args.job_id)
            except MessageNotFound:
                continue
    where = f" in workspace {args.workspace}" if args.workspace else ""
    raise MessageNotFound(f"No message {args.job_id!r}{where}.")


async def _cancel(m: Messenger, args: argparse.Namespace) -> Report:
    principal, _ = await _find(m, args)
    record = await m.cancel_message(principal, args.job_id)
    error = f" ({record.error.code})" if record.error is not None else ""
    return Report(record.to_dict(), f"{record.job_id}  {record.status}{error}")


async def _show(m: Messenger, args: argparse.Namespace) -> Report:
    principal, record = await _find(m, args)
    workspace_id = principal.workspace_id
    deliveries = await m.webhooks.deliveries_about(workspace_id, args.job_id)
    urls = {e.id: e.url for e in await m.webhooks.list(workspace_id)}
    events = _timeline(record, deliveries, urls)
    data: JsonObject = {
        "message": record.to_dict(),
        "webhook_deliveries": [delivery_json(d) for d in deliveries],
        "timeline": [
            {"at": iso(at), "event": what, "detail": detail} for at, what, detail in events
        ],
    }
    return Report(data, _show_text(record, events))


Event = tuple["datetime", str, str]


def _timeline(
    record: StatusRecord, deliveries: list[WebhookDelivery], urls: dict[str, str]
) -> list[Event]:
    events: list[Event] = [(record.created_at, "created", f"to {record.to} ({record.channel})")]
    for number, attempt in enumerate(record.attempts, start=1):
        detail = f"{attempt.provider}: {attempt.status}"
        if attempt.provider_message_id:
            detail += f", provider id {attempt.provider_message_id}"
        if attempt.error is not None:
            detail += f", {attempt.error.code}: {attempt.error.message}"
        events.append((attempt.at, f"attempt {number}", detail))
    if record.dlr is not None:
        detail = record.dlr.status
        if record.dlr.provider_status:
            detail += f" (provider says {record.dlr.provider_status})"
        events.append((record.dlr.received_at, "report", detail))
    if record.final_at is not None:
        detail = record.status
        if record.error is not None:
            detail += f", {record.error.code}: {record.error.message}"
        events.append((record.final_at, "final", detail))
    for delivery in deliveries:
        detail = f"{delivery.event_type} to {urls.get(delivery.endpoint_id, delivery.endpoint_id)}"
        detail += f": {delivery.status} after {plural(delivery.attempts, 'attempt')}"
        if delivery.last_status_code is not None:
            detail += f", last answer {delivery.last_status_code}"
        if delivery.status == "pending" and delivery.next_attempt_at is not None:
            detail += f", next at {_short(iso(delivery.next_attempt_at))}"
        events.append((delivery.created_at, "webhook", detail))
    # Stable: what happened at one instant keeps the order above (attempt before report).
    return sorted(events, key=lambda event: event[0])


def _show_text(record: StatusRecord, events: list[Event]) -> str:
    mode = "live" if record.livemode else "test"
    head = [f"{record.job_id}  {record.status}  {record.provider}  {record.to}  ({mode})"]
    if record.template_key:
        head.append(f"template: {record.template_key}")
    if record.body is not None:
        # The text as sent (a template's rendered), each line indented under its label.
        head.append("text:     " + record.body.replace("\n", "\n          "))
    key = record.api_key
    if key is not None:
        head.append(f"API key:  {key.name} ({key.id})" if key.name else f"API key:  {key.id}")
    head.append("")
    width = max(len(what) for _, what, _ in events)
    lines = [f"{_short(iso(at))}  {what:<{width}}  {detail}" for at, what, detail in events]
    return "\n".join(head + lines)


# ------------------------------------------------------------------------------ stats


def _rate(rate: JsonValue) -> str:
    return "-" if not isinstance(rate, float | int) else percent(rate)


def _millis(value: JsonValue) -> str:
    if not isinstance(value, int):
        return "-"
    return f"{value} ms" if value < 1000 else f"{value / 1000:.1f} s"


STATS_COLUMNS = (
    Column("CONNECTION", "connection_id"),
    Column("PROVIDER", "provider"),
    Column("SENT", "sent"),
    Column("DELIVERED", "delivered"),
    Column("FAILED", "failed"),
    Column("EXPIRED", "expired"),
    Column("RATE", "delivery_rate", _rate),
    Column("P50", "p50_ms", _millis),
    Column("P95", "p95_ms", _millis),
    Column("FALLBACKS", "fallbacks"),
)


def stats_json(stats: ConnectionStats, connection: Connection | None) -> JsonObject:
    return {
        "connection_id": None if connection is None else connection.id,
        "provider": stats.provider,
        "sent": stats.sent,
        "delivered": stats.delivered,
        "failed": stats.failed,
        "expired": stats.expired,
        "unknown": stats.unknown,
        "pending": stats.pending,
        "delivery_rate": stats.delivery_rate,
        "p50_ms": stats.p50_ms,
        "p95_ms": stats.p95_ms,
        "fallbacks": stats.fallbacks,
    }


async def _stats(m: Messenger, args: argparse.Namespace) -> Report:
    from ..store.base import ConnectionStats

    since = m.clock.now() - args.since
    found = {
        s.provider: s
        for s in await m.connections.stats(args.workspace, since=since, livemode=not args.test)
    }
    connections = {c.provider: c for c in await m.connections.list(args.workspace)}
    # Every connection, busy or not; then providers whose connection has since been removed.
    providers = [*connections, *sorted(p for p in found if p not in connections)]
    rows = [
        stats_json(found.get(p) or ConnectionStats(provider=p), connections.get(p))
        for p in providers
    ]
    mode = "test" if args.test else "live"
    report = table_report(rows, STATS_COLUMNS, empty="No connections and no messages.")
    title = f"Since {_short(iso(since))} UTC, {mode} mode:"
    return Report(report.data, f"{title}\n{report.text}" if rows else report.text)
