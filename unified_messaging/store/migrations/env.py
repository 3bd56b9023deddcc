"""Alembic environment: runs on the connection handed over by ``migrations.upgrade``."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context

from unified_messaging.store._tables import metadata
from unified_messaging.store.migrations import VERSION_TABLE


def run() -> None:
    connection = context.config.attributes.get("connection")
    if not isinstance(connection, sa.Connection):
        raise RuntimeError(
            "Run these migrations with unified_messaging.store.sql.migrate(url), "
            "which supplies the connection."
        )
    context.configure(
        connection=connection,
        target_metadata=metadata,
        version_table=VERSION_TABLE,
        # SQLite alters tables only by copying them; batch mode does that for later revisions.
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


run()
