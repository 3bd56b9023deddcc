"""``connections``: add, list, update, remove and choose the default provider connection.

Credentials come from ``--credentials-file`` (a JSON object, ``-`` for stdin) and
``--credential NAME=VALUE`` flags, the flags winning. The façade seals them in the vault at
once; no output and no error of this module ever contains a credential value.

Each connection's circuit breaker (D26) is set with ``--breaker-*`` on ``add`` and
``update`` (the façade checks the values: a bad one is ``VALIDATION_ERROR`` naming it), and
``list`` shows its state as every process shares it. So is its send rate (D27):
``--max-rate`` and ``--max-calls``, a number a second, ``off`` or ``default``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .._types import ALL_PROVIDERS, IYS_MODES
from ._args import (
    Subparsers,
    UsageError,
    add_command,
    add_group,
    credential_pair,
    finite_number,
    positive_seconds,
    workspace_option,
)
from ._context import admin_command
from ._output import (
    Column,
    JsonObject,
    JsonValue,
    Report,
    cell,
    fields_report,
    iso,
    table_report,
)
from ._records import CONNECTION_COLUMNS, connection_json

if TYPE_CHECKING:
    from .._domain import Connection
    from .._messenger import Messenger
    from .._routing.breaker_policy import BreakerPolicy
    from ..accounts.records import ProviderAccount

__all__ = ["add_connections"]


def add_connections(commands: Subparsers) -> None:
    group = add_group(commands, "connections", help="connect provider accounts to a workspace")
    add = add_command(
        group,
        "add",
        help="connect a provider account",
        description=(
            "Connect a provider account. Credentials are encrypted at once and never shown "
            "again. Prefer --credentials-file over --credential: command lines end up in "
            "shell history and process lists."
        ),
        run=admin_command(_add),
    )
    workspace_option(add)
    add.add_argument("provider", metavar="PROVIDER", choices=ALL_PROVIDERS,
                     help=", ".join(ALL_PROVIDERS))  # fmt: skip
    add.add_argument("--default-sender", metavar="S", help="the SMS header used when none is given")
    add.add_argument("--approved-sender", metavar="S", action="append", default=[],
                     help="an approved SMS header (repeat for more)")  # fmt: skip
    add.add_argument("--credential", metavar="NAME=VALUE", action="append", default=[],
                     type=credential_pair, help="one credential (repeat for more)")  # fmt: skip
    add.add_argument("--credentials-file", metavar="FILE",
                     help="a JSON object of credentials, or - to read it from stdin")  # fmt: skip
    add.add_argument("--iys-mode", choices=IYS_MODES, default="informational",
                     help="the IYS class of this connection's traffic")  # fmt: skip
    add.add_argument("--default", action="store_true", help="make it the workspace default")
    add.add_argument("--base-url", metavar="URL", help="override the provider's API address")
    add.add_argument("--dlr-timeout", type=positive_seconds, metavar="SECONDS",
                     help="how long to wait for a delivery report (default 86400)")  # fmt: skip
    add.add_argument("--no-turkish-shift", action="store_true",
                     help="no Turkish single-shift table: such text goes as UCS-2")  # fmt: skip
    _breaker_options(add)
    _rate_options(add)

    listing = add_command(group, "list", help="list a workspace's connections",
                          run=admin_command(_list))  # fmt: skip
    workspace_option(listing)
    show = add_command(
        group,
        "show",
        help="show a connection, with its provider balance and approved senders",
        description=(
            "Show a connection and its provider account as last read: the balance or "
            "credit, the approved senders the provider lists, and when they were read "
            "(the worker reads them every 15 minutes). --refresh reads them now."
        ),
        run=admin_command(_show),
    )
    show.add_argument("connection_id", metavar="ID")
    show.add_argument(
        "--refresh", action="store_true", help="read the account from the provider now"
    )
    threshold = add_command(
        group,
        "threshold",
        help="set the balance below which connection.balance_low fires",
        description=(
            "Set the connection's low-balance threshold, in the account's own unit: when a "
            "reading finds the balance below it, the connection.balance_low webhook fires, "
            "once per crossing. 'none' removes it."
        ),
        run=admin_command(_threshold),
    )
    threshold.add_argument("connection_id", metavar="ID")
    threshold.add_argument("threshold", metavar="AMOUNT", help="a number, or none")
    update = add_command(
        group,
        "update",
        help="change a connection's senders, circuit-breaker thresholds or send rate",
        description=(
            "Change a connection's SMS senders, the thresholds of its circuit breaker, or "
            "its send rate: the flags given change, the others stay; --approved-sender "
            "replaces the whole list; --breaker-defaults goes back to the default "
            "thresholds first. Every serve and worker process uses them within a second."
        ),
        run=admin_command(_update),
    )
    update.add_argument("connection_id", metavar="ID")
    _sender_options(update)
    _breaker_options(update)
    update.add_argument(
        "--breaker-defaults",
        action="store_true",
        help="back to the default thresholds (then apply the flags given)",
    )
    _rate_options(update)
    remove = add_command(group, "remove", help="remove a connection", run=admin_command(_remove))
    remove.add_argument("connection_id", metavar="ID")
    default = add_command(group, "set-default", help="make a connection the workspace default",
                          run=admin_command(_set_default))  # fmt: skip
    default.add_argument("connection_id", metavar="ID")
    check = add_command(
        group,
        "test",
        help="check a connection's credentials against its provider",
        description=(
            "Ask the provider whether it accepts the connection's credentials, with a call "
            "that sends nothing and costs nothing (a balance, header-list or profile call). "
            "Exit 0 if it does; exit 1 with INVALID_CREDENTIALS if it refuses them, or "
            "PROVIDER_UNAVAILABLE if it cannot be asked."
        ),
        run=admin_command(_test),
    )
    check.add_argument("connection_id", metavar="ID")


_LABELS = {"id": "id", "workspace_id": "workspace", "provider": "provider",
           "channel": "channel", "is_default": "default", "default_sender": "default sender",
           "approved_senders": "approved senders", "iys_mode": "IYS mode",
           "dlr_timeout": "DLR timeout (s)", "turkish_shift": "Turkish shift",
           "base_url": "base URL", "dlr_path": "report URL path",
           "breaker": "circuit breaker", "max_rate": "max messages/s",
           "max_calls": "max calls/s"}  # fmt: skip
#: ``--breaker-<name>``: (metavar, what it sets); values go to the façade as numbers.
_BREAKER_FLAGS = {
    "window": ("SECONDS", "the window the breaker counts calls in (default 30)"),
    "min_calls": ("N", "calls in the window before the ratio counts (default 5)"),
    "failure_ratio": ("R", "open when this share of the window's calls was unavailable, "
                      "0-1 (default 0.5)"),
    "consecutive": ("N", "open after this many unavailable calls in a row (default 5)"),
    "cooldown": ("SECONDS", "stay open this long, then let one probe through (default 30)"),
}  # fmt: skip


async def _add(m: Messenger, args: argparse.Namespace) -> Report:
    from .._domain import DEFAULT_DLR_TIMEOUT

    credentials = _credentials(args)
    connection = await m.connections.add(
        args.workspace,
        args.provider,
        credentials=credentials,
        default_sender=args.default_sender,
        approved_senders=args.approved_sender,
        iys_mode=args.iys_mode,
        make_default=args.default,
        dlr_timeout=args.dlr_timeout or DEFAULT_DLR_TIMEOUT,
        turkish_shift=not args.no_turkish_shift,
        base_url=args.base_url,
        breaker=_breaker_policy(args, None),
        **_rates(args),
    )
    note = _stored(len(credentials))
    return fields_report(_shown(connection), labels=_LABELS, note=note)


async def _list(m: Messenger, args: argparse.Namespace) -> Report:
    health = {h.connection_id: h for h in await m.connections.health(args.workspace)}
    rows = []
    for connection in await m.connections.list(args.workspace):
        row = _shown(connection)
        found = health.get(connection.id)
        if found is not None:
            row["breaker_state"] = found.state
            row["breaker_until"] = iso(found.until)
            row["breaker_reason"] = found.reason
        rows.append(row)
    return table_report(rows, _LIST_COLUMNS, empty="No connections.")


async def _update(m: Messenger, args: argparse.Namespace) -> Report:
    from .._routing.breaker_policy import DEFAULT_BREAKER_POLICY

    connection = await m.connections.get(args.connection_id)
    senders = _senders(args, connection)
    if senders is not None:
        default, approved = senders
        connection = await m.connections.set_senders(
            connection.id, default_sender=default, approved_senders=approved
        )
    base = DEFAULT_BREAKER_POLICY if args.breaker_defaults else connection.breaker
    policy = _breaker_policy(args, base)
    if policy is not None or args.breaker_defaults:
        connection = await m.connections.set_breaker_policy(connection.id, policy or base)
    rates = _rates(args)
    if rates:
        connection = await m.connections.set_send_rate(connection.id, **rates)
    return fields_report(_shown(connection), labels=_LABELS)


async def _show(m: Messenger, args: argparse.Namespace) -> Report:
    connection = await m.connections.get(args.connection_id)
    if args.refresh:
        account = await m.accounts.refresh(connection.id)
    else:
        account = await m.accounts.get(connection.id)
    row = _shown(connection)
    shown = fields_report({**row, **_account_fields(account)},
                          labels={**_LABELS, **_ACCOUNT_LABELS})  # fmt: skip
    row["account"] = account.to_dict()
    return Report(row, shown.text)


async def _threshold(m: Messenger, args: argparse.Namespace) -> Report:
    value = None if args.threshold.strip().lower() == "none" else args.threshold
    account = await m.accounts.set_threshold(args.connection_id, value)
    shown = fields_report(_account_fields(account), labels=_ACCOUNT_LABELS)
    return Report(account.to_dict(), shown.text)


_ACCOUNT_LABELS = {"account_balance": "balance", "account_read_at": "balance read at",
                   "account_senders": "provider's senders", "account_threshold": "low below",
                   "account_state": "account"}  # fmt: skip


def _account_fields(account: ProviderAccount) -> JsonObject:
    """The account as the human table shows it (the JSON keeps ``account``)."""
    if account.state == "not_offered":
        return {"account_state": "not offered by this provider"}
    balance = "-" if account.balance is None else f"{account.balance} {account.unit or ''}"
    state = {"read": "read", "never": "not read yet", "failed": f"last reading failed: "
             f"{account.error}"}[account.state]  # fmt: skip
    senders = "not listed" if account.senders is None else ", ".join(account.senders) or "-"
    low = "" if not account.low else " (below the threshold)"
    return {
        "account_state": state,
        "account_balance": balance.strip() + low,
        "account_read_at": "-" if account.read_at is None else account.read_at.isoformat(),
        "account_senders": senders,
        "account_threshold": "-" if account.threshold is None else str(account.threshold),
    }


async def _remove(m: Messenger, args: argparse.Namespace) -> Report:
    await m.connections.remove(args.connection_id)
    data: JsonObject = {"id": args.connection_id, "removed": True}
    return Report(data, f"Removed connection {args.connection_id}.")


async def _set_default(m: Messenger, args: argparse.Namespace) -> Report:
    connection = await m.connections.set_default(args.connection_id)
    return fields_report(_shown(connection), labels=_LABELS)


async def _test(m: Messenger, args: argparse.Namespace) -> Report:
    connection = await m.connections.get(args.connection_id)
    max_parts = await m.connections.test(connection.id)
    data: JsonObject = {
        "id": connection.id,
        "provider": connection.provider,
        "ok": True,
        "max_parts": max_parts,
    }
    text = f"The {connection.provider} provider accepted the credentials of {connection.id}."
    if max_parts is not None:
        # A longer text is refused before any call (BODY_TOO_LONG): say so where it is set up.
        text += f"\nIt sends at most {max_parts} SMS part{'s' if max_parts > 1 else ''} a message."
    return Report(data, text)


# ----------------------------------------------------------------------------- senders


def _sender_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("SMS senders (D3)")
    default = group.add_mutually_exclusive_group()
    default.add_argument(
        "--default-sender", metavar="S", help="the SMS header used when a send names none"
    )
    default.add_argument(
        "--no-default-sender", action="store_true", help="no default: every send names its sender"
    )
    approved = group.add_mutually_exclusive_group()
    approved.add_argument(
        "--approved-sender",
        metavar="S",
        action="append",
        help="an approved SMS header (repeat for more); replaces the list",
    )
    approved.add_argument(
        "--any-sender",
        action="store_true",
        help="empty the approved list: a send may name any header",
    )


def _senders(
    args: argparse.Namespace, connection: Connection
) -> tuple[str | None, list[str]] | None:
    """The senders the flags give, the stored ones where no flag is given; ``None`` when no
    sender flag is given (the façade judges the values)."""
    if (
        args.default_sender is None
        and not args.no_default_sender
        and (args.approved_sender is None and not args.any_sender)
    ):
        return None
    default = connection.default_sender
    if args.default_sender is not None or args.no_default_sender:
        default = None if args.no_default_sender else args.default_sender
    approved = list(connection.approved_senders)
    if args.approved_sender is not None or args.any_sender:
        approved = [] if args.any_sender else args.approved_sender
    return default, approved


# ----------------------------------------------------------------------------- breakers


def _breaker_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("circuit breaker (D26)")
    for name, (metavar, text) in _BREAKER_FLAGS.items():
        flag = "--breaker-" + name.replace("_", "-")
        group.add_argument(flag, dest=f"breaker_{name}", type=_number, metavar=metavar, help=text)


def _number(text: str) -> int | float:
    """A number as typed; its range is the façade's to check (and to name in the error)."""
    value = finite_number(text)
    return int(value) if value.is_integer() and "." not in text else value


