"""The per-recipient flood guard (D28): at most N messages to one recipient per window.

Why: OTP pumping (a bot asks a login form for codes to premium numbers it is paid for) and
runaway loops (a retry loop, a webhook that triggers itself) both look like many messages to
one number in a short time, and both cost real money per message. The guard refuses the
message past the workspace's limit with 429 ``RECIPIENT_RATE_LIMITED`` and ``Retry-After``.

What counts: every message the workspace stored for the recipient, in the same mode (live
and test are counted apart: test traffic never reaches a phone), created in the last
``window``, that was handed to a provider or queued for one, whatever became of it (sent,
failed, queued): a message handed to a provider costs money whether or not it arrives.
Fallback hops and worker retries are one message. A message refused before any provider
(a bulk item's own validation, or the guard itself) does not count: its stored phase is
``refused`` (:func:`counts_toward_limit`, the one rule; the SQL count reads the same
stored phase). Else a bulk of invalid items would be refused whole, a number typed wrong
ten times would be blocked for the window, and a flood would keep its own window shut.
The window slides: one more message fits when the oldest counted one is ``window`` old,
which is what ``Retry-After`` says.

Where it is counted: in the store, in the write-ahead transaction that stores the message
(``Store.accept_messages(recipient_limit=...)``), from the stored messages themselves (an
index on workspace, mode, recipient and creation time). So the count holds across every
process and host sharing the store, a refused send stores nothing, and there is no slot to
give back when a send fails later. Each backend serializes the check per recipient (SQLite:
its write lock; PostgreSQL: a transaction-scoped advisory lock per recipient; memory: the
store's lock), so concurrent sends to one number never let more than the limit through.

This module is the rule itself, with no I/O: the limit, its text form (``10/1h``), and the
decision a backend makes from the recent messages it found.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Final

from .._errors import RecipientOverLimit, RecipientRateLimited, RequestInvalid
from .._policies import (
    DEFAULT_RECIPIENT_LIMIT,
    MAX_LIMIT,
    MAX_WINDOW,
    MIN_WINDOW,
    RecipientLimit,
)
from .._policies import RECIPIENT_LIMIT_FIELD as _FIELD
from .._policies import WINDOW_UNITS as _UNITS
from .._policies import window_text as _window_text
from .ratelimit import retry_after_seconds

if TYPE_CHECKING:
    from .._domain import MessageRecord

__all__ = [
    "DEFAULT_RECIPIENT_LIMIT",
    "MAX_LIMIT",
    "MAX_WINDOW",
    "MIN_WINDOW",
    "RECIPIENT_RATE_LIMITED",
    "RecentMessages",
    "RecipientKey",
    "RecipientLimit",
    "RecipientRefusal",
    "counts_toward_limit",
    "items_over_limit",
    "parse_recipient_limit",
    "recipient_refusals",
    "refused",
]

RECIPIENT_RATE_LIMITED: Final = RecipientRateLimited.code
_TEXT: Final = re.compile(r"\s*(\d{1,9})\s*/\s*(\d{1,9})\s*([smhd]?)\s*", re.IGNORECASE | re.ASCII)


def parse_recipient_limit(text: str) -> RecipientLimit | None:
    """``N/WINDOW`` (``10/1h``, ``5/10m``, ``20/7d``, ``3/90s``; a bare window is seconds),
    or ``off`` for none. Anything else is :class:`RequestInvalid` saying what is expected."""
    if text.strip().lower() in {"off", "none"}:
        return None
    match = _TEXT.fullmatch(text)
    if match is None:
        raise RequestInvalid.for_field(
            _FIELD, f"{text!r} is not N/WINDOW (e.g. 10/1h, 5/10m, 3/90s) or off"
        )
    count, amount, unit = match.groups()
    seconds = int(amount) * _UNITS[(unit or "s").lower()]
    if seconds > MAX_WINDOW.total_seconds():
        raise RequestInvalid.for_field(_FIELD, "the window must be 1 second to 7 days")
    return RecipientLimit(int(count), timedelta(seconds=seconds))


@dataclass(frozen=True, slots=True, order=True)
class RecipientKey:
    """Whose messages are counted together: one recipient of one workspace, in one mode."""

    workspace_id: str
    livemode: bool
    to: str


@dataclass(frozen=True, slots=True)
class RecipientRefusal:
    """One recipient over its limit: ``free`` more messages fit now (fewer than were asked
    for), and one more fits ``retry_after`` seconds from now."""

    to: str
    free: int
    retry_after: float
    limit: RecipientLimit

    @property
    def message(self) -> str:
        wait = retry_after_seconds(self.retry_after)
        return (
            f"This recipient may get {self.limit.limit} messages per "
            f"{_window_text(self.limit.window)} from this workspace (the flood guard); "
            f"one more fits in {wait} s."
        )

    def error(self) -> RecipientRateLimited:
        return RecipientRateLimited(self.message, self.retry_after, (self,))


#: A backend's look at what is stored: the ``created_at`` of the counted messages of a
#: recipient created after ``since``, newest first, at most ``limit`` of them. Called once
#: per recipient in key order, inside the transaction that stores the new messages.
RecentMessages = Callable[[RecipientKey, datetime, int], Sequence[datetime]]


def counts_toward_limit(record: MessageRecord) -> bool:
    """Whether a stored message counts: one handed to a provider or queued for one does; a
    bulk item refused before any provider (stored ``failed`` so its ``job_id`` can be read,
    in the phase ``refused``) does not, whatever refused it."""
    return record.phase != "refused"


def recipient_refusals(
    messages: Iterable[MessageRecord], limit: RecipientLimit, recent: RecentMessages
) -> list[RecipientRefusal]:
    """The recipients that ``messages`` would take past ``limit``, given what is stored.

    Messages to one recipient in the same call count one after the other, in order. Empty:
    every message fits. Recipients are looked at in key order, so backends that lock per
    recipient always lock in the same order and two writers never wait on each other in a
    circle.
    """
    wanted: dict[RecipientKey, list[datetime]] = {}
    for record in messages:
        if counts_toward_limit(record):
            key = RecipientKey(record.workspace_id, record.livemode, record.to)
            wanted.setdefault(key, []).append(record.created_at)
    refusals: list[RecipientRefusal] = []
    for key in sorted(wanted):
        times = wanted[key]
        now = max(times)
        stored = recent(key, now - limit.window, limit.limit)[: limit.limit]
        free = limit.limit - len(stored)
        if len(times) <= free:
            continue
        # Once the ``free`` ones are in, the window is full; it lets one more through when
        # the oldest of its ``limit`` newest messages leaves it.
        oldest = stored[-1] if stored else now
        retry_after = max(0.0, (oldest + limit.window - now).total_seconds())
        refusals.append(RecipientRefusal(key.to, free, retry_after, limit))
    return refusals


def refused(refusals: Sequence[RecipientRefusal]) -> RecipientRateLimited:
    """The error a store raises for ``refusals`` (at least one): it says when the first
    recipient to have room again has it."""
    first = min(refusals, key=lambda r: r.retry_after)
    return RecipientRateLimited(first.message, first.retry_after, refusals)


def items_over_limit(
    error: RecipientRateLimited, items: Sequence[tuple[int, str]]
) -> dict[int, RecipientOverLimit]:
    """Which bulk items to refuse, by index: for each refused recipient, its items in request
    order past the ``free`` ones. ``items`` are ``(index, recipient)`` of the items sent."""
    by_recipient = {refusal.to: refusal for refusal in error.refusals}
    seen: Counter[str] = Counter()
    over: dict[int, RecipientOverLimit] = {}
    for index, to in items:
        refusal = by_recipient.get(to)
        if refusal is None:
            continue
        seen[to] += 1
        if seen[to] > refusal.free:
            over[index] = refusal
    return over
