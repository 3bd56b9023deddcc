"""``webhooks``: add, list, remove, rotate-secret, enable, disable, events, test, redeliver and
deliveries, on the admin façade.

The secret of a new or rotated endpoint is printed once, like ``keys create`` prints a key.
Loopback and private targets are refused unless ``UM_WEBHOOK_ALLOW_PRIVATE=1`` is set (the
same switch the delivering process reads), so an operator cannot add an endpoint here that
the worker would then refuse to call.
"""

from __future__ import annotations

import argparse
from datetime import timedelta
from typing import TYPE_CHECKING

from .._lifecycle.rules import EVENT_TYPES
from ..webhooks._admin import ALLOW_PRIVATE_ENV, DEFAULT_ROTATION_OVERLAP
from ._args import Subparsers, add_command, add_group, finite_number
from ._args import workspace_option as _workspace
from ._context import admin_command
from ._output import Column, JsonObject, JsonValue, Report, cell, fields_report, iso, table_report

if TYPE_CHECKING:
    from .._messenger import Messenger
    from ..store.base import WebhookDelivery, WebhookEndpoint
    from ..webhooks._admin import CreatedWebhookEndpoint

__all__ = ["add_webhooks"]


def _overlap(text: str) -> timedelta:
    number = finite_number(text)
    if number < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not zero or more seconds")
    return timedelta(seconds=number)


def add_webhooks(commands: Subparsers) -> None:
    group = add_group(commands, "webhooks", help="manage webhook endpoints and their deliveries")
    add = add_command(
        group,
        "add",
        help="add a webhook endpoint (its secret is printed this once)",
        description=(
            "Add a webhook endpoint. Without --event it receives every event. Loopback and "
            f"private addresses are refused unless {ALLOW_PRIVATE_ENV}=1."
        ),
        run=admin_command(_add),
    )
    _workspace(add)
    add.add_argument("url", metavar="URL", help="where to POST events (http or https)")
    add.add_argument(
        "--event",
        action="append",
        dest="events",
        choices=EVENT_TYPES,
        metavar="TYPE",
        help=f"an event to send (repeatable; default: all): {', '.join(EVENT_TYPES)}",
    )
    listing = add_command(
        group, "list", help="list a workspace's endpoints", run=admin_command(_list)
    )
    _workspace(listing)
    remove = add_command(
        group,
        "remove",
        help="remove an endpoint and its delivery log",
        run=admin_command(_remove),
    )
    remove.add_argument("endpoint_id", metavar="ID")
    rotate = add_command(
        group,
        "rotate-secret",
        help="give an endpoint a new secret (printed this once)",
        description=(
            "Give an endpoint a new secret. The old one keeps signing beside it for the "
            "overlap, so the receiver can switch at any time within it."
        ),
        run=admin_command(_rotate),
    )
    rotate.add_argument("endpoint_id", metavar="ID")
    rotate.add_argument(
        "--overlap",
        type=_overlap,
        default=DEFAULT_ROTATION_OVERLAP,
        metavar="SECONDS",
        help="how long the old secret keeps signing (default 86400; 0 retires it at once)",
    )
    enable = add_command(
        group,
        "enable",
        help="re-enable an endpoint that was disabled",
        run=admin_command(_enable),
    )
    enable.add_argument("endpoint_id", metavar="ID")
    disable = add_command(
        group,
        "disable",
        help="stop delivering to an endpoint until it is enabled again",
        run=admin_command(_disable),
    )
    disable.add_argument("endpoint_id", metavar="ID")
    deliveries = add_command(
        group,
        "deliveries",
        help="an endpoint's delivery log, oldest first",
        run=admin_command(_deliveries),
    )
    deliveries.add_argument("endpoint_id", metavar="ID")
    _add_operations(group)


def _add_operations(group: Subparsers) -> None:
    """The operations the dashboard has too (D31: one Messenger method behind both)."""
    events = add_command(
        group,
        "events",
        help="choose the events an endpoint receives (none given: every event)",
        run=admin_command(_set_events),
    )
    events.add_argument("endpoint_id", metavar="ID")
    events.add_argument("--event", action="append", dest="events", choices=EVENT_TYPES,
                        metavar="TYPE", help="an event to send (repeatable)")  # fmt: skip
    test = add_command(
        group,
        "test",
        help="queue a test event to an endpoint (a made-up test-mode message.delivered)",
        run=admin_command(_test),
    )
    test.add_argument("endpoint_id", metavar="ID")
    redeliver = add_command(
        group,
        "redeliver",
        help="send a finished delivery again, now, with the same webhook-id",
        run=admin_command(_redeliver),
    )
    redeliver.add_argument("delivery_id", metavar="DELIVERY_ID")


# ------------------------------------------------------------------------------ records


def endpoint_json(endpoint: WebhookEndpoint) -> JsonObject:
    events: list[JsonValue] = list(endpoint.events)
    return {
        "id": endpoint.id,
        "workspace_id": endpoint.workspace_id,
        "url": endpoint.url,
        "events": events,
        "enabled": endpoint.enabled,
        "created_at": iso(endpoint.created_at),
        "disabled_at": iso(endpoint.disabled_at),
        "failing_since": iso(endpoint.failing_since),
        "previous_secret_expires_at": iso(endpoint.previous_secret_expires_at),
    }


