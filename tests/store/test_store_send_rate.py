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


async def test_connections_before_0009_get_their_providers_documented_limit(
    sql_database: Database,
) -> None:
    await migrate(sql_database.url, revision="0008", connect_args=sql_database.connect_args)
    engine = create_async_engine(sql_database.url, connect_args=sql_database.connect_args)
    try:
        async with engine.begin() as conn:
            await conn.execute(sa.insert(workspaces).values(workspace_row(
                Workspace("ws_1", "one", START))))  # fmt: skip
            for index, provider in enumerate(("sms_a", "sms_c", "chatbot", "bizchat")):
                row = connection_row(Connection(f"conn_{index}", "ws_1", provider, START, "x"))
                del row["max_rate"], row["max_calls"]  # not there at 0008
                await conn.execute(sa.insert(connections).values(row))
    finally:
        await engine.dispose()

    await migrate(sql_database.url, connect_args=sql_database.connect_args)

    store = sql_database.store()
    await store.open()
    try:
        found = await store.list_connections("ws_1")
        rates = {c.provider: (c.max_rate, c.max_calls) for c in found}
    finally:
        await store.close()
    assert rates == {
        "sms_a": (None, None),
        "sms_c": (None, 2.5),
        "chatbot": (30, None),
        "bizchat": (80, None),
    }
