"""Send-rate pacing (D27): the seam that hands out send slots, and where it keeps them.

A connection may send at most ``max_rate`` messages and ``max_calls`` provider calls a
second. Each limit is one GCRA ("generic cell rate algorithm", the leaky bucket as a meter):
a key holds its *theoretical arrival time* (TAT), the moment the slots handed out so far are
used up at the rate. Reserving ``cost`` slots moves the TAT on by ``cost`` emission intervals
and tells the caller how long to wait before using them, ``0`` when a burst's worth is free.
A reservation that would have to wait longer than ``max_wait`` changes nothing and says how
long it would have waited: the caller stores the message ``queued`` for the worker instead.

One number per key, changed in one atomic step, is all that is shared, so every process
that reserves through the same :class:`Pacer` keeps to the one rate:

- :class:`MemoryPacer`: in this process (tests, a single process);
- :class:`StorePacer`: the store (a row of ``um_pacing`` on SQLite and PostgreSQL, one
  conditional ``INSERT … ON CONFLICT DO UPDATE … RETURNING``), the default;
- :class:`~._redis_pacing.RedisPacer`: Redis (one Lua script), when ``UM_REDIS_URL`` is set.

Times are integer microseconds since the epoch: exact in SQL ``BIGINT`` and in a Lua double.
"Now" comes from the caller's injected clock (:mod:`._send_pacing`), so tests pace on a
:class:`~._clock.ManualClock`. The module imports nothing heavy: the store's contract uses
:func:`gcra` too.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final, Protocol

from .._errors import RequestInvalid

if TYPE_CHECKING:
    from ..store.base import Store

__all__ = [
    "DEFAULT_PACE_WAIT",
    "MAX_RATE",
    "MIN_RATE",
    "RATE_FIELDS",
    "MemoryPacer",
    "Pacer",
    "RateSetting",
    "Reservation",
    "StorePacer",
    "check_rate",
    "gcra",
    "interval_us",
    "micros",
    "rate_setting",
]

#: How long a send waits for a slot before its message is stored ``queued`` instead.
DEFAULT_PACE_WAIT: Final = timedelta(seconds=2)
#: The slowest settable rate: one a quarter of an hour is already a connection at a stop.
MIN_RATE: Final = 0.001
#: Faster than any SMSC or chat API takes; past it, a limit is a typo, not a limit.
MAX_RATE: Final = 10_000.0

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MICRO: Final = timedelta(microseconds=1)


def micros(moment: datetime) -> int:
    """``moment`` as integer microseconds since the epoch (exact, unlike ``timestamp()``)."""
    return (moment - _EPOCH) // _MICRO


def check_rate(field: str, value: object) -> float | None:
    """A rate per second as given (a number, ``None`` for no limit), checked: anything but a
    finite number from :data:`MIN_RATE` to :data:`MAX_RATE` is :class:`RequestInvalid`
    naming ``field`` (``max_rate``, ``max_calls``)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RequestInvalid.for_field(field, "must be a number per second, or off")
    if not math.isfinite(value) or not MIN_RATE <= value <= MAX_RATE:
        raise RequestInvalid.for_field(
            field, f"must be {MIN_RATE:g} to {MAX_RATE:,.0f} per second (or off for no limit)"
        )
    return float(value)


#: How a rate may be given: a number per second; ``None`` or ``"off"`` for no limit;
#: ``"default"`` for the provider's documented limit (``ProviderProfile.max_rate``/``max_calls``).
RateSetting = float | int | str | None
#: The settable limits, by the name the API, the CLI flags and the errors use.
RATE_FIELDS: Final = ("max_rate", "max_calls")


def rate_setting(field: str, value: object, default: float | None) -> float | None:
    """The limit ``value`` sets (see :data:`RateSetting`), checked as :func:`check_rate`."""
    if isinstance(value, str):
        word = value.strip().lower()
        if word == "off":
            return None
        if word == "default":
            return default
        raise RequestInvalid.for_field(field, "must be a number per second, off or default")
    return check_rate(field, value)


