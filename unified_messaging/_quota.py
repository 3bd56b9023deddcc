"""D17, the monthly quota of live sends: who pays, in which month, and when a unit comes back.

The whole rule is here; the store only adds up and compares what it is handed, in the same
transaction as the rows it writes (so processes sharing a store cannot overdraw a quota):

- test mode is free; a live message takes one unit of its workspace's month (UTC, by the
  message's creation) in the write-ahead transaction that stores it (:func:`charge`);
- a message that waits for its ``send_at`` or quiet hours (phase ``scheduled``) takes its
  unit when the worker hands it over, from the month it was due in (:func:`period_of`);
  one canceled, or refused for quota at its hand-over, never took one;
- after the providers have answered, a message that ended ``failed`` gives its unit back in
  the transaction that stores the outcome (:func:`units_to_release`, :func:`charge` again);
  one that a provider accepted, or that waits for a D7 retry or its D27 send slot, keeps it;
- a message that waited and was given up at last gives its unit back then
  (:func:`release_unit`);
- but never a message a provider took at some point (:func:`provider_took`): a fallback
  that fails after a provider accepted it (and reported it failed) was handed over, and a
  handed-over message costs its unit whatever became of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from .store.base import QuotaCharge

if TYPE_CHECKING:
    from ._domain import MessageRecord
    from .store.base import Store

__all__ = [
    "charge",
    "gives_unit_back",
    "period_of",
    "provider_took",
    "quota_period",
    "release_unit",
    "units_to_release",
]


def quota_period(moment: datetime) -> str:
    """The calendar month (UTC) a quota unit counts in: ``"2026-11"``."""
    return moment.strftime("%Y-%m")


def period_of(record: MessageRecord) -> str:
    """The month ``record``'s unit counts in: the month it is handed over in, i.e. its
    ``send_at`` for a send that waited, else its creation."""
    return quota_period(record.send_at or record.created_at)


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
    return QuotaCharge(workspace_id, period_of(records[0]), units, limit)


def provider_took(record: MessageRecord) -> bool:
    """Whether a provider ever accepted ``record``: one of its attempts carries the
    provider's message id, which only an acceptance gives (a later report may have
    ended that attempt ``failed``; it was handed over all the same)."""
    return any(attempt.provider_message_id is not None for attempt in record.attempts)


def gives_unit_back(record: MessageRecord) -> bool:
    """D17: a message's unit comes back when it ended ``failed`` and no provider ever took
    it. The one place of the rule, for the submit and for every re-send by the worker.
    A message still in the phase ``scheduled`` never took a unit (it ended before its
    hand-over: canceled, or refused for quota), so it has none to give back."""
    return record.status == "failed" and not provider_took(record) and record.phase != "scheduled"


def units_to_release(records: Sequence[MessageRecord]) -> int:
    """How many of the units taken for ``records`` come back once the providers have
    answered (:func:`gives_unit_back`). Every other outcome keeps its unit: a provider
    accepted it, or it waits for its D27 send slot or D7's retries
    (:func:`~unified_messaging._lifecycle.rules.after_routing` decides which)."""
    return sum(1 for record in records if gives_unit_back(record))


async def release_unit(store: Store, record: MessageRecord) -> None:
    """Give back the unit of a message a worker re-send ended, if :func:`gives_unit_back`."""
    if record.livemode and gives_unit_back(record):
        await store.release_quota(record.workspace_id, period_of(record), 1)
