"""The one reader of ``Retry-After`` (RFC 9110 §10.2.3), for provider answers and webhook
receivers alike (D19, D26).

The field is ``delay-seconds`` (``1*DIGIT``, ASCII digits only) or an HTTP-date. What a
remote party sends there is not trusted: the reader never raises (a value it cannot read is
``None``, as if absent), reads only ASCII digits (``str.isdigit`` also accepts ``"²"`` and
other scripts' digits, which ``float`` then refuses), and bounds the wait
to :data:`MAX_RETRY_AFTER`, so a ``Retry-After: 99999999999`` cannot pause a connection for
years. Callers may bound it further (the webhook schedule caps it at its longest step).
"""

from __future__ import annotations

import email.utils
import math
import re
from datetime import UTC, datetime
from typing import Final

__all__ = ["MAX_RETRY_AFTER", "bounded_wait", "parse_retry_after"]

#: The longest wait any ``Retry-After`` (or a provider's ``retry_after`` field) can ask: a day.
MAX_RETRY_AFTER: Final = 86_400.0
# ASCII digits only, and few enough of them that the int stays small.
_DELAY_SECONDS: Final = re.compile(r"[0-9]{1,15}")
# An IMF-fixdate is 29 characters; the obsolete forms are no longer. Longer is not a date.
_MAX_DATE_LENGTH: Final = 64


def bounded_wait(seconds: float) -> float | None:
    """A wait a remote party asked for, in seconds, within ``[0, MAX_RETRY_AFTER]``;
    ``None`` when it is not a finite, non-negative number."""
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return min(float(seconds), MAX_RETRY_AFTER)


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delay-seconds or HTTP-date, relative to
    ``now``), bounded by :func:`bounded_wait`; ``None`` if absent or unreadable. Never raises."""
    if value is None:
        return None
    text = value.strip(" \t")
    if _DELAY_SECONDS.fullmatch(text):
        return bounded_wait(float(int(text)))
    if not text or len(text) > _MAX_DATE_LENGTH:
        return None
    try:
        when = email.utils.parsedate_to_datetime(text)
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    except (TypeError, ValueError, OverflowError, IndexError):
        # What the standard library raises on dates it cannot read or place.
        return None
    return bounded_wait(max(0.0, seconds))