def _breaker_policy(args: argparse.Namespace, base: BreakerPolicy | None) -> BreakerPolicy | None:
    """The thresholds the flags give on top of ``base``; ``None`` when no flag is given."""
    from .._routing.breaker_policy import BreakerPolicy

    given = {name: getattr(args, f"breaker_{name}") for name in _BREAKER_FLAGS}
    given = {name: value for name, value in given.items() if value is not None}
    if not given:
        return None
    return BreakerPolicy.build(base, **given)


def _shown(connection: Connection) -> JsonObject:
    row = connection_json(connection)
    policy = connection.breaker.to_json()
    row["breaker"] = {name: policy[name] for name in _BREAKER_FLAGS}
    row["max_rate"] = connection.max_rate
    row["max_calls"] = connection.max_calls
    return row


def _breaker_cell(state: JsonValue) -> str:
    return cell(state) if state is not None else "-"


_LIST_COLUMNS = (
    *CONNECTION_COLUMNS,
    Column("BREAKER", "breaker_state", _breaker_cell),
    Column("UNTIL", "breaker_until", lambda v: cell(v)[11:19] if v else "-"),
    Column("MSG/S", "max_rate", lambda v: _per_second(v)),
    Column("CALLS/S", "max_calls", lambda v: _per_second(v)),
)


