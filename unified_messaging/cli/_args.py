"""Building the parser tree, and the argument types the commands share.

Input that cannot even be read (``--port abc``, ``--credential`` without ``=``) is a usage
error, exit 2, found by argparse or raised as :class:`UsageError` after parsing. Input that
reads fine but breaks a rule (a negative quota, a bad CIDR) goes to the façade, which owns
the rule and raises the same error the REST edge renders.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TypeAlias

__all__ = [
    "CommandFailed",
    "Run",
    "Subparsers",
    "UsageError",
    "add_command",
    "add_group",
    "aware_datetime",
    "credential_pair",
    "finite_number",
    "global_options",
    "port_number",
    "positive_seconds",
    "workspace_option",
]

Run = Callable[[argparse.Namespace], int]
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


class UsageError(Exception):
    """A command line that parsed but cannot be used; rendered like argparse's own errors."""

    def __init__(self, argument: str, message: str) -> None:
        super().__init__(f"{argument}: {message}")
        self.argument = argument
        self.message = message


class CommandFailed(Exception):
    """The command could not do its job for a reason outside the library's own errors (a
    missing optional extra, a busy port): ``error: message``, exit 1."""


def _common_options(*, top: bool) -> argparse.ArgumentParser:
    """``--json`` and ``--database-url``, accepted before the command and after it.

    The top-level parser holds the defaults. Below it the defaults are suppressed: argparse
    copies every attribute a subcommand's parser sets onto the result, so a default there
    would undo ``--json`` given before the command.
    """
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--json",
        action="store_true",
        default=False if top else argparse.SUPPRESS,
        help="print one JSON document (lists as a JSON array) instead of text",
    )
    common.add_argument(
        "--database-url",
        metavar="URL",
        default=None if top else argparse.SUPPRESS,
        help="the store (default: $UM_DATABASE_URL, else sqlite+aiosqlite:///./unified_messaging.db)",
    )
    return common


_COMMON = _common_options(top=False)


def global_options() -> argparse.ArgumentParser:
    """The common options as the top-level parser's parent, with their defaults."""
    return _common_options(top=True)


def add_group(commands: Subparsers, name: str, *, help: str) -> Subparsers:
    """A command that only holds subcommands (``workspaces``, ``keys`` …)."""
    parser = commands.add_parser(name, help=help, description=help, parents=[_COMMON])
    return parser.add_subparsers(title="commands", metavar="COMMAND", required=True)


def add_command(
    commands: Subparsers, name: str, *, help: str, run: Run, description: str | None = None
) -> argparse.ArgumentParser:
    """A runnable command with the common ``--json`` and ``--database-url`` options."""
    parser = commands.add_parser(
        name, help=help, description=description or help, parents=[_COMMON]
    )
    # ``parser`` is kept so errors found after parsing print this command's usage.
    parser.set_defaults(run=run, parser=parser)
    return parser


def encoding_option(parser: argparse.ArgumentParser) -> None:
    """``--encoding`` of a command that reads a CSV file (checked when the file is opened)."""
    parser.add_argument(
        "--encoding",
        default="utf-8",
        metavar="NAME",
        help="the file's text encoding: utf-8 (the default; a byte-order mark is skipped), "
        "cp1254 for a Turkish Excel or Windows export, iso-8859-9, utf-16 …",
    )


def workspace_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", required=True, metavar="ID", help="the workspace id")


# ------------------------------------------------------------------------- argument types


def credential_pair(text: str) -> tuple[str, str]:
    """``NAME=VALUE``. Errors never quote the text: without ``=`` it may be the bare secret."""
    name, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError("expected NAME=VALUE (the value is not shown)")
    if not name.strip():
        raise argparse.ArgumentTypeError("the NAME of NAME=VALUE is empty")
    return name.strip(), value


def aware_datetime(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 time, e.g. 2027-01-31T00:00:00Z"
        ) from None
    if moment.tzinfo is None:
        # A naive time means different instants on different hosts: ask, do not guess.
        raise argparse.ArgumentTypeError(f"{text!r} needs a timezone, e.g. Z or +03:00")
    return moment


def finite_number(text: str) -> float:
    try:
        number = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(number):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return number


def positive_seconds(text: str) -> timedelta:
    number = finite_number(text)
    if number <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return timedelta(seconds=number)


def port_number(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)")
    return port
