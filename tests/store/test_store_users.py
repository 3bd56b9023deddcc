"""The users and sessions part of the ``Store`` contract (D31), on every backend."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from _databases import Database

from unified_messaging._domain import Workspace
from unified_messaging._errors import AlreadyExists, ResourceNotFound
from unified_messaging.store.base import Store
from unified_messaging.users._store import DashboardSession, User

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def a_user(user_id: str = "usr_1", email: str = "ops@example.com", **changes: object) -> User:
    user = User(id=user_id, email=email, password_hash="$argon2id$x", role="operator",
                created_at=T0)  # fmt: skip
    return replace(user, **changes)  # type: ignore[arg-type]


def a_session(id_hash: str = "h1", user_id: str = "usr_1") -> DashboardSession:
    return DashboardSession(id_hash=id_hash, user_id=user_id, created_at=T0,
                            last_seen_at=T0, csrf_token="csrf")  # fmt: skip


async def test_a_user_reads_back_by_id_and_email(store: Store) -> None:
    await store.add_user(a_user())
    assert await store.get_user("usr_1") == a_user()
    assert await store.find_user("ops@example.com") == a_user()
    assert await store.find_user("other@example.com") is None


async def test_an_email_is_taken_once(store: Store) -> None:
    await store.add_user(a_user())
    with pytest.raises(AlreadyExists):
        await store.add_user(a_user("usr_2"))


async def test_a_member_needs_its_workspace(store: Store) -> None:
    with pytest.raises(ResourceNotFound):
        await store.add_user(a_user(role="member", workspace_id="ws_nope"))
    await store.create_workspace(Workspace(id="ws_1", name="Acme", created_at=T0))
    await store.add_user(a_user(role="member", workspace_id="ws_1"))
    assert [u.workspace_id for u in await store.list_users()] == ["ws_1"]


def test_an_operator_of_one_workspace_cannot_be_made() -> None:
    with pytest.raises(ValueError, match="exactly one workspace"):
        a_user(workspace_id="ws_1")
    with pytest.raises(ValueError, match="exactly one workspace"):
        a_user(role="member")


async def test_users_list_oldest_first_and_update(store: Store) -> None:
    await store.add_user(a_user("usr_2", "b@example.com", created_at=T0 + timedelta(1)))
    await store.add_user(a_user("usr_1", "a@example.com"))
    disabled = a_user("usr_1", "a@example.com", disabled_at=T0)
    await store.update_user(disabled)
    assert [u.id for u in await store.list_users()] == ["usr_1", "usr_2"]
    assert await store.get_user("usr_1") == disabled


async def test_sessions_are_stored_changed_and_ended(store: Store) -> None:
    await store.add_user(a_user())
    await store.add_session(a_session("h1"))
    await store.add_session(replace(a_session("h2"), kind="link"))
    moved = replace(a_session("h1"), last_seen_at=T0 + timedelta(hours=1), livemode=True,
                    workspace_id="ws_9")  # fmt: skip
    await store.update_session(moved)
    assert await store.get_session("h1") == moved
    assert await store.delete_session("h1") is True
    assert await store.delete_session("h1") is False
    assert await store.get_session("h1") is None
    await store.update_session(moved)  # gone stays gone
    assert await store.get_session("h1") is None


async def test_ending_a_users_sessions_ends_only_theirs(store: Store) -> None:
    await store.add_user(a_user())
    await store.add_user(a_user("usr_2", "b@example.com"))
    await store.add_session(a_session("h1"))
    await store.add_session(a_session("h2"))
    await store.add_session(a_session("h3", user_id="usr_2"))
    assert await store.delete_user_sessions("usr_1") == 2
    assert await store.get_session("h3") is not None


async def test_login_attempts_are_claimed_until_a_key_is_full(store: Store) -> None:
    t, window = T0, timedelta(minutes=15)
    limits = [("pair", 2), ("client", 3)]
    assert await store.claim_login_attempt(limits, t, since=t - window) is None
    second = t + timedelta(minutes=5)
    assert await store.claim_login_attempt(limits, second, since=second - window) is None
    # "pair" holds its 2: refused, and nothing is recorded under either key.
    third = t + timedelta(minutes=6)
    assert await store.claim_login_attempt(limits, third, since=third - window) == t
    assert await store.claim_login_attempt([("client", 3)], third, since=third - window) is None
    assert await store.claim_login_attempt([("client", 3)], third, since=third - window) == t
    # The first attempt leaves the window: one more fits under "pair"; "client" frees only
    # when its second oldest (the one at +5 minutes) leaves too.
    later = t + timedelta(minutes=16)
    assert await store.claim_login_attempt([("pair", 2)], later, since=later - window) is None
    assert await store.claim_login_attempt(limits, later, since=later - window) == second
    await store.clear_login_failures("pair", "client")
    assert await store.claim_login_attempt(limits, later, since=later - window) is None


async def test_racing_login_attempts_never_pass_a_limit(store: Store) -> None:
    """D31: the count and the insert are one step, so 20 attempts at once record 5."""
    t = T0
    limits = [("pair", 5), ("client", 30)]
    claims = [
        store.claim_login_attempt(limits, t, since=t - timedelta(minutes=15)) for _ in range(20)
    ]
    results = await asyncio.gather(*claims)
    assert results.count(None) == 5
    assert set(results) == {None, t}


async def test_sessions_past_their_lifetimes_are_purged(store: Store) -> None:
    await store.add_user(a_user())
    idle = replace(a_session("idle"), last_seen_at=T0 - timedelta(hours=13))
    old = replace(a_session("old"), created_at=T0 - timedelta(days=8))
    await store.add_session(idle)
    await store.add_session(old)
    await store.add_session(a_session("live"))
    purged = await store.purge_sessions(seen_before=T0 - timedelta(hours=12),
                                        created_before=T0 - timedelta(days=7))  # fmt: skip
    assert purged == 2
    assert await store.get_session("live") is not None
    assert await store.get_session("idle") is None and await store.get_session("old") is None


# ----------------------------------------------------------------- one-time notices (D31)


async def test_a_notice_is_taken_once_oldest_first_by_its_session_only(store: Store) -> None:
    await store.add_user(a_user())
    await store.add_session(a_session("h1"))
    await store.add_session(a_session("h2"))
    await store.add_notice("ntc_2", "h1", T0 + timedelta(seconds=1), "sealed-2")
    await store.add_notice("ntc_1", "h1", T0, "sealed-1")

    assert await store.take_notices("h2") == []
    assert await store.take_notices("h1") == [
        (T0, "sealed-1"),
        (T0 + timedelta(seconds=1), "sealed-2"),
    ]
    assert await store.take_notices("h1") == []


async def test_two_takers_at_once_share_nothing(store: Store) -> None:
    await store.add_user(a_user())
    await store.add_session(a_session("h1"))
    await store.add_notice("ntc_1", "h1", T0, "sealed")

    first, second = await asyncio.gather(store.take_notices("h1"), store.take_notices("h1"))

    assert sorted([first, second]) == [[], [(T0, "sealed")]]


async def test_notices_go_with_their_session(store: Store) -> None:
    await store.add_user(a_user())
    for id_hash in ("h1", "h2", "h3"):
        await store.add_session(a_session(id_hash))
        await store.add_notice(f"ntc_{id_hash}", id_hash, T0, "sealed")
    await store.delete_session("h1")
    await store.delete_user_sessions("usr_1")
    await store.add_session(a_session("h1"))  # the same id again: nothing of the old is left

    assert [await store.take_notices(h) for h in ("h1", "h2", "h3")] == [[], [], []]
    with pytest.raises(ResourceNotFound):
        await store.add_notice("ntc_x", "h-gone", T0, "sealed")


async def test_racing_processes_never_pass_a_login_limit(
    migrated_postgres_schema: Database | None,
) -> None:
    """Four stores on one PostgreSQL database stand for four ``serve`` processes: each runs
    its own transactions, and still only 5 of their 20 racing attempts are recorded."""
    if migrated_postgres_schema is None:
        pytest.skip("PostgreSQL tests need a server: set UM_TEST_POSTGRES_URL")
    stores = [migrated_postgres_schema.store(migrate=False) for _ in range(4)]
    key = f"race-{uuid.uuid4().hex}"
    try:
        for each in stores:
            await each.open()
        t = T0
        claims = [
            each.claim_login_attempt([(key, 5)], t, since=t - timedelta(minutes=15))
            for _ in range(5)
            for each in stores
        ]
        results = await asyncio.gather(*claims)
    finally:
        for each in stores:
            await each.close()
    assert results.count(None) == 5
