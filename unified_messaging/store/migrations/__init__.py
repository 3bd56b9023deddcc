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

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext

from .._sql_engine import Engines, storage_errors

__all__ = ["HEAD", "VERSION_TABLE", "alembic_config", "current_revision", "upgrade"]

VERSION_TABLE = "um_alembic_version"
HEAD = "head"

# Any fixed 64-bit number works; this one is "um_migr" in ASCII.
_ADVISORY_LOCK_KEY = 0x756D5F6D696772
_SQLITE_LOCK_RETRIES = 3


def alembic_config() -> Config:
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


async def _upgrade_once(engines: Engines, revision: str) -> None:
    async with engines.write.begin() as connection:
        if engines.dialect == "postgresql":
            await connection.execute(
                sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _ADVISORY_LOCK_KEY}
            )
        await connection.run_sync(_run_upgrade, revision)


def _run_upgrade(connection: sa.Connection, revision: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


def _current(connection: sa.Connection) -> str | None:
    context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
    return context.get_current_revision()


def _sqlite_locked(engines: Engines, exc: Exception) -> bool:
    return engines.dialect == "sqlite" and "locked" in str(exc)
