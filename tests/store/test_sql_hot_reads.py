"""The per-request reads by key (``get_message``, the single send's suppression check) run
as ``Hot`` statements on connections the store keeps between reads: on SQLite
one per thread, on PostgreSQL a few kept from the pool. What they return must be exactly
what was written, and a kept connection must never show an old snapshot or outlive the
server's side of it."""

from __future__ import annotations

import asyncio
import dataclasses
import struct
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from sqlalchemy.util import greenlet_spawn

from unified_messaging._domain import Attempt, DeliveryReport, ErrorInfo, MessageRecord, Workspace
from unified_messaging.store.sql import SqlStore
from unified_messaging.suppressions._rules import Suppression

if TYPE_CHECKING:
    from _databases import Database

    from unified_messaging.store.base import Store

ISTANBUL = timezone(timedelta(hours=3))
T0 = datetime(2026, 3, 29, 2, 30, 0, 123456, tzinfo=ISTANBUL)


def a_workspace() -> Workspace:
    return Workspace("ws_1", "Acme", T0)


def a_full_message(job_id: str = "job_1") -> MessageRecord:
    """Every column that has a conversion: datetimes in another zone, JSON, unicode."""
    error = ErrorInfo("PROVIDER_REJECTED", "Numara geçersiz — «ret» ✗ 🚫")
    return MessageRecord(
        job_id=job_id, workspace_id="ws_1", livemode=True, status="failed",
        to="+905551234567", channel="sms", provider="sms_a",
        created_at=T0, updated_at=T0 + timedelta(seconds=1, microseconds=1),
        text="Merhaba Şükrü, ğüşıöç İĞÜŞÖÇ 😀\n\"quoted\" \\ back",
        sender="ACME", template_key="otp", sent_at=T0 + timedelta(seconds=2),
        final_at=datetime(2026, 3, 29, 0, 0, 3, tzinfo=UTC), error=error,
        attempts=(
            Attempt("sms_a", "rejected", T0, "pm_1", error),
            Attempt("sms_b", "accepted", T0 + timedelta(milliseconds=5)),
        ),
        dlr=DeliveryReport("failed", T0 + timedelta(minutes=1), "UNDELIV", error),
        segments=2, encoding="ucs2", fallback_left=("sms_b", "sms_c"), fallback_requested=True,
        template_params=("Şükrü", "", "1 2 3"), version=7, requested_sender="Acme Ltd",
        template_name="otp_tr", template_language="tr", phase="settled",
        send_at=T0 - timedelta(days=1),
    )  # fmt: skip


def a_bare_message(job_id: str = "job_2") -> MessageRecord:
    """Every optional column ``None`` or empty."""
    return MessageRecord(
        job_id=job_id, workspace_id="ws_1", livemode=False, status="queued",
        to="+905551234567", channel="sms", provider="sms_a", created_at=T0, updated_at=T0,
        text="",
    )  # fmt: skip


def assert_utc(record: MessageRecord) -> None:
    moments = [record.created_at, record.updated_at, record.sent_at, record.final_at]
    moments += [record.send_at, *(a.at for a in record.attempts)]
    moments += [record.dlr.received_at] if record.dlr else []
    for moment in moments:
        assert moment is None or moment.tzinfo is UTC


async def test_a_message_read_by_id_is_the_message_written(store: Store) -> None:
    await store.create_workspace(a_workspace())
    full, bare = a_full_message(), a_bare_message()
    await store.insert_messages([full, bare])

    found_full = await store.get_message("ws_1", True, full.job_id)
    found_bare = await store.get_message("ws_1", False, bare.job_id)

    assert found_full == full
    assert found_bare == bare
    if isinstance(store, SqlStore):
        assert found_full is not None and found_bare is not None
        assert_utc(found_full)
        assert_utc(found_bare)


async def test_a_message_read_by_id_is_not_found_in_the_other_mode(store: Store) -> None:
    await store.create_workspace(a_workspace())
    await store.insert_messages([a_full_message()])

    assert await store.get_message("ws_1", False, "job_1") is None
    assert await store.get_message("ws_2", True, "job_1") is None


async def test_a_kept_read_connection_sees_another_stores_later_commit(
    sql_database: Database,
) -> None:
    """The kept connection holds no snapshot between reads: another process's change
    (here another store on the same database) is read by the next read."""
    reader, writer = sql_database.store(), sql_database.store()
    await reader.open()
    await writer.open()
    try:
        await writer.create_workspace(a_workspace())
        await writer.insert_messages([a_bare_message()])
        first = await reader.get_message("ws_1", False, "job_2")
        assert first is not None and first.version == 0
        assert not await reader.suppressed("ws_1", False, "sms", ["+905551234567"])

        await writer.replace_message(dataclasses.replace(first, status="sent", version=1))
        await writer.add_suppression(_suppression())

        again = await reader.get_message("ws_1", False, "job_2")
        assert again is not None and (again.status, again.version) == ("sent", 1)
        assert await reader.suppressed("ws_1", False, "sms", ["+905551234567"]) == {"+905551234567"}
    finally:
        await reader.close()
        await writer.close()


