"""Provider accounts in the store (memory, SQLite, PostgreSQL): one row per connection, a
reading keeps the threshold, ``low`` flips only by a conditional write, and a removed
connection's account is gone with it."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from unified_messaging._domain import Connection, Workspace
from unified_messaging.accounts.records import ProviderAccount
from unified_messaging.store.base import Store

START = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
_CHARS = st.characters(blacklist_categories=("Cs", "Cc"))


async def _two_connections(store: Store) -> None:
    await store.create_workspace(Workspace("ws_1", "one", START))
    await store.create_workspace(Workspace("ws_2", "two", START))
    await store.add_connection(Connection("conn_a", "ws_1", "sms_a", START, "x", is_default=True))
    await store.add_connection(Connection("conn_b", "ws_2", "sms_c", START, "x", is_default=True))


def _reading(connection_id: str = "conn_a", workspace_id: str = "ws_1") -> ProviderAccount:
    return ProviderAccount(
        connection_id, workspace_id, "sms_a", state="read", balance=Decimal("57.860"),
        unit="TRY", senders=("ACME", '<b>"x"</b>', "Şirket"), read_at=START, tried_at=START,
    )  # fmt: skip


async def test_a_reading_round_trips_exactly(store: Store) -> None:
    await _two_connections(store)
    assert await store.get_account("conn_a") is None
    await store.save_account_reading(_reading())
    assert await store.get_account("conn_a") == _reading()


async def test_a_reading_keeps_the_threshold_and_low(store: Store) -> None:
    await _two_connections(store)
    await store.set_account_threshold("conn_a", "ws_1", "sms_a", Decimal("100"))
    assert await store.swap_account_low("conn_a", True)
    await store.save_account_reading(_reading())
    stored = await store.get_account("conn_a")
    assert stored is not None
    assert (stored.threshold, stored.low, stored.balance) == (
        Decimal("100"),
        True,
        Decimal("57.860"),
    )
    await store.set_account_threshold("conn_a", "ws_1", "sms_a", None)
    stored = await store.get_account("conn_a")
    assert stored is not None and stored.threshold is None and stored.senders == _reading().senders


async def test_low_flips_once_for_racing_writers(store: Store) -> None:
    await _two_connections(store)
    await store.save_account_reading(_reading())
    results = await asyncio.gather(*(store.swap_account_low("conn_a", True) for _ in range(5)))
    assert sorted(results) == [False, False, False, False, True]
    assert not await store.swap_account_low("conn_a", True)
    assert await store.swap_account_low("conn_a", False)
    assert not await store.swap_account_low("conn_missing", True)


async def test_list_is_by_workspace_and_forgets_removed_connections(store: Store) -> None:
    await _two_connections(store)
    await store.save_account_reading(_reading())
    await store.save_account_reading(replace(_reading("conn_b", "ws_2"), senders=None))
    assert [a.connection_id for a in await store.list_accounts()] == ["conn_a", "conn_b"]
    assert [a.connection_id for a in await store.list_accounts("ws_2")] == ["conn_b"]
    assert (await store.list_accounts("ws_2"))[0].senders is None
    assert await store.remove_connection("conn_a")
    assert await store.get_account("conn_a") is None
    assert [a.connection_id for a in await store.list_accounts()] == ["conn_b"]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    balance=st.decimals(min_value=-(10**9), max_value=10**9, places=6, allow_nan=False),
    senders=st.lists(st.text(_CHARS, min_size=1, max_size=20), max_size=5),
)
async def test_any_balance_and_sender_text_round_trip(
    store: Store, balance: Decimal, senders: list[str]
) -> None:
    if await store.get_workspace("ws_1") is None:
        await _two_connections(store)
    reading = replace(_reading(), balance=balance, senders=tuple(senders))
    await store.save_account_reading(reading)
    stored = await store.get_account("conn_a")
    assert stored is not None
    assert (stored.balance, stored.senders) == (balance, tuple(senders))