def delivery_json(delivery: WebhookDelivery) -> JsonObject:
    return {
        "id": delivery.id,
        "endpoint_id": delivery.endpoint_id,
        "event_id": delivery.event_id,
        "event_type": delivery.event_type,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "next_attempt_at": iso(delivery.next_attempt_at),
        "last_status_code": delivery.last_status_code,
        "last_error": delivery.last_error,
        "last_answer": delivery.last_answer,
        "created_at": iso(delivery.created_at),
        "updated_at": iso(delivery.updated_at),
    }


def _events(events: JsonValue) -> str:
    return cell(events) if events else "all"


def _when(moment: JsonValue) -> str:
    return cell(moment)[:19].replace("T", " ") if moment else "-"


def _clip(text: JsonValue) -> str:
    shown = cell(text)
    return shown if len(shown) <= 60 else shown[:59] + "…"


ENDPOINT_COLUMNS = (
    Column("ID", "id"),
    Column("URL", "url", _clip),
    Column("EVENTS", "events", _events),
    Column("ENABLED", "enabled"),
    Column("FAILING SINCE", "failing_since", _when),
    Column("CREATED", "created_at", _when),
)
DELIVERY_COLUMNS = (
    Column("ID", "id"),
    Column("EVENT", "event_type"),
    Column("EVENT ID", "event_id"),
    Column("STATUS", "status"),
    Column("ATTEMPTS", "attempts"),
    Column("LAST CODE", "last_status_code"),
    Column("NEXT ATTEMPT", "next_attempt_at", _when),
    Column("LAST ERROR", "last_error", _clip),
)
_LABELS = {"id": "id", "workspace_id": "workspace", "url": "url", "events": "events",
           "enabled": "enabled", "created_at": "created", "disabled_at": "disabled",
           "failing_since": "failing since",
           "previous_secret_expires_at": "old secret until"}  # fmt: skip
_SECRET_NOTE = "Store the secret now: it cannot be shown again."  # noqa: S105 - a note


def _endpoint_report(
    endpoint: WebhookEndpoint, *, secret: str | None = None, note: str = ""
) -> Report:
    data = endpoint_json(endpoint)
    labels = dict(_LABELS)
    if secret is not None:
        data["secret"] = secret
        labels["secret"] = "secret"  # noqa: S105 - a label
    shown = {**data, "events": data["events"] or "all"}
    return Report(data, fields_report(shown, labels=labels, note=note).text)


def _with_secret(created: CreatedWebhookEndpoint) -> Report:
    return _endpoint_report(created.endpoint, secret=created.secret, note=_SECRET_NOTE)


# ----------------------------------------------------------------------------- commands


async def _add(m: Messenger, args: argparse.Namespace) -> Report:
    created = await m.webhooks.create(args.workspace, args.url, events=args.events)
    return _with_secret(created)


async def _list(m: Messenger, args: argparse.Namespace) -> Report:
    rows = [endpoint_json(e) for e in await m.webhooks.list(args.workspace)]
    return table_report(rows, ENDPOINT_COLUMNS, empty="No webhook endpoints.")


async def _remove(m: Messenger, args: argparse.Namespace) -> Report:
    await m.webhooks.remove(args.endpoint_id)
    return Report({"id": args.endpoint_id, "removed": True}, f"Removed {args.endpoint_id}.")


async def _rotate(m: Messenger, args: argparse.Namespace) -> Report:
    return _with_secret(await m.webhooks.rotate_secret(args.endpoint_id, overlap=args.overlap))


async def _enable(m: Messenger, args: argparse.Namespace) -> Report:
    return _endpoint_report(await m.webhooks.enable(args.endpoint_id))


async def _disable(m: Messenger, args: argparse.Namespace) -> Report:
    return _endpoint_report(await m.webhooks.disable(args.endpoint_id))


async def _set_events(m: Messenger, args: argparse.Namespace) -> Report:
    return _endpoint_report(await m.webhooks.set_events(args.endpoint_id, args.events))


async def _test(m: Messenger, args: argparse.Namespace) -> Report:
    delivery = await m.webhooks.send_test(args.endpoint_id)
    text = f"Queued test event {delivery.event_id} (delivery {delivery.id}); a worker sends it."
    return Report(delivery_json(delivery), text)


async def _redeliver(m: Messenger, args: argparse.Namespace) -> Report:
    delivery = await m.webhooks.redeliver(args.delivery_id)
    text = f"Queued {delivery.id} again (event {delivery.event_id}); a worker sends it."
    return Report(delivery_json(delivery), text)


async def _deliveries(m: Messenger, args: argparse.Namespace) -> Report:
    rows = [delivery_json(d) for d in await m.webhooks.list_deliveries(args.endpoint_id)]
    return table_report(rows, DELIVERY_COLUMNS, empty="No deliveries.")
