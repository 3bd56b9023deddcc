"""Alembic migrations on both dialects: fresh databases, older revisions, repeat runs."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.ext.asyncio import create_async_engine

from unified_messaging._domain import Attempt, ErrorInfo, MessageRecord, Workspace
from unified_messaging.store._sql_rows import message_row, workspace_row
from unified_messaging.store._tables import messages, metadata, workspaces
from unified_messaging.store.migrations import VERSION_TABLE
from unified_messaging.store.sql import migrate

if TYPE_CHECKING:
    from _databases import Database

# The chain, in merge order: 0009, 0010, 0013, 0012, 0014, 0011, 0018, 0017, 0015, 0016, 0019,
# 0020, 0021, 0022, 0023, 0025, 0026, 0027, 0028, 0029, 0030, 0031.
HEAD = "0031"
FIRST = "0001"
SECOND = "0002"
WEBHOOK_TABLES = {"um_webhook_endpoints", "um_webhook_deliveries"}


async def _inspect(database: Database) -> tuple[str | None, set[str], list[object]]:
    """The revision, the table names, and any difference from the code's metadata."""

    def look(connection: sa.Connection) -> tuple[str | None, set[str], list[object]]:
        context = MigrationContext.configure(
            connection, opts={"version_table": VERSION_TABLE, "compare_type": True}
        )
        tables = set(sa.inspect(connection).get_table_names())
        differences: list[object] = []
        if context.get_current_revision() == HEAD:
            differences = list(compare_metadata(context, metadata))
        return context.get_current_revision(), tables, differences

    engine = create_async_engine(database.url, connect_args=database.connect_args)
    try:
        async with engine.connect() as connection:
            return await connection.run_sync(look)
    finally:
        await engine.dispose()


async def _migrate(database: Database, revision: str = "head") -> None:
    await migrate(database.url, revision=revision, connect_args=database.connect_args)


async def test_an_empty_database_migrates_to_head(sql_database: Database) -> None:
    await _migrate(sql_database)
    revision, tables, _ = await _inspect(sql_database)
    assert revision == HEAD
    assert {t.name for t in metadata.sorted_tables} <= tables


async def test_the_migrated_schema_matches_the_code(sql_database: Database) -> None:
    await _migrate(sql_database)
    _, _, differences = await _inspect(sql_database)
    assert differences == []


async def test_a_database_at_the_first_revision_keeps_its_rows(sql_database: Database) -> None:
    await _migrate(sql_database, FIRST)
    revision, tables, _ = await _inspect(sql_database)
    assert revision == FIRST
    assert not WEBHOOK_TABLES & tables
    workspace = Workspace("ws_old", "Before the upgrade", datetime(2025, 12, 1, tzinfo=UTC))
    await _insert_old_workspace(sql_database, workspace)

    upgraded = sql_database.store()
    try:
        await upgraded.open()
        assert await upgraded.get_workspace("ws_old") == workspace
        assert await upgraded.list_webhook_endpoints("ws_old") == []
    finally:
        await upgraded.close()
    revision, tables, _ = await _inspect(sql_database)
    assert (revision, tables >= WEBHOOK_TABLES) == (HEAD, True)


async def test_migrating_twice_is_a_no_op(sql_database: Database) -> None:
    await _migrate(sql_database)
    await _migrate(sql_database)
    revision, _, differences = await _inspect(sql_database)
    assert (revision, differences) == (HEAD, [])


async def test_concurrent_migrations_of_a_fresh_database_all_succeed(
    sql_database: Database,
) -> None:
    await asyncio.gather(*(_migrate(sql_database) for _ in range(4)))
    revision, _, _ = await _inspect(sql_database)
    assert revision == HEAD


async def test_messages_stored_before_the_lifecycle_revision_get_version_0(
    sql_database: Database,
) -> None:
    await _migrate(sql_database, SECOND)
    created = datetime(2026, 1, 5, tzinfo=UTC)
    await _insert_old_workspace(sql_database, Workspace("ws_old", "Before", created))
    record = MessageRecord(
        job_id="msg_old", workspace_id="ws_old", livemode=True, status="sent",
        to="+905551234567", channel="sms", provider="sms_a", created_at=created,
        updated_at=created, text="Merhaba",
    )  # fmt: skip
    row = message_row(record)
    del row["version"], row["requested_sender"]  # the columns do not exist yet
    del row["template_name"], row["template_language"], row["phase"], row["send_at"]
    del row["ignore_quiet_hours"], row["held_until"], row["iys_mode"]
    del row["masked_text"], row["api_key_id"], row["api_key_name"], row["escalate_after_ms"]
    engine = create_async_engine(sql_database.url, connect_args=sql_database.connect_args)
    try:
        async with engine.begin() as connection:
            await connection.execute(sa.insert(messages).values(row))
    finally:
        await engine.dispose()

    upgraded = sql_database.store()
    try:
        await upgraded.open()
        stored = await upgraded.get_message("ws_old", True, "msg_old")
        assert stored == record
        assert stored is not None and stored.version == 0
        assert await upgraded.find_provider_ref("conn_x", "1") is None
    finally:
        await upgraded.close()
    revision, _, differences = await _inspect(sql_database)
    assert (revision, differences) == (HEAD, [])


