"""Group commit in the SQL store (``_sql_writer``): concurrent writes share transactions, and
still each get their own result and their own error, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest
import sqlalchemy as sa
from _databases import Database
from test_store_contract import PERIOD, a_message, a_workspace

from unified_messaging._errors import AlreadyExists, StorageUnavailable
from unified_messaging.store.sql import SqlStore


@pytest.fixture
async def sql(sql_database: Database) -> AsyncIterator[SqlStore]:
    store = sql_database.store()
    await store.open()
    await store.create_workspace(a_workspace())
    try:
        yield store
    finally:
        await store.close()


def _writer_counts(store: SqlStore) -> tuple[int, int]:
    writer = store.writer
    assert writer is not None
    return writer.batches, writer.operations


async def test_concurrent_writes_share_commits(sql: SqlStore) -> None:
    await sql.consume_quota("ws_1", PERIOD, 1, None)  # the writer exists from here on
    batches, operations = _writer_counts(sql)
    await asyncio.gather(*(sql.insert_messages([a_message(f"job_{n:03d}")]) for n in range(64)))
    after_batches, after_operations = _writer_counts(sql)
    assert after_operations - operations == 64
    # Fewer transactions than writes: at least the writes queued behind the first shared one.
    assert after_batches - batches < 64
    for n in range(64):
        assert await sql.get_message("ws_1", True, f"job_{n:03d}") is not None


async def test_one_callers_error_is_not_anothers(sql: SqlStore) -> None:
    await sql.insert_messages([a_message("job_taken")])
    results = await asyncio.gather(
        *(
            sql.insert_messages([a_message("job_taken" if n == 5 else f"job_{n}")])
            for n in range(10)
        ),
        return_exceptions=True,
    )
    assert isinstance(results[5], AlreadyExists)
    assert [r for n, r in enumerate(results) if n != 5] == [None] * 9
    for n in (0, 4, 6, 9):
        assert await sql.get_message("ws_1", True, f"job_{n}") is not None


async def test_results_go_to_their_own_callers(sql: SqlStore) -> None:
    limits = [None if n % 2 else 0 for n in range(12)]  # every other one is refused
    results = await asyncio.gather(
        *(sql.consume_quota("ws_1", f"2026-{n:02d}", 1, limit) for n, limit in enumerate(limits))
    )
    assert results == [limit is None for limit in limits]


async def test_a_store_that_is_gone_fails_every_waiting_writer() -> None:
    # Nothing listens on port 1: every write queued together hears the outage, once each.
    broken = SqlStore(
        "postgresql+asyncpg://nobody@127.0.0.1:1/none", connect_timeout=0.5, migrate=False
    )
    results = await asyncio.gather(
        *(broken.consume_quota("ws_1", PERIOD, 1, None) for _ in range(5)),
        return_exceptions=True,
    )
    await broken.close()
    assert all(isinstance(r, StorageUnavailable) for r in results)


async def test_writes_one_after_another_never_wait_for_a_writer_that_finished(
    sql: SqlStore,
) -> None:
    # Each write finds the previous drainer just finished; none may be left queued.
    for _ in range(50):
        await asyncio.wait_for(sql.consume_quota("ws_1", PERIOD, 1, None), timeout=10)
    assert await sql.quota_used("ws_1", PERIOD) == 50


async def test_a_deadlock_between_two_batches_is_run_again_not_answered_as_an_outage(
    sql: SqlStore,
) -> None:
    """Two batches in parallel (PostgreSQL's writers) that lock in opposite orders: the
    server aborts one (40P01, after its 1 s ``deadlock_timeout``), and the writer runs that
    operation again rather than hand its caller a 503. SQLite has one writer: no deadlock,
    the same answers."""
    first, second = 910_001, 910_002  # advisory lock keys of this test alone
    ran: list[str] = []

    def locking(name: str, keys: tuple[int, int]) -> Callable[[sa.Connection], str]:
        def operation(conn: sa.Connection) -> str:
            ran.append(name)
            if conn.dialect.name == "postgresql":
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": keys[0]})
                conn.execute(sa.text("SELECT pg_sleep(0.3)"))
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": keys[1]})
            return name

        return operation

    one = asyncio.ensure_future(sql._transact(locking("one", (first, second))))
    await asyncio.sleep(0.1)  # the first batch is running: the second is a batch of its own
    two = asyncio.ensure_future(sql._transact(locking("two", (second, first))))
    assert await asyncio.wait_for(asyncio.gather(one, two), timeout=30) == ["one", "two"]
    if sql.dialect == "postgresql":
        assert len(ran) == 3  # the deadlock's victim ran twice
