"""``iys connect/show/disconnect/sync``: a workspace's İYS connection (D33), thin calls to
``messenger.iys``.

The password is read from standard input (``--password-stdin``), never from an argument
(an argument is in the shell's history and in every process listing), and is never shown
again: ``show`` prints the connection without it.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ..iys.records import LIVE_BASE_URL
from ._args import CommandFailed, Subparsers, UsageError, add_command, add_group
from ._args import workspace_option as _workspace
from ._context import admin_command
from ._output import JsonObject, Report, fields_report

if TYPE_CHECKING:
    from .._messenger import Messenger
    from ..iys.models import IysConnectionOut

__all__ = ["add_iys"]

_LABELS = {"workspace_id": "workspace", "iys_code": "İYS code", "brand_code": "brand code",
           "username": "API user", "base_url": "base URL", "created_at": "connected",
           "token_valid_until": "token valid until", "pulled_at": "last pull",
           "via_provider": "through"}  # fmt: skip


def add_iys(commands: Subparsers) -> None:
    group = add_group(commands, "iys", help="the workspace's İYS connection (consents)")
    connect = add_command(
        group,
        "connect",
        help="connect the workspace to İYS",
        description=(
            "Connect the workspace to İYS with its API user. The password is read from "
            "standard input, e.g. `printf '%s' \"$IYS_PASSWORD\" | unified-messaging iys "
            "connect --workspace WS --iys-code 710271 --brand-code 710272 --username api "
            "--password-stdin`. Without an İYS API user, register through the SMS "
            "provider's consent API: `unified-messaging iys connect --workspace WS "
            "--brand-code 710272 --via-provider conn_…` (İletimerkezi, Verimor). "
            "Consents recorded in the workspace are registered with İYS "
            "by the worker, İYS's changes are pulled, and a consent policy of `off` becomes "
            "`iys`."
        ),
        run=admin_command(_connect),
    )
    _workspace(connect)
    connect.add_argument("--iys-code", type=int, metavar="N",
                         help="the service provider's İYS number")  # fmt: skip
    connect.add_argument("--brand-code", type=int, required=True, metavar="N",
                         help="the brand's İYS number")  # fmt: skip
    connect.add_argument("--username", metavar="USER", help="the İYS API user")
    connect.add_argument("--password-stdin", action="store_true",
                         help="read the API user's password from standard input")  # fmt: skip
    connect.add_argument("--via-provider", metavar="CONNECTION_ID",
                         help="register consents through this İletimerkezi or Verimor "
                         "connection's consent API instead (no İYS user: give "
                         "--brand-code only)")  # fmt: skip
    connect.add_argument("--base-url", default=LIVE_BASE_URL, metavar="URL",
                         help=f"İYS's address (default: {LIVE_BASE_URL}; the sandbox's "
                         "for tests)")  # fmt: skip
    connect.add_argument(
        "--no-verify",
        action="store_true",
        help="store the credentials without asking İYS for a token now",
    )
    show = add_command(group, "show", help="show the workspace's İYS connection",
                       run=admin_command(_show))  # fmt: skip
    _workspace(show)
    disconnect = add_command(group, "disconnect", help="forget the workspace's İYS connection",
                             run=admin_command(_disconnect))  # fmt: skip
    _workspace(disconnect)
    sync = add_command(
        group,
        "sync",
        help="pull İYS's changes and register pending consents now",
        description=(
            "Both directions now, then exit (for cron jobs and tests): pull İYS's changes, "
            "register every pending consent (running the background work that is due, as "
            "`worker --once` does) and wait for İYS's answers to bulk requests."
        ),
        run=admin_command(_sync),
    )
    _workspace(sync)


def _read_password() -> str:
    # One line; its line break is not part of the password (``echo`` adds one).
    password = sys.stdin.readline().removesuffix("\n").removesuffix("\r")
    if not password:
        raise CommandFailed("no password on standard input (--password-stdin)")
    return password


def _connection(out: IysConnectionOut, note: str = "") -> Report:
    data: JsonObject = dict(out.to_dict())
    return fields_report(data, labels=_LABELS, note=note)


async def _connect(m: Messenger, args: argparse.Namespace) -> Report:
    if args.via_provider is not None:
        if args.iys_code is not None or args.username is not None or args.password_stdin:
            raise UsageError("--via-provider", "takes no --iys-code, --username or password")
        via = {"brand_code": args.brand_code, "via_provider": args.via_provider}
        out = await m.iys.connect(args.workspace, via)
        workspace = await m.workspaces.get(args.workspace)
        return _connection(out, f"Connected through {args.via_provider}. "
                                f"Consent policy: {workspace.consent_policy}.")  # fmt: skip
    if args.iys_code is None or args.username is None or not args.password_stdin:
        missing = [flag for flag, given in (("--iys-code", args.iys_code),
                   ("--username", args.username), ("--password-stdin", args.password_stdin))
                   if given is None or given is False]  # fmt: skip
        raise UsageError(missing[0], "required without --via-provider")
    body = {"iys_code": args.iys_code, "brand_code": args.brand_code,
            "username": args.username, "password": _read_password(),
            "base_url": args.base_url}  # fmt: skip
    out = await m.iys.connect(args.workspace, body, verify=not args.no_verify)
    workspace = await m.workspaces.get(args.workspace)
    return _connection(out, f"Connected. Consent policy: {workspace.consent_policy}.")


async def _show(m: Messenger, args: argparse.Namespace) -> Report:
    return _connection(await m.iys.get(args.workspace))


async def _disconnect(m: Messenger, args: argparse.Namespace) -> Report:
    out = await m.iys.disconnect(args.workspace)
    return Report(out.to_dict(), f"Disconnected {out.workspace_id} from İYS.")


async def _sync(m: Messenger, args: argparse.Namespace) -> Report:
    report = await m.iys.sync(args.workspace)
    pulled = report.pulled
    text = (
        f"Pulled {pulled.get('applied', 0)} changes from İYS "
        f"({pulled.get('confirmed', 0)} of ours confirmed). "
        f"Registered {report.registered}, refused {report.refused}, "
        f"pending {report.pending}."
    )
    return Report(report.to_dict(), text)
