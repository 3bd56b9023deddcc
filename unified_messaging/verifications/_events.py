"""Verify's webhook events (D34): ``verification.approved``, ``.failed`` and ``.expired``.

An event is the lifecycle's own ``event`` work item (its handler queues one delivery per
subscribed endpoint), with the verification as it is then as ``data`` (``VerificationOut``:
never the code). ``expired`` needs a clock, not a request: a verification started in a
workspace with endpoints queues an expiry item due at its ``expires_at``, which the worker
runs (:meth:`Verifications.handle_expiry`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Final

from ..store.base import WorkItem

if TYPE_CHECKING:
    from .._lifecycle.rules import EventType
    from ..store.base import JsonValue
    from ._records import Verification, VerificationStatus

__all__ = ["EVENT_OF", "WORK_EXPIRY", "event_item", "expiry_item"]

#: The work-item kind of a verification's expiry check.
WORK_EXPIRY: Final = "verification_expiry"
#: The lifecycle's event kind (``_lifecycle.runtime.WORK_EVENT``), spelled here so the
#: verifications import nothing of the lifecycle's runtime.
_WORK_EVENT: Final = "event"

EVENT_OF: Final[Mapping[VerificationStatus, EventType]] = {
    "approved": "verification.approved",
    "failed": "verification.failed",
    "expired": "verification.expired",
}


def event_item(
    verification: Verification, data: Mapping[str, JsonValue], now: datetime
) -> WorkItem | None:
    """The event of ``verification``'s status, or ``None`` for a status without one. Its id
    is the event's webhook id: one per verification and status, so a repeat is one event."""
    event = EVENT_OF.get(verification.status)
    if event is None:
        return None
    return WorkItem(
        id=f"evt_{verification.id}_{verification.status}",
        kind=_WORK_EVENT,
        ref=verification.id,
        due_at=now,
        created_at=now,
        payload={"workspace_id": verification.workspace_id, "event": event, "record": dict(data)},
    )


def expiry_item(verification: Verification, now: datetime) -> WorkItem:
    return WorkItem(
        id=f"vex_{verification.id}",
        kind=WORK_EXPIRY,
        ref=verification.id,
        due_at=verification.expires_at,
        created_at=now,
        payload={"workspace_id": verification.workspace_id, "livemode": verification.livemode},
    )
