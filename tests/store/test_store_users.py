"""The users and sessions part of the ``Store`` contract (D31), on every backend."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from unified_messaging._domain import Workspace
from unified_messaging._errors import AlreadyExists, ResourceNotFound
from unified_messaging.store.base import Store
from unified_messaging.store.users import DashboardSession, User

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


async def test_login_failures_slide_and_clear(store: Store) -> None:
    t = T0
    assert await store.add_login_failure("k", t, forget_before=t) == 1
    assert await store.add_login_failure("k", t + timedelta(minutes=5),
                                         forget_before=t) == 2  # fmt: skip
    assert await store.add_login_failure("other", t, forget_before=t) == 1
    # Forgetting what fell out of the window keeps the count to the window.
    later = t + timedelta(minutes=16)
    assert (
        await store.add_login_failure("k", later, forget_before=later - timedelta(minutes=15)) == 2
    )
    assert await store.login_failures("k", later - timedelta(minutes=15)) == [
        t + timedelta(minutes=5), later]  # fmt: skip
    await store.clear_login_failures("k")
    assert await store.login_failures("k", t) == []
    assert await store.login_failures("other", t) == [t]


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
