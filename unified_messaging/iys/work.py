"""The İYS work items (D33): their kinds, and how each is made. Light on purpose: the
consents service imports it to queue a change's registration in the transaction that
records the change, and must not load the İYS client for that.

- ``iys_register``: one per recorded change, ``iysr_<change id>``, due at once. The worker
  registers the change with İYS (or the simulated İYS, for test consents), once.
- ``iys_bulk``: one per asynchronous bulk request İYS took, ``iysb_<request id>``: the
  worker asks for the request's results until every item of it is final.
- ``iys_pull``: one per İYS connection, ``iysp_<workspace id>``: pulls İYS's changes, then
  runs again one pull interval later, for as long as the workspace is connected.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final

from ..store.base import WorkItem

__all__ = [
    "WORK_BULK",
    "WORK_PULL",
    "WORK_REGISTER",
    "bulk_item",
    "pull_item",
    "registration_item",
]

WORK_REGISTER: Final = "iys_register"
WORK_BULK: Final = "iys_bulk"
WORK_PULL: Final = "iys_pull"


def registration_item(
    change_id: str, consent_id: str, workspace_id: str, *, livemode: bool, now: datetime
) -> WorkItem:
    """The registration of one recorded change: its id is the change's, so queueing it
    twice (a reconnect queues every pending change again) keeps one."""
    return WorkItem(
        id=f"iysr_{change_id}",
        kind=WORK_REGISTER,
        ref=change_id,
        due_at=now,
        created_at=now,
        payload={"workspace_id": workspace_id, "livemode": livemode, "consent_id": consent_id},
    )


def bulk_item(
    request_id: str, workspace_id: str, change_ids: Sequence[str], *, due_at: datetime,
    now: datetime,
) -> WorkItem:  # fmt: skip
    """The polling of one asynchronous bulk request İYS took, for ``change_ids``."""
    return WorkItem(
        id=f"iysb_{request_id}",
        kind=WORK_BULK,
        ref=request_id,
        due_at=due_at,
        created_at=now,
        payload={"workspace_id": workspace_id, "change_ids": list(change_ids)},
    )


def pull_item(workspace_id: str, *, now: datetime) -> WorkItem:
    """The pulling of İYS's changes for a connected workspace (one item per workspace)."""
    return WorkItem(
        id=f"iysp_{workspace_id}",
        kind=WORK_PULL,
        ref=workspace_id,
        due_at=now,
        created_at=now,
        payload={"workspace_id": workspace_id},
    )