# ----------------------------------------------------------------------------- send rate


def _rate_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("send rate (D27)")
    group.add_argument("--max-rate", type=_rate, metavar="N|off|default",
                       help="messages a second at most, shared by every process; off: no "
                       "limit (default: the provider's documented limit)")  # fmt: skip
    group.add_argument("--max-calls", type=_rate, metavar="N|off|default",
                       help="provider calls a second at most (a batch is one call); as "
                       "--max-rate")  # fmt: skip


def _rate(text: str) -> float | str:
    """A number as typed, or a word; the façade checks both (and names the flag's field)."""
    try:
        return float(text)
    except ValueError:
        return text


def _rates(args: argparse.Namespace) -> dict[str, float | str]:
    given = {"max_rate": args.max_rate, "max_calls": args.max_calls}
    return {name: value for name, value in given.items() if value is not None}


def _per_second(value: JsonValue) -> str:
    return "-" if not isinstance(value, int | float) else f"{value:g}"


# ----------------------------------------------------------------------------- credentials


def _credentials(args: argparse.Namespace) -> dict[str, str]:
    found = _read_credentials_file(args.credentials_file) if args.credentials_file else {}
    given: set[str] = set()
    for name, value in args.credential:
        if name in given:
            raise UsageError("--credential", f"{name} is given twice")
        given.add(name)
        found[name] = value
    return found


def _read_credentials_file(source: str) -> dict[str, str]:
    flag = "--credentials-file"
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
        raise UsageError(flag, f"cannot read {source}: {why}") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        # Position only: the message of a JSON error can quote the file's text.
        raise UsageError(flag, f"not valid JSON (line {exc.lineno}, column {exc.colno})") from None
    if not isinstance(value, dict):
        raise UsageError(flag, "must hold a JSON object of NAME: VALUE strings")
    for name, item in value.items():
        if not isinstance(item, str):
            raise UsageError(flag, f"the value of {name!r} must be a string")
    return dict(value)


def _stored(count: int) -> str:
    if not count:
        return "No credentials given."
    noun = "credential" if count == 1 else "credentials"
    return f"{count} {noun} stored encrypted; they are never shown again."