def gcra(tat: int, now: int, cost: int, burst: int, max_wait: int) -> tuple[bool, int, int]:
    """One GCRA reservation, every argument in microseconds: ``cost`` and ``burst`` are slot
    counts times the emission interval. Returns ``(granted, tat after, wait)``; when not
    granted the TAT is unchanged and ``wait`` is how long the slots would have needed.

    The same arithmetic runs in SQL (:mod:`.store._sql_pacing`) and Lua
    (:mod:`._redis_pacing`): ``new = max(tat, now) + cost``; wait ``max(0, new - burst - now)``.
    """
    new = max(tat, now) + cost
    wait = max(0, new - burst - now)
    if wait > max_wait:
        return False, tat, wait
    return True, new, wait


@dataclass(frozen=True, slots=True)
class Reservation:
    """What :meth:`Pacer.reserve` did: ``granted`` slots are to be used after ``wait``
    seconds (``0``: now); refused ones would have needed ``wait`` seconds, longer than the
    caller's ``max_wait`` (so a queued message is due about then)."""

    granted: bool
    wait: float


class Pacer(Protocol):
    """Protocol: where the send slots of every connection are handed out, shared by every
    process that uses the same backend (memory, the store, Redis)."""

    async def reserve(
        self, key: str, *, cost: int, rate: float, burst: int, max_wait: float, now: datetime
    ) -> Reservation:
        """Atomically reserve ``cost`` slots of ``key`` at ``rate`` per second with ``burst``
        slots usable at once, if they can be used within ``max_wait`` seconds of ``now``;
        else change nothing. Raises :class:`~._errors.StorageUnavailable` when the backend
        cannot be reached."""
        ...

    async def release(self, key: str, *, cost: int, rate: float, now: datetime) -> None:
        """Give back ``cost`` slots reserved and not used (another limit refused the send)."""
        ...


def interval_us(rate: float) -> int:
    """The emission interval in microseconds (at least one: 10,000/s is 100)."""
    return max(1, round(1_000_000 / rate))


class MemoryPacer:
    """:class:`Pacer` in this process: one dict of TATs under a lock (the worker and the
    sends of one process share it; other processes do not)."""

    def __init__(self) -> None:
        self._tats: dict[str, int] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MemoryPacer(keys={len(self._tats)})"

    async def reserve(
        self, key: str, *, cost: int, rate: float, burst: int, max_wait: float, now: datetime
    ) -> Reservation:
        step, at = interval_us(rate), micros(now)
        with self._lock:
            granted, tat, wait = gcra(
                self._tats.get(key, 0), at, cost * step, burst * step, _us(max_wait)
            )
            if granted:
                self._tats[key] = tat
        return Reservation(granted, wait / 1e6)

    async def release(self, key: str, *, cost: int, rate: float, now: datetime) -> None:
        with self._lock:
            if key in self._tats:
                self._tats[key] = max(self._tats[key] - cost * interval_us(rate), micros(now))


class StorePacer:
    """:class:`Pacer` in the :class:`~.store.base.Store`: every process on one database keeps
    to one rate. A reservation is one write (one statement on SQL); a refusal reads once more
    to say when the slots would be free."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def __repr__(self) -> str:
        return f"StorePacer({self._store!r})"

    async def reserve(
        self, key: str, *, cost: int, rate: float, burst: int, max_wait: float, now: datetime
    ) -> Reservation:
        step, at = interval_us(rate), micros(now)
        granted, tat = await self._store.reserve_slots(
            key, now=at, cost=cost * step, burst=burst * step, max_wait=_us(max_wait)
        )
        # Granted: ``tat`` is the new TAT; refused: the stored one, these slots not added.
        end = tat if granted else max(tat, at) + cost * step
        return Reservation(granted, max(0, end - burst * step - at) / 1e6)

    async def release(self, key: str, *, cost: int, rate: float, now: datetime) -> None:
        await self._store.release_slots(key, now=micros(now), cost=cost * interval_us(rate))


def _us(seconds: float) -> int:
    return max(0, round(seconds * 1_000_000))
