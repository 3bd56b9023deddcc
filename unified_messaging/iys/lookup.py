"""İYS's answer for a recipient we hold no consent of (D33, policy ``iys``), cached.

The hand-over gate asks :meth:`StatusLookups.statuses` for the commercial recipients of a
hand-over that have no record here. Each is asked of İYS (``POST …/consents/status``; the
simulated İYS for test messages) at most once per ``ttl`` per process: the answer (ONAY,
RET, or none) is kept in this process, per workspace and mode. A recipient whose consent
changes is not served from the cache: a change recorded here, or pulled from İYS, is a
record, and the gate reads records first.

The lookups of one hand-over run concurrently (at most ``concurrency`` at once), each within
``timeout`` seconds, so a bulk of unknown recipients costs about one round trip, and a
cached one costs a dictionary read. When İYS cannot answer in time, :class:`IysUnavailable`:
the gate holds those messages and asks again later.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Final, get_args

from .._types import RecipientType
from ..consents.rules import ConsentStatus
from .errors import IysUnavailable

if TYPE_CHECKING:
    from .._clock import Clock
    from .backend import Backends

__all__ = ["DEFAULT_LOOKUP_TIMEOUT", "DEFAULT_LOOKUP_TTL", "StatusLookups"]

DEFAULT_LOOKUP_TTL: Final = timedelta(minutes=10)
DEFAULT_LOOKUP_TIMEOUT: Final = 2.0
_CONCURRENCY: Final = 8
_MAX_ENTRIES: Final = 100_000
_STATUSES: Final = frozenset(get_args(ConsentStatus))

#: ``(recipient, recipient type)``
Key = tuple[str, RecipientType]
_CacheKey = tuple[str, bool, str, str]


class StatusLookups:
    """İYS's MESAJ status of recipients, cached per process (see the module docstring)."""

    def __init__(
        self,
        backends: Backends,
        clock: Clock,
        *,
        ttl: timedelta = DEFAULT_LOOKUP_TTL,
        timeout: float = DEFAULT_LOOKUP_TIMEOUT,
        concurrency: int = _CONCURRENCY,
    ) -> None:
        self._backends = backends
        self._clock = clock
        self._ttl = ttl
        self._timeout = timeout
        self._limit = asyncio.Semaphore(concurrency)
        self._cache: dict[_CacheKey, tuple[datetime, ConsentStatus | None]] = {}

    def __repr__(self) -> str:
        return f"StatusLookups(ttl={self._ttl}, cached={len(self._cache)})"

    def cached(
        self, workspace_id: str, livemode: bool, keys: Sequence[Key]
    ) -> tuple[dict[Key, ConsentStatus | None], list[Key]]:
        """The answers still fresh in the cache, and the keys to ask İYS about."""
        now = self._clock.now()
        found: dict[Key, ConsentStatus | None] = {}
        missing: list[Key] = []
        for key in keys:
            hit = self._cache.get((workspace_id, livemode, *key))
            if hit is not None and hit[0] > now:
                found[key] = hit[1]
            else:
                missing.append(key)
        return found, missing

    async def statuses(
        self, workspace_id: str, livemode: bool, keys: Sequence[Key]
    ) -> dict[Key, ConsentStatus | None]:
        """İYS's status of each ``(recipient, recipient type)`` (``None``: no record).
        Raises :class:`IysUnavailable` when İYS cannot be asked (in time)."""
        found, missing = self.cached(workspace_id, livemode, keys)
        if not missing:
            return found
        backend = await self._backends.of(workspace_id, livemode)
        if backend is None:
            # A live workspace without an İYS connection: nobody to ask, nothing on record.
            return {**found, **dict.fromkeys(missing)}

        async def one(key: Key) -> ConsentStatus | None:
            async with self._limit:
                record = await backend.status(key[0], key[1], "MESAJ")
            status = None if record is None else record.status
            return status if status in _STATUSES else None  # type: ignore[return-value]

        try:
            async with asyncio.timeout(self._timeout):
                answers = await asyncio.gather(*(one(key) for key in missing))
        except TimeoutError:
            raise IysUnavailable("İYS did not answer the status lookup in time.") from None
        until = self._clock.now() + self._ttl
        if len(self._cache) + len(missing) > _MAX_ENTRIES:
            self._cache.clear()  # bounded: a flood of new recipients cannot grow it forever
        for key, status in zip(missing, answers, strict=True):
            self._cache[(workspace_id, livemode, *key)] = (until, status)
            found[key] = status
        return found

    def forget(self, workspace_id: str) -> None:
        """Drop a workspace's answers (its İYS connection changed)."""
        for key in [k for k in self._cache if k[0] == workspace_id]:
            del self._cache[key]
