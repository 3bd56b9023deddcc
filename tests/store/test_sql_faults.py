"""What the SQL store does when its database fails: ``StorageUnavailable``, never a driver
exception, and never the password in a message or a repr."""

from __future__ import annotations

import os
import sqlite3
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from unified_messaging._domain import MessageRecord, Workspace
from unified_messaging._errors import StorageUnavailable
from unified_messaging.store.sql import SqlStore

if TYPE_CHECKING:
    from _databases import Database

PASSWORD = "s3cret-Pa55"
CLOSED_PORT_URL = f"postgresql+asyncpg://um:{PASSWORD}@127.0.0.1:1/test"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def a_workspace(workspace_id: str = "ws_1") -> Workspace:
    return Workspace(workspace_id, "Acme", T0)


def a_message(job_id: str = "job_1", text: str = "Hello") -> MessageRecord:
    return MessageRecord(
        job_id=job_id, workspace_id="ws_1", livemode=True, status="queued",
        to="+905551234567", channel="sms", provider="sms_a", created_at=T0, updated_at=T0,
        text=text,
    )  # fmt: skip


def assert_clean(error: StorageUnavailable) -> None:
    assert type(error) is StorageUnavailable
    assert PASSWORD not in str(error)
    assert PASSWORD not in repr(error)


# -- PostgreSQL unreachable


async def test_postgres_on_a_closed_port_fails_open_with_storage_unavailable() -> None:
    store = SqlStore(CLOSED_PORT_URL, connect_timeout=2)
    with pytest.raises(StorageUnavailable) as caught:
        await store.open()
    assert_clean(caught.value)
    await store.close()


async def test_postgres_on_a_closed_port_fails_queries_with_storage_unavailable() -> None:
    store = SqlStore(CLOSED_PORT_URL, connect_timeout=2)
    with pytest.raises(StorageUnavailable) as caught:
        await store.get_workspace("ws_1")
    assert_clean(caught.value)
    with pytest.raises(StorageUnavailable):
        await store.create_workspace(a_workspace())
    await store.close()


@pytest.mark.postgres
async def test_postgres_unknown_database_is_storage_unavailable(
    postgres_database: Database,
) -> None:
    url = postgres_database.url.rsplit("/", 1)[0] + f"/um_missing_{uuid.uuid4().hex[:8]}"
    store = SqlStore(url)
    with pytest.raises(StorageUnavailable):
        await store.open()
    await store.close()


@pytest.mark.postgres
async def test_postgres_read_survives_the_server_dropping_the_connections(
    postgres_database: Database,
) -> None:
    store, name = postgres_database.named_store("um_fault")
    await store.open()
    try:
        await store.create_workspace(a_workspace())
        await postgres_database.drop_connections(name)
        # The read finds its pooled connection dead and is retried on a fresh one.
        assert await store.get_workspace("ws_1") == a_workspace()
    finally:
        await store.close()


async def test_postgres_message_read_survives_the_server_dropping_the_connections(
    postgres_database: Database,
) -> None:
    """The same for GET by id, which runs on the driver's cursor (a Hot statement)."""
    store, name = postgres_database.named_store("um_fault")
    await store.open()
    try:
        await store.create_workspace(a_workspace())
        await store.insert_messages([a_message()])
        await postgres_database.drop_connections(name)
        found = await store.get_message("ws_1", True, "job_1")
        assert found is not None and found.text == "Hello"
    finally:
        await store.close()


# -- SQLite locked or unreachable


async def test_sqlite_write_lock_held_past_busy_timeout_is_storage_unavailable(
    sqlite_database: Database, tmp_path: Path
) -> None:
    store = sqlite_database.store(busy_timeout=0.2)
    await store.open()
    await store.create_workspace(a_workspace())
    holder = sqlite3.connect(tmp_path / "store.db", isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        with pytest.raises(StorageUnavailable, match="locked") as caught:
            await store.create_workspace(a_workspace("ws_2"))
        assert_clean(caught.value)
        # WAL: readers are not blocked by the writer.
        assert await store.get_workspace("ws_1") == a_workspace()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    await store.create_workspace(a_workspace("ws_2"))
    await store.close()


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("missing/dir/store.db", id="missing-directory"),
        pytest.param("a-file/store.db", id="parent-is-a-file"),
    ],
)
async def test_sqlite_path_that_cannot_be_created_is_storage_unavailable(
    tmp_path: Path, where: str
) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    store = SqlStore(f"sqlite+aiosqlite:///{tmp_path / where}")
    with pytest.raises(StorageUnavailable) as caught:
        await store.open()
    assert_clean(caught.value)
    await store.close()


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores directory permissions"
)
async def test_sqlite_in_a_read_only_directory_is_storage_unavailable(tmp_path: Path) -> None:
    readonly = tmp_path / "readonly"
    readonly.mkdir()
    readonly.chmod(0o500)
    try:
        store = SqlStore(f"sqlite+aiosqlite:///{readonly / 'store.db'}")
        with pytest.raises(StorageUnavailable):
            await store.open()
        await store.close()
    finally:
        readonly.chmod(0o700)


# -- bad values are the caller's bug, not an outage


async def test_a_naive_datetime_is_a_value_error(sqlite_database: Database) -> None:
    store = sqlite_database.store()
    await store.open()
    try:
        with pytest.raises(ValueError, match="timezone-aware"):
            await store.create_workspace(Workspace("ws_1", "Acme", datetime(2026, 1, 1)))
    finally:
        await store.close()


@pytest.mark.postgres
async def test_text_postgres_cannot_hold_is_a_value_error(postgres_database: Database) -> None:
    # PostgreSQL text cannot contain NUL; SQLite and memory keep it. Validation upstream
    # should refuse control characters; here it must at least not look like an outage.
    store = postgres_database.store()
    await store.open()
    try:
        with pytest.raises(ValueError, match="cannot keep"):
            await store.create_workspace(Workspace("ws_1", "nul\x00byte", T0))
    finally:
        await store.close()


@pytest.mark.postgres
async def test_a_message_postgres_cannot_hold_is_a_value_error(
    postgres_database: Database,
) -> None:
    # The send path's insert runs on the driver's cursor: its errors map as SQLAlchemy's do.
    store = postgres_database.store()
    await store.open()
    try:
        await store.create_workspace(a_workspace())
        with pytest.raises(ValueError, match="cannot keep"):
            await store.insert_messages([a_message(text="nul\x00byte")])
        assert await store.get_message("ws_1", True, "job_1") is None
    finally:
        await store.close()
