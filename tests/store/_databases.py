"""The isolated SQL database a store test gets (see ``conftest.py`` for the fixtures).

Not in ``conftest.py``: every test folder has a ``conftest`` module, so importing names from
one by that name depends on which was loaded first.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from unified_messaging.store.sql import SqlStore

__all__ = ["Database"]


@dataclass(frozen=True)
class Database:
    """One isolated SQL database for a test: a URL and what a store needs to reach it."""

    dialect: str
    url: str
    #: PostgreSQL: the schema holding this test's tables (on the connection's search_path).
    schema: str | None = None
    connect_args: dict[str, object] = field(default_factory=dict)

    def store(self, *, busy_timeout: float = 5.0, migrate: bool = True) -> SqlStore:
        return SqlStore(
            self.url, connect_args=self.connect_args, busy_timeout=busy_timeout, migrate=migrate
        )

    def named_store(self, prefix: str) -> tuple[SqlStore, str]:
        """PostgreSQL: a store whose connections carry an ``application_name`` of their own
        (returned), so :meth:`drop_connections` can end exactly those."""
        name = f"{prefix}_{uuid.uuid4().hex[:8]}"
        settings = {"search_path": str(self.schema), "application_name": name}
        return SqlStore(self.url, connect_args={"server_settings": settings}), name

    async def drop_connections(self, name: str) -> None:
        """PostgreSQL: the server ends every connection named ``name`` (a restart, a proxy's
        cut), from a connection of its own."""
        import asyncpg

        admin = await asyncpg.connect(self.url.replace("postgresql+asyncpg://", "postgresql://"))
        try:
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = $1",
                name,
            )
        finally:
            await admin.close()
