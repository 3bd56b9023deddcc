"""Alembic migrations of the SQL store, shipped inside the package.

No ``alembic.ini`` is needed: :func:`alembic_config` points Alembic at this folder, and
:func:`upgrade` runs it on a connection of the store's own engine, inside one transaction
(DDL is transactional on both dialects, so a failed upgrade leaves nothing half-built).

Several processes may start at once on a fresh database. On PostgreSQL the upgrade holds a
transaction-scoped advisory lock, so one process migrates and the others then find the
schema current. On SQLite the transaction begins ``IMMEDIATE``: the write lock serializes
them the same way, and a process that waited past its busy timeout tries again.

The version table is ``um_alembic_version``, so a host application's own Alembic history in
the same database is left alone.
"""

from __future__ import annotations

import asyncio
import re
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa

from .._sql_engine import Engines, storage_errors

if TYPE_CHECKING:
    from alembic.config import Config

__all__ = [
    "HEAD",
    "VERSION_TABLE",
    "alembic_config",
    "current_revision",
    "latest_revision",
    "upgrade",
]

VERSION_TABLE = "um_alembic_version"
HEAD = "head"

# Any fixed 64-bit number works; this one is "um_migr" in ASCII.
_ADVISORY_LOCK_KEY = 0x756D5F6D696772
_SQLITE_LOCK_RETRIES = 3


def alembic_config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(Path(__file__).parent))
    return config


async def upgrade(engines: Engines, revision: str = HEAD, *, password: str | None = None) -> None:
    """Bring the database up to ``revision`` (``head`` by default); a no-op when it is."""
    for attempt in range(_SQLITE_LOCK_RETRIES):
        try:
            with storage_errors(password=password):
                await _upgrade_once(engines, revision)
            return
        except Exception as exc:
            if not _sqlite_locked(engines, exc) or attempt == _SQLITE_LOCK_RETRIES - 1:
                raise


async def current_revision(engines: Engines, *, password: str | None = None) -> str | None:
    """The revision the database is at; ``None`` for a database never migrated."""
    with storage_errors(password=password):
        async with engines.read.connect() as connection:
            return await connection.run_sync(_current)


@cache
def latest_revision() -> str | None:
    """The head revision, read from the revision files' text (no Alembic import): the one
    no other revision names as its ``down_revision``; ``None`` if that is not exactly one."""
    found: dict[str, str | None] = {}
    for script in (Path(__file__).parent / "versions").glob("*.py"):
        text = script.read_text(encoding="utf-8")
        revision = re.search(r"^revision[^=]*=\s*[\"'](\w+)[\"']", text, re.MULTILINE)
        down = re.search(r"^down_revision[^=]*=\s*[\"'](\w+)[\"']", text, re.MULTILINE)
        if revision is not None:
            found[revision.group(1)] = None if down is None else down.group(1)
    heads = set(found) - {d for d in found.values() if d is not None}
    return heads.pop() if len(heads) == 1 else None


def _at_revision(connection: sa.Connection, revision: str) -> bool:
    try:
        versions = (
            connection.execute(
                sa.text(f"SELECT version_num FROM {VERSION_TABLE}")  # noqa: S608 - a constant
            )
            .scalars()
            .all()
        )
    except sa.exc.DBAPIError:
        return False  # no version table yet: a new database
    return list(versions) == [revision]


async def _is_at(engines: Engines, revision: str) -> bool:
    sync_read = engines.sync_read
    if sync_read is not None:
        # SQLite: through the synchronous engine, as the store's reads, so a command that
        # only reads never makes the async engine (see Engines); in a thread, since a new
        # database's first connection may wait for another process's lock.
        def check() -> bool:
            with sync_read.connect() as connection:
                return _at_revision(connection, revision)

        return await asyncio.to_thread(check)
    async with engines.read.connect() as connection:
        return await connection.run_sync(_at_revision, revision)


async def _upgrade_once(engines: Engines, revision: str) -> None:
    # Every command and every server start opens the store; a database already at head
    # needs one query, not Alembic (whose import and script scan cost a CLI call ~0.3 s).
    latest = latest_revision() if revision == HEAD else None
    if latest is not None and await _is_at(engines, latest):
        return
    async with engines.write.begin() as connection:
        if engines.dialect == "postgresql":
            await connection.execute(
                sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _ADVISORY_LOCK_KEY}
            )
        await connection.run_sync(_run_upgrade, revision)


def _run_upgrade(connection: sa.Connection, revision: str) -> None:
    from alembic import command

    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


def _current(connection: sa.Connection) -> str | None:
    from alembic.runtime.migration import MigrationContext

    context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
    return context.get_current_revision()


def _sqlite_locked(engines: Engines, exc: Exception) -> bool:
    return engines.dialect == "sqlite" and "locked" in str(exc)