async def test_reads_on_kept_connections_survive_the_server_dropping_them(
    postgres_database: Database,
) -> None:
    """PostgreSQL keeps a few read connections checked out between reads: when the server
    ends them all, the next reads still answer (the dead ones are dropped, one retry)."""
    store, name = postgres_database.named_store("um_hot")
    await store.open()
    try:
        await store.create_workspace(a_workspace())
        await store.insert_messages([a_full_message()])
        # Several reads at once: several connections are kept afterwards.
        reads = [store.get_message("ws_1", True, "job_1") for _ in range(6)]
        assert all(found is not None for found in await asyncio.gather(*reads))
        await postgres_database.drop_connections(name)
        for _ in range(3):
            found = await store.get_message("ws_1", True, "job_1")
            assert found == a_full_message()
        assert not await store.suppressed("ws_1", True, "sms", ["+905551234567"])
    finally:
        await store.close()


def _terminating(driver: Any) -> None:
    """Hand an asyncpg connection's protocol the message a server sends as it ends the
    backend (FATAL 57P01), as a socket read would, without the close that follows it."""
    fields = [
        (b"S", b"FATAL"), (b"V", b"FATAL"), (b"C", b"57P01"),
        (b"M", b"terminating connection due to administrator command"),
    ]  # fmt: skip
    body = b"".join(kind + text + b"\0" for kind, text in fields) + b"\0"
    driver._protocol.data_received(b"E" + struct.pack("!i", len(body) + 4) + body)


async def test_a_read_retried_after_a_lost_kept_connection_does_not_meet_a_stale_pooled_one(
    postgres_database: Database,
) -> None:
    """The race the test above can meet under load: the server has sent each backend its
    FATAL error but the sockets' close is not read yet, so asyncpg calls the connections
    open. The first read fails on a kept one; its one retry must not take another from the
    pool that is just as dead (the checkout's is_closed() test passes it): the lost
    connection marks the pool's older ones stale, as SQLAlchemy's own reads do."""
    store, _name = postgres_database.named_store("um_hot")
    await store.open()
    try:
        await store.create_workspace(a_workspace())
        await store.insert_messages([a_full_message()])
        reads = [store.get_message("ws_1", True, "job_1") for _ in range(3)]
        assert all(found is not None for found in await asyncio.gather(*reads))
        engines = store._get_engines()
        doomed = [c.connection.dbapi_connection.driver_connection for c in engines._idle]
        assert doomed, "the reads keep their connections"
        pooled = [await engines.read.connect() for _ in range(4)]
        for connection in pooled:
            doomed.append((await connection.get_raw_connection()).driver_connection)
        for connection in pooled:
            await connection.close()  # back in the pool, alive as far as it knows
        for driver in doomed:
            _terminating(driver)
        assert await store.get_message("ws_1", True, "job_1") == a_full_message()
        assert not await store.suppressed("ws_1", True, "sms", ["+905551234567"])
    finally:
        await store.close()


async def test_a_hot_read_that_ends_after_the_store_closed_closes_its_connection(
    postgres_database: Database,
) -> None:
    """A read in flight while the store closes (a request or the worker at shutdown) gives
    its connection back after the pool was disposed. Kept for the next read, or returned
    to the pool that dispose left behind, nothing would ever close it: the garbage
    collector met it later, at some other test's setup (asyncpg's ResourceWarning, an
    error under filterwarnings = error). It is closed when it comes back."""
    store = postgres_database.store()
    await store.open()
    engines = store._get_engines()
    connection = await greenlet_spawn(engines.take_reader)  # the read has begun
    driver = connection.connection.dbapi_connection.driver_connection  # type: ignore[union-attr]

    await store.close()
    await greenlet_spawn(engines.give_back_reader, connection)  # and ends

    assert engines._idle == []
    assert driver.is_closed()


def _suppression() -> Suppression:
    return Suppression(
        id="sup_1", workspace_id="ws_1", livemode=False, channel="sms",
        recipient="+905551234567", reason="stop", source="api", created_at=T0,
    )  # fmt: skip


async def test_sqlite_reads_from_many_threads_hold_a_bounded_number_of_connections(
    sqlite_database: Database,
) -> None:
    """Each thread that reads holds one connection, at most eight at once (the pool is the
    writer's too); a thread beyond them reads on its own checkout, and the connections of
    threads that ended are closed when a new thread needs one."""
    store = sqlite_database.store()
    await store.open()
    try:
        await store.create_workspace(a_workspace())
        await store.insert_messages([a_full_message()])
        barrier = threading.Barrier(12)

        def read_in_a_thread() -> MessageRecord | None:
            barrier.wait()  # all twelve alive at once
            return asyncio.run(store.get_message("ws_1", True, "job_1"))

        with ThreadPoolExecutor(12) as pool:
            found = list(pool.map(lambda _: read_in_a_thread(), range(12)))
        assert found == [a_full_message()] * 12
        engines = store._get_engines()
        assert len(engines._held) <= 8

        await asyncio.to_thread(lambda: asyncio.run(store.get_message("ws_1", True, "job_1")))
        assert len(engines._held) <= 2  # the ended threads' closed; this loop's and the last
    finally:
        await store.close()
