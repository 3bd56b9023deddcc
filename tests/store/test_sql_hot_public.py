"""Every ``Hot`` statement does what SQLAlchemy's own execution of the same statement does.

``_sql_hot`` compiles each statement once and runs it on the driver's cursor, converting
values with the converters it asks SQLAlchemy's public API for (``positiontup``, ``binds``,
``params``, each type's ``dialect_impl``, the statement's ``exported_columns``). A
SQLAlchemy release that changed any of them would show here: each statement runs both ways
on the same data, in a transaction rolled back after each, and the rows it returns and the
rows it leaves behind must be the same. On PostgreSQL the batched forms (one statement over
arrays, several writes joined in one ``WITH``) are compared too, and must be the forms used.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import create_async_engine
from test_sql_hot_reads import T0, a_bare_message, a_full_message, a_workspace

from unified_messaging._errors import UnsupportedDependency
from unified_messaging.store import (
    _sql_batch,
    _sql_core,
    _sql_guard,
    _sql_hot,
    _sql_suppressions,
    _sql_work,
)
from unified_messaging.store._sql_core import _update_row
from unified_messaging.store._sql_hot import Hot, check_dialect, compare_and_write, write_all
from unified_messaging.store._sql_rows import delivery_row, message_row, provider_ref_row, work_row
from unified_messaging.store._tables import (
    due_work,
    messages,
    provider_refs,
    webhook_deliveries,
)
from unified_messaging.store.base import ProviderRef, WebhookDelivery, WebhookEndpoint, WorkItem
from unified_messaging.store.sql import SqlStore
from unified_messaging.suppressions._rules import Suppression

if TYPE_CHECKING:
    from _databases import Database

Run = Callable[[sa.Connection], Any]
#: What a statement leaves behind, table by table (its rows in key order).
_TABLES = (messages, due_work, provider_refs, webhook_deliveries)


def a_ref(job_id: str = "job_1", message_id: str = "pm_1") -> ProviderRef:
    return ProviderRef("conn_1", message_id, job_id, "ws_1", True, poll_after=T0)


def an_item(item_id: str, **changes: Any) -> WorkItem:
    item = WorkItem(
        id=item_id, kind="dlr_timeout", ref="job_1", due_at=T0, created_at=T0,
        payload={"n": 1, "text": "ğü 😀", "list": [1, None, True]},
    )  # fmt: skip
    return dataclasses.replace(item, **changes)


def a_delivery(delivery_id: str) -> WebhookDelivery:
    return WebhookDelivery(
        id=delivery_id, endpoint_id="we_1", event_id=f"evt_{delivery_id}",
        event_type="message.sent", payload=b'{"a":"\\u011f"}\x00\xff', status="pending",
        created_at=T0, updated_at=T0 + timedelta(microseconds=7), attempts=2,
        next_attempt_at=T0 + timedelta(minutes=1), last_status_code=503, last_error="ğ",
    )  # fmt: skip


@pytest.fixture
async def filled(migrated_database: Database) -> Database:
    """Rows for every statement to find: messages, refs, held work, a suppression."""
    store = migrated_database.store()
    await store.open()
    try:
        await store.create_workspace(a_workspace())
        await store.insert_messages([a_full_message("job_1"), a_bare_message("job_2")])
        await store.add_provider_refs([a_ref(), a_ref("job_2", "pm_2")])
        await store.enqueue_work_many([an_item("w_1"), an_item("w_2", kind="webhook")])
        await store.claim_due_work(now=T0, worker_id="wk", lease=timedelta(minutes=5), limit=1)
        await store.add_webhook_endpoint(
            WebhookEndpoint("we_1", "ws_1", "https://h.example/x", ("message.sent",), "c", T0)
        )
        await store.add_suppression(
            Suppression("sup_1", "ws_1", True, "sms", "+905551234567", None, "api", T0)
        )
    finally:
        await store.close()
    return migrated_database


@pytest.fixture
def both_ways(filled: Database) -> Iterator[Callable[[Run], Any]]:
    """Runs a function on a connection of the dialect's kind the store runs ``Hot`` on,
    in a transaction rolled back afterwards; returns what it returned and the tables."""
    if filled.dialect == "sqlite":
        path = str(sa.make_url(filled.url).database)
        engine = sa.create_engine(f"sqlite:///{Path(path)}")

        def run_sqlite(run: Run) -> Any:
            with engine.connect() as conn:
                try:
                    return run(conn), _tables(conn)
                finally:
                    conn.rollback()

        yield run_sqlite
        engine.dispose()
        return
    yield _postgres_runner(filled)


def _postgres_runner(database: Database) -> Callable[[Run], Any]:
    async def run_async(run: Run) -> Any:
        engine = create_async_engine(database.url, connect_args=database.connect_args)
        try:
            async with engine.connect() as conn:
                try:
                    return await conn.run_sync(lambda c: (run(c), _tables(c)))
                finally:
                    await conn.rollback()
        finally:
            await engine.dispose()

    def run_postgres(run: Run) -> Any:
        return asyncio.run(run_async(run))

    return run_postgres


def _tables(conn: sa.Connection) -> dict[str, list[dict[str, Any]]]:
    return {
        table.name: [
            dict(row)
            for row in conn.execute(
                sa.select(table).order_by(*table.primary_key.columns)
            ).mappings()
        ]
        for table in _TABLES
    }


def _returned(result: sa.CursorResult[Any]) -> list[dict[str, Any]] | int:
    if result.returns_rows:
        return sorted((dict(r) for r in result.mappings()), key=repr)
    return result.rowcount


def _by_hot(hot: Hot, params: Mapping[str, Any]) -> Run:
    def run(conn: sa.Connection) -> list[dict[str, Any]] | int:
        if getattr(hot.statement, "exported_columns", None):
            return sorted(hot.mappings(conn, params), key=repr)
        return hot.rowcount(conn, params)

    return run


def _by_sqlalchemy(hot: Hot, params: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> Run:
    def run(conn: sa.Connection) -> Any:
        return _returned(conn.execute(hot.statement, params))  # type: ignore[call-overload]

    return run


GUARD = {"item_id": "w_1", "worker_id": "wk", "now": T0}
_RECENT = {
    "workspace_id": "ws_1", "livemode": True, "to": "+905551234567",
    "since": T0 - timedelta(days=1), "limit": 10,
}  # fmt: skip

#: One run of each statement: its name in HOT_STATEMENTS and its parameters.
ONE_RUN: list[tuple[str, Hot, Callable[[], Mapping[str, Any]]]] = [
    ("_MESSAGE_BY_ID", _sql_core._MESSAGE_BY_ID,
     lambda: {"job_id": "job_1", "workspace_id": "ws_1", "livemode": True}),
    ("_REF_BY_ID", _sql_core._REF_BY_ID,
     lambda: {"connection_id": "conn_1", "provider_message_id": "pm_1"}),
    ("_SUPPRESSED_ONE", _sql_suppressions._SUPPRESSED_ONE,
     lambda: {"workspace_id": "ws_1", "livemode": True, "channel": "sms",
              "recipient": "+905551234567"}),
    ("_INSERT_MESSAGE", _sql_core._INSERT_MESSAGE,
     lambda: message_row(dataclasses.replace(a_full_message("job_3")))),
    ("_UPDATE_MESSAGE", _sql_core._UPDATE_MESSAGE,
     lambda: _update_row(dataclasses.replace(a_full_message("job_2"), text="yeni ş"))),
    ("_REPLACE_MESSAGE", _sql_core._REPLACE_MESSAGE,
     lambda: {**_update_row(dataclasses.replace(a_full_message("job_1"), version=8)),
              "b_version": 7}),
    ("_DELETE_ONE_WORK", _sql_core._DELETE_ONE_WORK, lambda: {"b_id": "w_2"}),
    ("_CLOSE_REF", _sql_core._CLOSE_REF,
     lambda: {"b_connection_id": "conn_1", "b_message_id": "pm_1"}),
    ("_RECENT", _sql_guard._RECENT, lambda: _RECENT),
    ("_CLAIM_WORK", _sql_work._CLAIM_WORK,
     lambda: {"now": T0 + timedelta(hours=1), "limit": 5, "worker_id": "wk2",
              "lease_until": T0 + timedelta(hours=2)}),
    ("_COMPLETE_WORK", _sql_work._COMPLETE_WORK, lambda: {"item_id": "w_1", "worker_id": "wk"}),
    ("_REF_AND_MESSAGE", _sql_batch._REF_AND_MESSAGE,
     lambda: {"connection_id": "conn_1", "provider_message_id": "pm_1"}),
    ("_HOLDS", _sql_work._HOLDS, lambda: GUARD),
    ("_RECORD_DELIVERY", _sql_work._RECORD_DELIVERY, lambda: delivery_row(a_delivery("wd_1"))),
    ("_RECORD_RETRY", _sql_work._RECORD_RETRY, lambda: work_row(an_item("w_9"))),
    ("_COMPLETE_HELD", _sql_work._COMPLETE_HELD, lambda: GUARD),
]  # fmt: skip


@pytest.mark.parametrize(("name", "hot", "params"), ONE_RUN, ids=[n for n, _, _ in ONE_RUN])
def test_a_hot_statement_returns_and_writes_what_sqlalchemy_does(
    both_ways: Callable[[Run], Any],
    name: str,
    hot: Hot,
    params: Callable[[], Mapping[str, Any]],
) -> None:
    ours = both_ways(_by_hot(hot, params()))
    theirs = both_ways(_by_sqlalchemy(hot, params()))

    assert ours == theirs
    returned, tables = ours
    assert returned not in (0, []), f"{name} found nothing to act on: the test data is wrong"
    assert tables != both_ways(lambda conn: None)[1] or getattr(
        hot.statement, "is_select", False
    ), f"{name} changed nothing"


def test_the_guards_locked_count_returns_what_sqlalchemy_does(
    both_ways: Callable[[Run], Any], filled: Database
) -> None:
    if filled.dialect != "postgresql":
        pytest.skip("um_recipient_recent is PostgreSQL's (SQLite runs _RECENT)")
    params = {"lock_class": 1, "lock_key": 2, **_RECENT}
    hot = _sql_guard._LOCK_AND_RECENT

    ours = both_ways(lambda conn: hot.scalars(conn, params))
    theirs = both_ways(lambda conn: list(conn.execute(hot.statement, params).scalars()))

    assert ours == theirs
    assert ours[0] == [T0.astimezone(ours[0][0].tzinfo)]


def _many_rows(database: Database) -> list[tuple[Hot, list[dict[str, Any]]]]:
    store = SqlStore(database.url)  # nothing connects: the two statements built per dialect
    return [
        (_sql_core._INSERT_MESSAGE, [message_row(a_full_message(f"job_{n}")) for n in (3, 4)]),
        (store._prebuilt("work"), [work_row(an_item(f"w_{n}")) for n in (1, 5, 6)]),
        (store._prebuilt("refs"), [provider_ref_row(a_ref(f"job_{n}", f"pm_{n}"))
                                     for n in (1, 2, 3)]),
        (_sql_core._UPDATE_MESSAGE, [_update_row(dataclasses.replace(a_full_message(j), text=j))
                                     for j in ("job_1", "job_2")]),
        (_sql_core._DELETE_ONE_WORK, [{"b_id": "w_1"}, {"b_id": "w_2"}, {"b_id": "w_x"}]),
        (_sql_core._CLOSE_REF, [{"b_connection_id": "conn_1", "b_message_id": m}
                                for m in ("pm_1", "pm_2")]),
    ]  # fmt: skip


@pytest.mark.parametrize(
    "n", range(6), ids=["insert_messages", "insert_work", "insert_refs", "update_messages",
                        "delete_work", "close_refs"],
)  # fmt: skip
def test_a_batch_writes_what_sqlalchemys_executemany_does(
    both_ways: Callable[[Run], Any], filled: Database, n: int
) -> None:
    hot, rows = _many_rows(filled)[n]

    ours = both_ways(lambda conn: hot.executemany(conn, rows))
    theirs = both_ways(lambda conn: conn.execute(hot.statement, rows) and None)

    assert ours == theirs


def test_writes_joined_in_one_statement_write_what_sqlalchemy_does(
    both_ways: Callable[[Run], Any], filled: Database
) -> None:
    # The joined writes run on one snapshot, so (as in the store) none touches a row that
    # another writes: the work insert's conflicting w_1 goes, w_1 is deleted by another.
    parts = _many_rows(filled)
    parts[1] = (parts[1][0], parts[1][1][1:])
    few = [(hot, rows[:1]) for hot, rows in parts]

    for chosen in (few, parts):  # one WITH of single rows; one WITH of array statements
        ours = both_ways(lambda conn, chosen=chosen: write_all(conn, chosen))

        def theirs_run(conn: sa.Connection, chosen: Any = chosen) -> None:
            for hot, rows in chosen:
                conn.execute(hot.statement, rows)

        assert ours == both_ways(theirs_run)


def test_the_compare_and_set_of_many_writes_what_sqlalchemy_does(
    both_ways: Callable[[Run], Any], filled: Database
) -> None:
    hot = _sql_core._REPLACE_MESSAGE
    rows = [
        {**_update_row(dataclasses.replace(a_full_message("job_1"), text="a")), "b_version": 7},
        {**_update_row(dataclasses.replace(a_bare_message("job_2"), text="b")), "b_version": 5},
    ]

    ours = both_ways(lambda conn: hot.compare_and_set_many(conn, rows, "job_id"))
    theirs = both_ways(lambda conn: conn.execute(hot.statement, rows) and None)

    if filled.dialect == "sqlite":
        assert ours[0] is None  # SQLite runs the rows one by one
        return
    assert ours[0] == {"job_1"}  # job_2 is at version 0, not 5
    assert ours[1] == theirs[1]


@pytest.mark.parametrize("held", [True, False], ids=["set_holds", "row_moved_on"])
def test_a_compare_and_set_with_its_writes_writes_what_sqlalchemy_does(
    both_ways: Callable[[Run], Any], filled: Database, held: bool
) -> None:
    # PostgreSQL runs it as one statement: the gated writes only where the set held.
    store = filled.store()
    stored = a_full_message("job_1")
    row = {
        **_update_row(dataclasses.replace(stored, text="changed")),
        "b_version": stored.version if held else stored.version + 1,
    }
    gated = [
        (store._prebuilt("work"), [work_row(an_item("w_7")), work_row(an_item("w_8"))]),
        (_sql_core._CLOSE_REF, [{"b_connection_id": "conn_1", "b_message_id": "pm_1"}]),
    ]
    always = [
        (store._prebuilt("refs"), [provider_ref_row(a_ref("job_1", "pm_9"))]),
        (_sql_core._DELETE_ONE_WORK, [{"b_id": "w_2"}]),
    ]
    cas = _sql_core._REPLACE_MESSAGE

    ours = both_ways(lambda conn: compare_and_write(conn, cas, row, gated=gated, always=always))

    def theirs_run(conn: sa.Connection) -> bool:
        updated = conn.execute(cas.statement, row).rowcount == 1
        for hot, rows in [*gated, *always] if updated else always:
            conn.execute(hot.statement, rows)
        return updated

    assert ours == both_ways(theirs_run)
    assert ours[0] is held
    if filled.dialect == "postgresql":  # and as one statement, not the two of SQLite's way
        dialect = create_async_engine(filled.url).dialect
        runs = [(hot, r, True) for hot, rows in gated for r in rows]
        runs += [(hot, r, False) for hot, rows in always for r in rows]
        assert _sql_hot._compare_and_combined(dialect, cas, row, runs) is not None


def test_postgresql_batches_run_over_arrays(filled: Database) -> None:
    """The batched forms exist for every statement a batch runs (else each row is its own
    statement, correct but slow): a SQLAlchemy release that compiled them otherwise shows
    here, not as a slower server."""
    if filled.dialect != "postgresql":
        pytest.skip("PostgreSQL only")
    dialect = create_async_engine(filled.url).dialect
    for hot, rows in _many_rows(filled):
        compiled = hot._for(dialect, rows[0])
        assert hot._arrays(dialect, rows[0], compiled) is not None, hot.statement
    cas = {**_update_row(a_full_message("job_1")), "b_version": 1}
    replace = _sql_core._REPLACE_MESSAGE
    compiled = replace._for(dialect, cas)
    assert replace._arrays(dialect, cas, compiled, locked="job_id") is not None


@pytest.mark.parametrize("url", ["sqlite://", "sqlite+aiosqlite://", "postgresql+asyncpg://u@h/d"])
def test_the_installed_dialects_compile_as_the_store_needs(url: str) -> None:
    check_dialect(_engine(url).dialect)


@pytest.mark.parametrize(
    ("url", "style"),
    [("postgresql+asyncpg://u@h/d", "format"), ("postgresql+asyncpg://u@h/d", "numeric"),
     ("sqlite://", "named")],
)  # fmt: skip
def test_a_dialect_compiling_other_placeholders_is_refused_by_name(url: str, style: str) -> None:
    with pytest.raises(UnsupportedDependency) as refused:
        check_dialect(_engine(url, paramstyle=style).dialect)

    assert refused.value.package == "sqlalchemy"
    assert f"paramstyle {style!r}" in refused.value.message
    assert sa.__version__ in refused.value.message


async def test_a_store_on_such_a_dialect_refuses_to_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # sqlite3 (its dbapi2 module) tells SQLAlchemy's pysqlite dialect its paramstyle.
    monkeypatch.setattr(sqlite3.dbapi2, "paramstyle", "named")
    store = SqlStore(f"sqlite:///{tmp_path / 'store.db'}")

    with pytest.raises(UnsupportedDependency, match="paramstyle 'named'"):
        await store.open()
    await store.close()
    assert not (tmp_path / "store.db").exists() or not _tables_in(tmp_path / "store.db")


def _tables_in(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]


def _engine(url: str, **options: Any) -> sa.Engine:
    """An engine (nothing connects) whose dialect is the installed SQLAlchemy's."""
    if "asyncpg" in url:
        return create_async_engine(url, **options).sync_engine
    return sa.create_engine(url, **options)
