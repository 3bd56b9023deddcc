"""A synchronous host's changes are recorded under the actor it set (D32).

``SyncMessenger`` runs every call on a loop thread of its own, whose context is not the
caller's: the actor set with ``acting_as`` in the calling thread must still reach the row.
"""

from __future__ import annotations

from unified_messaging import Actor, ManualClock, Messenger, SyncMessenger, acting_as


def test_the_callers_actor_reaches_the_row_across_the_loop_thread() -> None:
    with SyncMessenger(Messenger(clock=ManualClock())) as sync:
        with acting_as(Actor("dashboard:ops@example.com", "192.0.2.4")):
            workspace = sync.workspaces.create("Acme")
        sync.workspaces.set_monthly_quota(workspace.id, 5)
        page = sync.audit.list(workspace_id=workspace.id)

    assert [(e.action, e.actor, e.client_address) for e in page.data] == [
        ("workspace.quota", "library", None),
        ("workspace.create", "dashboard:ops@example.com", "192.0.2.4"),
    ]
