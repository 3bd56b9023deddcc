"""The audit log's records (D32): :class:`AuditEvent`, :class:`AuditPage`, and reading a page.

What is recorded, and how, is in ``_audit_actions`` (the action names, the one writer); the
store keeps the rows (``Store.append_audit_event``, ``Store.list_audit_events``) and offers
no way to change or delete one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final, Protocol

from pydantic import BaseModel, ConfigDict, Field

from .._errors import RequestInvalid, ResourceNotFound
from .._models import _Response
from .._text import storable
from ._names import AUDIT_ACTIONS, AuditAction

__all__ = [
    "AUDIT_ACTIONS",
    "DEFAULT_AUDIT_LIMIT",
    "MAX_AUDIT_LIMIT",
    "AuditAction",
    "AuditEvent",
    "AuditPage",
    "AuditQuery",
    "audit_page",
]

DEFAULT_AUDIT_LIMIT: Final = 50
MAX_AUDIT_LIMIT: Final = 100


class AuditEvent(BaseModel):
    """One change, as the audit log keeps it (D32). Never holds a secret."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(description="The event's id (the cursor of the next page).")
    at: datetime = Field(description="When the change was made (UTC).")
    actor: str = Field(description="Who made it: library, cli, or dashboard:<e-mail>.")
    workspace_id: str | None = Field(description="The workspace changed (none: all of them).")
    action: AuditAction = Field(description="What was done, e.g. api_key.create.")
    target: str = Field(description="The id or key the change is about.")
    client_address: str | None = Field(description="The actor's address, when an edge knew it.")


class AuditPage(_Response):
    """A page of the audit log, newest first, and whether more follow."""

    _omit_none = False

    data: list[AuditEvent] = Field(description="Events, newest first.")
    has_more: bool = Field(
        description="Whether a next page exists: ask again with starting_after the last id."
    )


# ----------------------------------------------------------------------------- reading


@dataclass(frozen=True, slots=True)
class AuditQuery:
    """Which events to list, newest first (``at`` descending, ties by ``id`` descending).

    Every filter given must hold. ``occurred_after`` is inclusive, ``occurred_before``
    exclusive. ``starting_after`` is an event id from an earlier page: only events that sort
    after it (the store raises ``ResourceNotFound`` for an id it does not have).
    """

    workspace_id: str | None = None
    action: str | None = None
    actor: str | None = None
    occurred_after: datetime | None = None
    occurred_before: datetime | None = None
    starting_after: str | None = None
    limit: int = 50


class AuditLog(Protocol):
    """Protocol: what reading a page needs of a store (``Store.list_audit_events``); named
    here so the records never import the store, which imports them."""

    async def list_audit_events(self, query: AuditQuery) -> list[AuditEvent]: ...


async def audit_page(
    store: AuditLog,
    *,
    workspace_id: str | None = None,
    action: str | None = None,
    actor: str | None = None,
    occurred_after: datetime | None = None,
    occurred_before: datetime | None = None,
    limit: int = DEFAULT_AUDIT_LIMIT,
    starting_after: str | None = None,
) -> AuditPage:
    """One page of the audit log, newest first (``Messenger.list_audit_events``).

    ``action`` must be one of :data:`AUDIT_ACTIONS` and ``limit`` 1-100, else
    :class:`RequestInvalid` naming it; times need a time zone. ``starting_after`` is the
    last id of the previous page; an id the log does not have is :class:`ResourceNotFound`.
    """
    if action is not None and action not in AUDIT_ACTIONS:
        known = ", ".join(AUDIT_ACTIONS)
        raise RequestInvalid.for_field("action", f"unknown action; one of {known}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_AUDIT_LIMIT:
        raise RequestInvalid.for_field("limit", f"must be a whole number 1-{MAX_AUDIT_LIMIT}")
    for name, moment in (("occurred_after", occurred_after), ("occurred_before", occurred_before)):
        if moment is not None and moment.utcoffset() is None:
            raise RequestInvalid.for_field(name, "needs a time zone")
    if starting_after is not None and not storable(starting_after):
        raise ResourceNotFound(f"starting_after: no audit event {starting_after[:64]!r}.")
    texts = (workspace_id, actor)
    if any(text is not None and not storable(text) for text in texts):
        # No row can hold it (every stored text is storable): nothing matches.
        return AuditPage(data=[], has_more=False)
    query = AuditQuery(
        workspace_id=workspace_id,
        action=action,
        actor=actor,
        occurred_after=occurred_after,
        occurred_before=occurred_before,
        starting_after=starting_after,
        # One more than asked: whether it comes back says whether a next page exists.
        limit=limit + 1,
    )
    found = await store.list_audit_events(query)
    return AuditPage(data=found[:limit], has_more=len(found) > limit)
