"""The ``unified-messaging`` command line: one argparse parser, one function per subcommand.

An edge like the REST app: it parses arguments, calls the façade and prints. To add a
subcommand, write an ``_add_<name>(commands)`` that adds its parser and sets ``run`` to a
function taking the parsed arguments and returning the exit code, and list it in
:data:`_SUBCOMMANDS`.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import sys
from collections.abc import Callable, Sequence
from typing import TypeAlias

from .._errors import MessagingError
from .._version import __version__

__all__ = ["build_parser", "main"]

Run = Callable[[argparse.Namespace], int]
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="unified-messaging",
        description="Five Turkish SMS providers, Telegram and WhatsApp Cloud behind one API.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for add in _SUBCOMMANDS:
        add(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script and of ``python -m unified_messaging``."""
    args = build_parser().parse_args(argv)
    run: Run = args.run
    try:
        return run(args)
    except MessagingError as exc:
        print(f"error: {exc.code}: {exc.message}", file=sys.stderr)
        return 1


# ------------------------------------------------------------------------------ demo


def _add_demo(commands: Subparsers) -> None:
    parser = commands.add_parser(
        "demo",
        help="send through the simulated providers and show what comes back",
        description=(
            "Tour the library in test mode: a test key, all seven providers on the "
            "simulator, an in-memory store. Nothing leaves this machine."
        ),
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help='print one JSON document per step ({"step": ..., "result": ...})',
    )
    parser.set_defaults(run=_run_demo)


def _run_demo(args: argparse.Namespace) -> int:
    from .._demo import run_demo

    _tolerant_stdout()
    asyncio.run(run_demo(print, as_json=args.json))
    return 0


def _tolerant_stdout() -> None:
    # The demo prints Turkish text; a console that cannot show it gets escapes, not a crash.
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="backslashreplace")


#: Every subcommand, in the order ``--help`` lists them.
_SUBCOMMANDS: tuple[Callable[[Subparsers], None], ...] = (_add_demo,)
