"""The ``unified-messaging`` command line: one argparse parser, one function per subcommand.

An edge like the REST app: it parses arguments, calls the façade and prints. To add a
subcommand, write an ``add_<name>(commands)`` that adds its parser and sets ``run`` to a
function taking the parsed arguments and returning the exit code, and list it in
:data:`_SUBCOMMANDS`. The commands live in small modules: ``_admin_commands`` (workspaces,
keys, templates, allowlist), ``_connection_commands``, ``_ops_commands`` (migrate, vault),
``_serve``; ``_context`` builds their Messenger and ``_output`` prints what they return.

Exit status: 0 done, 1 the library refused (``error: CODE: message`` on stderr), 2 a usage
error (argparse's message, naming the argument), 78 the configuration is wrong
(``error: configuration: …`` naming the setting, e.g. ``UM_MASTER_KEYS``; sysexits'
``EX_CONFIG``), 130 interrupted, 141 the reader of stdout left before the output was written
(``| head``; what the command did stands).

Building the parser imports no more than argparse needs: each command imports the
Messenger, the stores and the web stack inside its ``run``, so ``--help`` and a simple admin
command do not pay for what they never use (``tests/cli/test_cli_imports.py`` holds that).
"""

from __future__ import annotations

import argparse
import io
import logging
import os
import sys
from collections.abc import Callable, Sequence

from .._errors import ConfigurationError, MessagingError
from .._version import __version__
from ._admin_commands import add_allowlist, add_keys, add_templates, add_workspaces
from ._args import CommandFailed, Run, Subparsers, UsageError, global_options
from ._audit_commands import add_audit
from ._campaign_commands import add_campaign, add_send
from ._connection_commands import add_connections
from ._consent_commands import add_consents
from ._iys_commands import add_iys
from ._message_commands import add_messages, add_stats
from ._ops_commands import add_migrate, add_vault
from ._output import OutputClosed, flush_stdout, write_line
from ._serve import add_serve
from ._simulate_commands import add_simulate
from ._suppression_commands import add_suppressions
from ._user_commands import add_users
from ._webhook_commands import add_webhooks
from ._worker_command import add_worker

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="unified-messaging",
        description="Five Turkish SMS providers, Telegram and WhatsApp Cloud behind one API.",
        epilog=(
            "Environment: UM_DATABASE_URL (the store), UM_MASTER_KEYS (credential keys), "
            "UM_REDIS_URL (shared rate limits for serve). --json and --database-url may "
            "come before the command or after it."
        ),
        parents=[global_options()],
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for add in _SUBCOMMANDS:
        add(commands)
    return parser


#: The exit status of a writer whose reader left: what a shell reports for a program killed
#: by SIGPIPE (128 + 13), which is how ``cat`` or ``git log`` end under ``| head``.
EXIT_READER_GONE = 141
#: The exit status of a command stopped by the operator's configuration (a malformed
#: ``UM_MASTER_KEYS``, a key id it lacks): sysexits.h's ``EX_CONFIG``, so a script can tell
#: it from a refusal (1) and from a mistyped command line (2).
EXIT_CONFIGURATION = 78


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script and of ``python -m unified_messaging``."""
    try:
        return _main(argv)
    except OutputClosed:
        return _reader_gone()


def _main(argv: Sequence[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit:
        flush_stdout()  # --help and --version reach a closed pipe here, not at exit
        raise
    _log_to_stderr(json_lines=getattr(args, "log_format", None) == "json")
    run: Run = args.run
    try:
        status = run(args)
        flush_stdout()
        return status
    except UsageError as exc:
        parser: argparse.ArgumentParser = args.parser
        parser.error(f"argument {exc.argument}: {exc.message}")  # exits 2
    except ConfigurationError as exc:
        # Not a bug and not the request: one line naming the setting, and no traceback.
        print(f"error: configuration: {' '.join(exc.message.split())}", file=sys.stderr)
        return EXIT_CONFIGURATION
    except MessagingError as exc:
        print(f"error: {exc.code}: {exc.message}", file=sys.stderr)
    except CommandFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
    except KeyboardInterrupt:
        return 130
    return 1


def _reader_gone() -> int:
    # Quietly, like any well-behaved filter: no traceback and no error line, since the
    # command's own work is done (a stored change stays stored). What is still buffered for
    # stdout goes to /dev/null, or the interpreter's last flush would fail again (Python's
    # documented recipe, "Note on SIGPIPE").
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, io.UnsupportedOperation):
        pass  # stdout is not a file (an embedding host's): nothing to flush at exit
    return EXIT_READER_GONE


def _log_to_stderr(*, json_lines: bool = False) -> None:
    # Warnings of the library (the development key file, above all) reach the operator.
    # Only when nobody configured logging: an embedding host's set-up is left alone.
    root = logging.getLogger()
    if root.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    if json_lines:
        # serve/worker --log-format json: every line JSON from the first (the development
        # key file's warning comes before uvicorn's log set-up), safe as the later ones.
        from .._observability.json_log import JsonLogFormatter
        from .._observability.logsafe import SafeLogFilter

        handler.setFormatter(JsonLogFormatter())
        handler.addFilter(SafeLogFilter())
    else:
        handler.setFormatter(_LowercaseLevel("%(levelname)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.WARNING)


class _LowercaseLevel(logging.Formatter):
    """``warning: …``, matching the ``error: …`` lines of the CLI."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        text = super().formatMessage(record)
        return text.replace(record.levelname, record.levelname.lower(), 1)


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
        default=argparse.SUPPRESS,  # not given here: the global --json decides
        help='print one JSON document per step ({"step": ..., "result": ...})',
    )
    parser.set_defaults(run=_run_demo)


def _run_demo(args: argparse.Namespace) -> int:
    import asyncio

    from .._demo import run_demo

    _tolerant_stdout()
    asyncio.run(run_demo(write_line, as_json=args.json))
    return 0


def _tolerant_stdout() -> None:
    # The demo prints Turkish text; a console that cannot show it gets escapes, not a crash.
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="backslashreplace")


#: Every subcommand, in the order ``--help`` lists them.
_SUBCOMMANDS: tuple[Callable[[Subparsers], None], ...] = (
    add_serve,
    add_worker,
    add_migrate,
    add_workspaces,
    add_keys,
    add_connections,
    add_templates,
    add_allowlist,
    add_suppressions,
    add_consents,
    add_iys,
    add_webhooks,
    add_simulate,
    add_users,
    add_send,
    add_campaign,
    add_messages,
    add_stats,
    add_vault,
    add_audit,
    _add_demo,
)
