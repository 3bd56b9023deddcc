"""``migrate`` and ``vault``: keeping the database schema and the master keys current."""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime

from .._errors import VaultError
from ._args import Subparsers, UsageError, add_command, add_group
from ._context import database_url, messenger_session, open_store, plain_command
from ._output import JsonObject, Report

__all__ = ["add_migrate", "add_vault"]


def add_migrate(commands: Subparsers) -> None:
    add_command(
        commands,
        "migrate",
        help="create or upgrade the database schema",
        description=(
            "Bring the database up to the latest schema. Safe to repeat, and safe while "
            "servers run: each also migrates when it starts."
        ),
        run=plain_command(_migrate),
    )


async def _migrate(args: argparse.Namespace) -> Report:
    from ..store.memory import MemoryStore
    from ..store.sql import migrate

    store = open_store(args)
    if isinstance(store, MemoryStore):
        data: JsonObject = {"database_url": "memory", "migrated": False}
        return Report(data, "The in-memory store has no schema: nothing to migrate.")
    shown: str = getattr(store, "url", "?")  # the password masked
    await migrate(database_url(args))
    data = {"database_url": shown, "migrated": True}
    return Report(data, f"The database at {shown} is at the latest schema.")


def add_vault(commands: Subparsers) -> None:
    group = add_group(commands, "vault", help="master keys of the credentials vault")
    add_command(
        group,
        "rotate",
        help="re-encrypt everything the vault seals under the active key",
        description=(
            "Re-encrypt every connection's credentials and every webhook endpoint's secret "
            "(the previous one too while it still signs) under the first key of "
            "UM_MASTER_KEYS, and say how many of each. Rotate by prepending a new key "
            "(new,old), running this, then dropping the old key."
        ),
        run=plain_command(_rotate),
    )
    generate = add_command(
        group,
        "generate-key",
        help="print a fresh kid:base64key entry for UM_MASTER_KEYS",
        run=plain_command(_generate_key),
    )
    generate.add_argument(
        "--kid",
        help="the key id (default: k and the current UTC time, so rotated keys never clash)",
    )


async def _rotate(args: argparse.Namespace) -> Report:
    async with messenger_session(args) as messenger:
        report = await messenger.vault.rotate()
    data: JsonObject = {
        "rotated": report.total,
        "connections": report.connections,
        "webhook_secrets": report.webhook_secrets,
        "expired_secrets_removed": report.expired_secrets_removed,
        "iys_passwords": report.iys_passwords,
        "active_key_id": report.active_key_id,
    }
    text = (
        f"Re-encrypted under key {report.active_key_id}: connections: {report.connections}, "
        f"webhook secrets: {report.webhook_secrets}."
    )
    if report.iys_passwords:
        text += f" İYS passwords: {report.iys_passwords}."
    if report.expired_secrets_removed:
        text += f" Removed expired previous webhook secrets: {report.expired_secrets_removed}."
    return Report(data, text)


def _what_next() -> str:
    # A first set-up has no keys to rotate from: telling it to prepend and rotate misleads.
    if not os.environ.get("UM_MASTER_KEYS", "").strip():
        return (
            "Set UM_MASTER_KEYS to it (export UM_MASTER_KEYS='…') wherever the server, the "
            "worker and the commands run, and keep it safe: what it seals cannot be read "
            "without it."
        )
    return "Prepend it to UM_MASTER_KEYS (new,old), then run 'unified-messaging vault rotate'."


async def _generate_key(args: argparse.Namespace) -> Report:
    # A time-based id, not a fixed "k1": the new key is prepended to the old one, and two
    # keys under one id would be refused.
    from ..vault._core import generate_key_spec

    kid = args.kid or datetime.now(UTC).strftime("k%Y%m%d%H%M%S")
    try:
        spec = generate_key_spec(kid)
    except VaultError as exc:
        raise UsageError("--kid", exc.message) from None
    if not args.json:
        print(_what_next(), file=sys.stderr)
    data: JsonObject = {"key_spec": spec, "key_id": kid}
    return Report(data, spec)
