"""D17, the monthly quota of live sends: who pays, in which month, and when a unit comes back.

The whole rule is here; the store only adds up and compares what it is handed, in the same
transaction as the rows it writes (so processes sharing a store cannot overdraw a quota):

- test mode is free; a live message takes one unit of its workspace's month (UTC, by the
  message's creation) in the write-ahead transaction that stores it (:func:`charge`);
- after the providers have answered it keeps the unit if one accepted it, or it waits for a
  D7 retry or its D27 send slot (:func:`keeps_unit`); the other units come back in the
  transaction that stores the outcome (:func:`charge` again, as the release);
- a message that waited and was given up at last, no provider having taken it, gives its
  unit back then (:func:`release_unit`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from .store.base import QuotaCharge

if TYPE_CHECKING:
    from ._domain import MessageRecord
    from ._routing.dispatch import Job
    from .store.base import Store

__all__ = ["charge", "keeps_unit", "quota_period", "release_unit"]


def quota_period(moment: datetime) -> str:
    """The calendar month (UTC) a quota unit counts in: ``"2026-11"``."""
    return moment.strftime("%Y-%m")


def charge(
    workspace_id: str,
    livemode: bool,
    records: Sequence[MessageRecord],
    units: int,
    *,
    limit: int | None = None,
) -> QuotaCharge | None:
    """``units`` of the month of ``records`` (one request's messages, made together), to take
    (``limit``: refused past it) or to give back; ``None`` when there is nothing to count."""
    if not livemode or units == 0 or not records:
        return None
    return QuotaCharge(workspace_id, quota_period(records[0].created_at), units, limit)


def keeps_unit(job: Job, *, queue: bool) -> bool:
    """Whether a message keeps its unit after its submit: a provider accepted it, or it is
    queued for D7 retries (``queue``: the workspace retries an unreachable chain) or for its
    D27 send slot."""
    return job.accepted or job.paced or (queue and job.all_unavailable)


async def release_unit(store: Store, record: MessageRecord) -> None:
    """Give back the unit of a message no provider took (after it was kept for a retry)."""
    if record.livemode:
        await store.release_quota(record.workspace_id, quota_period(record.created_at), 1)
