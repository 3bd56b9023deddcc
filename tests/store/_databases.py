"""The isolated SQL database a store test gets (see ``conftest.py`` for the fixtures).

Not in ``conftest.py``: every test folder has a ``conftest`` module, so importing names from
one by that name depends on which was loaded first.
"""

from __future__ import annotations

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
