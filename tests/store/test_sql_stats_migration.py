"""Migration 0027 on a database that already holds messages and verifications: each is
counted once by the upgrade, the downgrade drops the counts and their triggers, and what is
written after the upgrade is counted on top."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from test_store_search import a_message, with_workspaces
from test_store_stats import H0, a_verification, delivered, oracle, sent

from unified_messaging.store.sql import migrate

#: Columns of ``um_messages`` that later revisions added (0029). Today's store writes them,
#: so the rows "stored before 0027" are written with each added for the while, then dropped
#: again: the upgrade meets a 0026 table holding those rows.
_LATER_COLUMNS = ("escalate_after_ms",)


async def _later_columns(database: Database, statement: str) -> None:
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(database.url, connect_args=database.connect_args)
    try:
        async with engine.begin() as connection:
            for column in _LATER_COLUMNS:
                await connection.execute(text(statement.format(column=column)))
    finally:
        await engine.dispose()


if TYPE_CHECKING:
    from _databases import Database


async def test_an_upgrade_counts_what_was_stored_before_it(sql_database: Database) -> None:
    await migrate(sql_database.url, revision="0026", connect_args=sql_database.connect_args)
    await _later_columns(sql_database, "ALTER TABLE um_messages ADD COLUMN {column} BIGINT")
    before = sql_database.store(migrate=False)
    await before.open()
    await with_workspaces(before, "ws_1")
    records = [sent(a_message(f"m{i}"), "sms_a", "sms_b") for i in range(3)]
    records.append(a_message("m3", status="queued"))
    await before.insert_messages(records)
    records[0] = delivered(records[0], 2.5, version=2)
    assert await before.replace_message(records[0])
    verification = a_verification("ver_1", "+905550001234")
    assert await before.add_verification(verification)
    await before.close()
    await _later_columns(sql_database, "ALTER TABLE um_messages DROP COLUMN {column}")

    upgraded = sql_database.store()
    await upgraded.open()
    try:
        assert await upgraded.fold_stats() == 0  # counted by the upgrade, nothing logged
        assert await upgraded.stat_counts("ws_1", True, H0, H0 + 1) == oracle(
            records, H0, H0 + 1, [verification]
        )
        records[1] = delivered(records[1], 700, version=2)
        assert await upgraded.replace_message(records[1])
        assert await upgraded.stat_counts("ws_1", True, H0 - 48, H0 + 48) == oracle(
            records, H0 - 48, H0 + 48, [verification]
        )
    finally:
        await upgraded.close()


async def test_a_downgrade_drops_the_counts_and_writes_go_on(sql_database: Database) -> None:
    await migrate(sql_database.url, connect_args=sql_database.connect_args)
    await migrate(sql_database.url, revision="0026", connect_args=sql_database.connect_args)
    store = sql_database.store(migrate=False)
    await store.open()
    try:
        await with_workspaces(store, "ws_1")
        record = a_message("m1", status="queued")
        await store.insert_messages([record])  # no trigger left to fail on a missing table
        assert await store.replace_message(replace(sent(record, "sms_a"), version=1))
    finally:
        await store.close()
