"""``messenger.messages``: what the edges read about messages beside SPEC's operations on the
façade itself (``send``, ``get_message``, ``list_messages``, ``cancel_message``): the status
record's JSON bytes for the REST fast path, the answer to a replayed send, and counts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from ._counts import MessageCounts
from ._domain import MessageRecord
from ._errors import IdempotencyInProgress, MessageNotFound, RequestInvalid
from ._lifecycle.rules import is_write_ahead
from ._models import BulkResponse, SendResponse
from ._responses import bulk_response, send_response, status_record_json
from ._text import storable
from .store.base import Store

if TYPE_CHECKING:
    from ._access.principal import Principal
    from .workspaces._service import Workspaces

__all__ = ["Messages", "read_message"]


async def read_message(store: Store, auth: Principal, job_id: str) -> MessageRecord:
    """The caller's message ``job_id``, else :class:`MessageNotFound` (D2: its own workspace
    and mode only)."""
    if not storable(job_id):
        raise MessageNotFound  # no job has an id the store could not have kept
    record = await store.get_message(auth.workspace_id, auth.livemode, job_id)
    if record is None:
        raise MessageNotFound
    return record


class Messages:
    """``messenger.messages.counts(workspace_id, since=...)`` and the REST edge's reads."""

    def __init__(self, store: Store, workspaces: Workspaces) -> None:
        self._store = store
        self._workspaces = workspaces

    def __repr__(self) -> str:
        return "<messenger.messages>"

    async def get_json(self, auth: Principal, job_id: str) -> bytes:
        """``messenger.get_message(auth, job_id).to_json()``, the same bytes, built from the
        stored record without the :class:`StatusRecord` model: the REST answer to every
        status poll. The same errors, in the same order."""
        record = await read_message(self._store, auth, job_id)
        return status_record_json(record, mask_live_text=auth.workspace.mask_live_text)

    async def current_answer(
        self, auth: Principal, job_ids: Sequence[str], *, bulk: bool
    ) -> SendResponse | BulkResponse:
        """The answer to a send whose ``Idempotency-Key`` is bound to ``job_ids`` but whose
        own answer was never stored (its process died, D22): the jobs as they are now.

        :class:`IdempotencyInProgress` while a job is still as its send wrote it ahead of the
        provider call: that send is running, or its check has yet to settle it.
        """
        records = []
        for job_id in job_ids:
            record = await self._store.get_message(auth.workspace_id, auth.livemode, job_id)
            if record is None:
                raise MessageNotFound
            if is_write_ahead(record):
                raise IdempotencyInProgress
            records.append(record)
        if not bulk:
            return send_response(records[0])
        return bulk_response(records, records[0].provider)

    async def counts(
        self, workspace_id: str, *, since: datetime, livemode: bool = True
    ) -> MessageCounts:
        """The workspace's messages of one mode created at or after ``since``, counted by
        their status now and by provider (the dashboard's overview; see MessageCounts)."""
        if since.utcoffset() is None:
            raise RequestInvalid.for_field("since", "needs a time zone")
        await self._workspaces.get(workspace_id)  # ResourceNotFound for an unknown one
        return MessageCounts.from_pairs(
            await self._store.count_messages(workspace_id, livemode, since)
        )
