"""``users``: create, list and disable the dashboard's users (D31), on the admin façade.

The password is read from standard input (``--password-stdin``), never from an argument: an
argument is visible to every user of the machine in the process list and stays in the shell's
history.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ._args import CommandFailed, Subparsers, add_command, add_group
from ._context import admin_command
from ._output import Column, JsonObject, Report, fields_report, iso, table_report

if TYPE_CHECKING:
    from .._messenger import Messenger
    from ..users._store import User

__all__ = ["add_users"]


def add_users(commands: Subparsers) -> None:
    group = add_group(commands, "users", help="manage the dashboard's users")
    create = add_command(
        group,
        "create",
        help="create a dashboard user",
        description=(
            "Create a dashboard user: an operator (every workspace) or a member of one "
            "workspace. The password is read from standard input, e.g. "
            "`printf '%%s' \"$PASSWORD\" | unified-messaging users create ops@example.com "
            "--operator --password-stdin`."
        ),
        run=admin_command(_create),
    )
    create.add_argument("email", metavar="EMAIL", help="the user's e-mail, their sign-in name")
    role = create.add_mutually_exclusive_group(required=True)
    role.add_argument("--operator", action="store_true", help="may see every workspace")
    role.add_argument("--workspace", metavar="ID", help="a member of this workspace only")
    create.add_argument(
        "--password-stdin",
        action="store_true",
        required=True,
        help="read the password (12 characters or more) from standard input",
    )
    add_command(group, "list", help="list the dashboard's users", run=admin_command(_list))
    disable = add_command(
        group,
        "disable",
        help="stop a user signing in and end their sessions",
        run=admin_command(_disable),
    )
    disable.add_argument("email", metavar="EMAIL")


def user_json(user: User) -> JsonObject:
    return {
        "id": user.id,
        "email": user.email,
        "role": user.role,
        "workspace_id": user.workspace_id,
        "enabled": user.enabled,
        "created_at": iso(user.created_at),
        "disabled_at": iso(user.disabled_at),
    }


_LABELS = {"id": "id", "email": "e-mail", "role": "role", "workspace_id": "workspace",
           "enabled": "enabled", "created_at": "created"}  # fmt: skip
_COLUMNS = (
    Column("ID", "id"),
    Column("E-MAIL", "email"),
    Column("ROLE", "role"),
    Column("WORKSPACE", "workspace_id"),
    Column("ENABLED", "enabled"),
)


def _read_password() -> str:
    # One line; its line break is not part of the password (``echo`` adds one).
    password = sys.stdin.readline().removesuffix("\n").removesuffix("\r")
    if not password:
        raise CommandFailed("no password on standard input (--password-stdin)")
    return password


async def _create(m: Messenger, args: argparse.Namespace) -> Report:
    user = await m.users.create(
        args.email, _read_password(), operator=args.operator, workspace_id=args.workspace
    )
    return fields_report(user_json(user), labels=_LABELS)


async def _list(m: Messenger, args: argparse.Namespace) -> Report:
    rows = [user_json(u) for u in await m.users.list()]
    return table_report(rows, _COLUMNS, empty="No users.")


async def _disable(m: Messenger, args: argparse.Namespace) -> Report:
    return fields_report(user_json(await m.users.disable(args.email)), labels=_LABELS)