async def test_messages_stored_before_the_phase_revision_get_the_phase_they_were_in(
    sql_database: Database,
) -> None:
    await _migrate(sql_database, "0009")
    created = datetime(2026, 1, 5, tzinfo=UTC)
    await _insert_old_workspace(sql_database, Workspace("ws_old", "Before", created))
    base = MessageRecord(
        job_id="", workspace_id="ws_old", livemode=True, status="sent", to="+905551234567",
        channel="sms", provider="sms_a", created_at=created, updated_at=created, text="Merhaba",
    )  # fmt: skip
    attempt = Attempt("sms_a", "rejected", created, None, ErrorInfo("PROVIDER_REJECTED", "no"))
    olds = {
        "msg_refused": replace(base, status="failed", error=ErrorInfo("INVALID_RECIPIENT", "x")),
        "msg_ahead": replace(base, status="queued"),
        "msg_failed": replace(base, status="failed", attempts=(attempt,)),
        "msg_sent": base,
    }
    engine = create_async_engine(sql_database.url, connect_args=sql_database.connect_args)
    try:
        async with engine.begin() as connection:
            for job_id, old in olds.items():
                row = message_row(replace(old, job_id=job_id))
                del row["template_name"], row["template_language"], row["phase"], row["send_at"]
                del (
                    row["ignore_quiet_hours"],
                    row["held_until"],
                    row["iys_mode"],
                    row["masked_text"],
                    row["api_key_id"],
                    row["api_key_name"],
                    row["escalate_after_ms"],
                )
                await connection.execute(sa.insert(messages).values(row))
    finally:
        await engine.dispose()

    upgraded = sql_database.store()
    try:
        await upgraded.open()
        phases = {
            job_id: getattr(await upgraded.get_message("ws_old", True, job_id), "phase", None)
            for job_id in olds
        }
    finally:
        await upgraded.close()
    assert phases == {
        "msg_refused": "refused",
        "msg_ahead": "accepted",
        "msg_failed": "settled",
        "msg_sent": "settled",
    }


async def _insert_old_workspace(sql_database: Database, workspace: Workspace) -> None:
    """A workspace row as an old revision holds it: without the columns added later
    (the flood guard's, revision 0007), which the upgrade fills with the default."""
    row = workspace_row(workspace)
    del row["recipient_limit"], row["recipient_window_ms"], row["quiet_hours"]
    del row["consent_policy"], row["content_rules"], row["mask_live_text"]
    engine = create_async_engine(sql_database.url, connect_args=sql_database.connect_args)
    try:
        async with engine.begin() as connection:
            await connection.execute(sa.insert(workspaces).values(row))
    finally:
        await engine.dispose()


async def test_telegram_usernames_on_the_list_are_folded_by_the_gate_revision(
    sql_database: Database,
) -> None:
    """0019: ``@ShopNews`` and ``@shopnews`` are one Telegram user; the older entry stays,
    folded, and the send gate's folded look-up finds it."""
    from unified_messaging.store._tables import suppressions

    await _migrate(sql_database, "0016")
    workspace = Workspace("ws_old", "Before the upgrade", datetime(2025, 12, 1, tzinfo=UTC))
    await _insert_old_workspace(sql_database, workspace)
    rows = [
        ("@ShopNews", "sup_1", datetime(2026, 1, 1, tzinfo=UTC), "chatbot"),
        ("@shopnews", "sup_2", datetime(2026, 1, 2, tzinfo=UTC), "chatbot"),
        ("@Solo_User", "sup_3", datetime(2026, 1, 3, tzinfo=UTC), "chatbot"),
        ("-1001234", "sup_4", datetime(2026, 1, 4, tzinfo=UTC), "chatbot"),
        ("+905551234567", "sup_5", datetime(2026, 1, 5, tzinfo=UTC), "sms"),
    ]
    engine = create_async_engine(sql_database.url, connect_args=sql_database.connect_args)
    try:
        async with engine.begin() as connection:
            for recipient, entry_id, created, channel in rows:
                await connection.execute(
                    sa.insert(suppressions).values(
                        workspace_id="ws_old",
                        livemode=True,
                        channel=channel,
                        recipient=recipient,
                        id=entry_id,
                        reason=None,
                        source="api",
                        created_at=created,
                    )
                )
    finally:
        await engine.dispose()

    await _migrate(sql_database)
    upgraded = sql_database.store()
    try:
        await upgraded.open()
        listed = await upgraded.suppressed(
            "ws_old", True, "chatbot", ["@shopnews", "@solo_user", "-1001234", "@ShopNews"]
        )
        assert listed == {"@shopnews", "@solo_user", "-1001234"}
        kept = await upgraded.get_suppression("ws_old", True, "sup_1")
        assert kept is not None and kept.recipient == "@shopnews"
        assert await upgraded.get_suppression("ws_old", True, "sup_2") is None
        assert await upgraded.suppressed("ws_old", True, "sms", ["+905551234567"])
    finally:
        await upgraded.close()
