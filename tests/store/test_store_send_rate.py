"""A connection's send rate (D27) in the store: kept with the connection on every backend, and
given to the connections that existed before revision 0009 by their provider's documented
limit."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import create_async_engine

from unified_messaging._domain import Connection, Workspace
from unified_messaging.store._sql_rows import connection_row, workspace_row
from unified_messaging.store._tables import connections, workspaces
from unified_messaging.store.base import Store
from unified_messaging.store.sql import migrate

if TYPE_CHECKING:
    from _databases import Database

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


async def test_a_connections_rates_are_stored_with_it(store: Store) -> None:
    await store.create_workspace(Workspace("ws_1", "one", START))
    limited = Connection("conn_1", "ws_1", "sms_c", START, "x", is_default=True, max_rate=12.5,
                         max_calls=2.5)  # fmt: skip
    free = Connection("conn_2", "ws_1", "sms_a", START, "x")
    await store.add_connection(limited)
    await store.add_connection(free)

    assert await store.get_connection("conn_1") == limited
    assert await store.get_connection("conn_2") == free
    await store.update_connection(replace(limited, max_rate=None, max_calls=0.001))
    found = await store.get_connection("conn_1")
    assert found is not None and (found.max_rate, found.max_calls) == (None, 0.001)


def _old_workspace_row(workspace: Workspace) -> dict[str, object]:
    row = dict(workspace_row(workspace))
    del row["quiet_hours"]  # not there before 0015
    del row["consent_policy"]  # not there before 0020
    del row["content_rules"]  # not there before 0023
    del row["mask_live_text"]  # not there before 0026
    return row


async def test_connections_before_0009_get_their_providers_documented_limit(
    sql_database: Database,
) -> None:
    await migrate(sql_database.url, revision="0008", connect_args=sql_database.connect_args)
    engine = create_async_engine(sql_database.url, connect_args=sql_database.connect_args)
    try:
        async with engine.begin() as conn:
            await conn.execute(sa.insert(workspaces).values(_old_workspace_row(
                Workspace("ws_1", "one", START))))  # fmt: skip
            for index, provider in enumerate(("sms_a", "sms_c", "chatbot", "bizchat")):
                row = connection_row(Connection(f"conn_{index}", "ws_1", provider, START, "x"))
                del row["max_rate"], row["max_calls"]  # not there at 0008
                await conn.execute(sa.insert(connections).values(row))
    finally:
        await engine.dispose()

    await migrate(sql_database.url, revision="0009", connect_args=sql_database.connect_args)

    rates = {provider: rate for (_, provider), rate in (await _rates(sql_database)).items()}
    assert rates == {
        "sms_a": (None, None),
        "sms_c": (None, 2.5),
        "chatbot": (30, None),
        "bizchat": (80, None),
    }


async def test_0010_moves_only_the_rates_still_at_their_former_default(
    sql_database: Database,
) -> None:
    await migrate(sql_database.url, revision="0009", connect_args=sql_database.connect_args)
    before = {
        "conn_c_old": ("sms_c", None, 2.5),  # 0009's Verimor default
        "conn_c_set": ("sms_c", None, 10.0),
        "conn_c_off": ("sms_c", None, None),
        "conn_b_old": ("sms_b", None, None),  # İletimerkezi had none
        "conn_b_set": ("sms_b", 50.0, None),
        "conn_a": ("sms_a", None, None),
    }
    engine = create_async_engine(sql_database.url, connect_args=sql_database.connect_args)
    try:
        async with engine.begin() as conn:
            for id_, (provider, rate, calls) in before.items():  # one provider a workspace
                await conn.execute(sa.insert(workspaces).values(_old_workspace_row(
                    Workspace(f"ws_{id_}", "one", START))))  # fmt: skip
                connection = Connection(id_, f"ws_{id_}", provider, START, "x", max_rate=rate,
                                        max_calls=calls)  # fmt: skip
                await conn.execute(sa.insert(connections).values(connection_row(connection)))
    finally:
        await engine.dispose()

    await migrate(sql_database.url, connect_args=sql_database.connect_args)

    assert {id_: rate for (id_, _), rate in (await _rates(sql_database)).items()} == {
        "conn_c_old": (None, 4),
        "conn_c_set": (None, 10),
        "conn_c_off": (None, None),
        "conn_b_old": (100, None),
        "conn_b_set": (50, None),
        "conn_a": (None, None),
    }


async def _rates(database: Database) -> dict[tuple[str, str], tuple[float | None, float | None]]:
    """Each connection's rates as the rows hold them (a store would migrate to head first)."""
    engine = create_async_engine(database.url, connect_args=database.connect_args)
    c = connections.c
    try:
        async with engine.connect() as conn:
            rows = await conn.execute(sa.select(c.id, c.provider, c.max_rate, c.max_calls))
            return {(r.id, r.provider): (r.max_rate, r.max_calls) for r in rows}
    finally:
        await engine.dispose()
