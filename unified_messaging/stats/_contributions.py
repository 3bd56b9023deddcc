"""What a stored message or verification counts as: the Python twin of the SQL triggers.

The SQL store's triggers (migration 0027) count every write in the database; the memory
store counts with these functions; the store contract tests hold the two to the same
answers. A message counts as:

- one ``status`` key: its status, ``detail`` :data:`NOT_SENT` (no provider tried yet),
  :data:`ONE_PROVIDER`, or :data:`FELL_BACK` (its provider now is not its first one);
- one ``attempt`` key per attempt: the attempt's provider and state, ``detail`` the bits
  :data:`FOLLOWED` (another attempt came after it) and :data:`TAKEN` (the provider took it:
  it answered with its message id);
- a delivered one with both times, one ``latency`` key: the provider that delivered it,
  ``detail`` the bucket of ``final_at - sent_at`` (:func:`._buckets.latency_bucket`).

A verification counts as one ``verification`` key by its status. Each key is under the UTC
hour of the row's ``created_at``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ._buckets import hour_of, latency_bucket
from ._records import StatKey

if TYPE_CHECKING:
    from .._domain import MessageRecord
    from ..verifications._records import Verification

__all__ = [
    "FELL_BACK",
    "FOLLOWED",
    "NOT_SENT",
    "ONE_PROVIDER",
    "TAKEN",
    "message_keys",
    "verification_keys",
]

NOT_SENT: Final = 0
ONE_PROVIDER: Final = 1
FELL_BACK: Final = 2
FOLLOWED: Final = 1
TAKEN: Final = 2


def message_keys(record: MessageRecord) -> list[StatKey]:
    """Everything ``record`` counts as (see the module's docstring)."""
    hour = hour_of(record.created_at)
    attempts = record.attempts
    if not attempts:
        sent = NOT_SENT
    else:
        sent = ONE_PROVIDER if attempts[0].provider == record.provider else FELL_BACK
    keys = [StatKey("status", hour, "", record.status, sent)]
    last = len(attempts) - 1
    for index, attempt in enumerate(attempts):
        detail = (FOLLOWED if index < last else 0) | (
            TAKEN if attempt.provider_message_id is not None else 0
        )
        keys.append(StatKey("attempt", hour, attempt.provider, attempt.status, detail))
    if record.status == "delivered" and record.sent_at is not None and record.final_at is not None:
        bucket = latency_bucket(record.sent_at, record.final_at)
        keys.append(StatKey("latency", hour, record.provider, "", bucket))
    return keys


def verification_keys(verification: Verification) -> list[StatKey]:
    """What ``verification`` counts as: its status, under the hour it started."""
    return [StatKey("verification", hour_of(verification.created_at), "", verification.status, 0)]
