"""Opening a store whose database is already at the latest revision needs no Alembic."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from alembic.script import ScriptDirectory

from unified_messaging.store.migrations import alembic_config, latest_revision

OPEN_AND_REPORT = """
import asyncio, sys
from unified_messaging.store.sql import SqlStore

async def main() -> None:
    store = SqlStore(sys.argv[1])
    await store.open()
    await store.close()

asyncio.run(main())
print("alembic" in sys.modules)
"""


def test_the_latest_revision_read_from_the_files_is_alembics_single_head() -> None:
    heads = ScriptDirectory.from_config(alembic_config()).get_heads()
    assert [latest_revision()] == heads


def _open(url: str) -> str:
    done = subprocess.run(  # noqa: S603 - our own interpreter and fixed arguments
        [sys.executable, "-c", OPEN_AND_REPORT, url],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def test_a_store_at_the_latest_revision_opens_without_alembic(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'um.db'}"
    assert _open(url) == "True"  # a new database: Alembic creates the schema
    assert _open(url) == "False"  # at head: one query, no Alembic


def test_a_database_behind_the_latest_revision_is_still_upgraded(tmp_path: Path) -> None:
    import asyncio

    from unified_messaging.store.sql import SqlStore, migrate

    url = f"sqlite+aiosqlite:///{tmp_path / 'um.db'}"
    asyncio.run(migrate(url, revision="0001"))
    assert _open(url) == "True"

    async def revision() -> str | None:
        from unified_messaging.store.migrations import current_revision

        store = SqlStore(url, migrate=False)
        try:
            return await current_revision(store._get_engines())
        finally:
            await store.close()

    assert asyncio.run(revision()) == latest_revision()
