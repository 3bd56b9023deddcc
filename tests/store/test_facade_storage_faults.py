"""A send whose record cannot be stored fails with 503 and never reaches a provider."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from unified_messaging import Messenger, StorageUnavailable, Vault, generate_key_spec
from unified_messaging.store.sql import SqlStore
from unified_messaging.testing import Outbox


async def test_locked_sqlite_gives_storage_unavailable_and_no_provider_call(
    tmp_path: Path,
) -> None:
    path = tmp_path / "locked.db"
    outbox = Outbox()
    store = SqlStore(f"sqlite+aiosqlite:///{path}", busy_timeout=0.2)
    messenger = Messenger(store, vault=Vault.from_spec(generate_key_spec()),
                          on_simulated=outbox.record)  # fmt: skip
    async with messenger:
        workspace = await messenger.workspaces.create("locked")
        await messenger.connections.add(workspace.id, "sms_a", default_sender="ACME")
        key = await messenger.keys.create(workspace.id)
        principal = await messenger.authenticate(key.secret)

        holder = sqlite3.connect(path, timeout=0)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            with pytest.raises(StorageUnavailable) as caught:
                await messenger.send(principal, {"to": "+905551234567", "body": "x"})
        finally:
            holder.rollback()
            holder.close()
        assert caught.value.http_status == 503
        assert len(outbox) == 0  # write-ahead: nothing handed to a provider

        # Once the lock is gone the same send goes through.
        response = await messenger.send(principal, {"to": "+905551234567", "body": "x"})
        assert response.status == "sent"


async def test_unreachable_postgres_gives_storage_unavailable_on_authenticate() -> None:
    store = SqlStore("postgresql+asyncpg://postgres:secret-pw@127.0.0.1:1/test", migrate=False)
    messenger = Messenger(store, vault=Vault.generate())
    with pytest.raises(StorageUnavailable) as caught:
        await messenger.authenticate("um_test_" + "a" * 40)
    assert "secret-pw" not in str(caught.value)
    await messenger.aclose()
