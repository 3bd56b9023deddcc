"""``Store.count_messages``: a workspace's messages of one mode since a moment, by status (the
dashboard's overview), the same on every backend."""

from __future__ import annotations

from test_store_search import a_message, at, with_workspaces

from unified_messaging.store.base import Store


async def test_counts_by_status_within_the_workspace_mode_and_window(store: Store) -> None:
    await with_workspaces(store, "ws_1", "ws_2")
    await store.insert_messages(
        [
            a_message("m1", status="delivered", created_at=at(10)),
            a_message("m2", status="delivered", created_at=at(20), provider="sms_b"),
            a_message("m3", status="failed", created_at=at(30)),
            a_message("m4", status="sent", created_at=at(0)),  # at ``since``: counted
            a_message("m5", status="sent", created_at=at(-1)),  # before it: not
            a_message("m6", status="delivered", created_at=at(10), livemode=False),
            a_message("m7", status="delivered", created_at=at(10), workspace_id="ws_2"),
        ]
    )
    counts = await store.count_messages("ws_1", True, at(0))
    assert counts == {("sms_a", "delivered"): 1, ("sms_b", "delivered"): 1,
                      ("sms_a", "failed"): 1, ("sms_a", "sent"): 1}  # fmt: skip
    assert await store.count_messages("ws_1", False, at(0)) == {("sms_a", "delivered"): 1}
    assert await store.count_messages("ws_3", True, at(0)) == {}
