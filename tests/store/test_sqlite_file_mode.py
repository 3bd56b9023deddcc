"""The SQLite database holds phone numbers and message bodies: its files are the owner's only."""

from __future__ import annotations

import stat
from pathlib import Path

from test_store_contract import a_message, a_workspace

from unified_messaging.store.sql import SqlStore, migrate


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_a_new_database_and_its_wal_shm_and_write_lock_are_0600(tmp_path: Path) -> None:
    path = tmp_path / "um.db"
    store = SqlStore(f"sqlite+aiosqlite:///{path}")
    await store.open()
    await store.create_workspace(a_workspace())
    await store.insert_messages([a_message()])  # through the writer: WAL and SHM exist now
    try:
        files = [path, tmp_path / "um.db-wal", tmp_path / "um.db-shm", tmp_path / "um.db-wlock"]
        assert {f.name: mode(f) for f in files} == {f.name: 0o600 for f in files}
    finally:
        await store.close()


async def test_an_existing_world_readable_database_is_tightened(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    await migrate(f"sqlite+aiosqlite:///{path}")
    path.chmod(0o644)
    store = SqlStore(f"sqlite+aiosqlite:///{path}")
    await store.open()
    await store.close()
    assert mode(path) == 0o600
