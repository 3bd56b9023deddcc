"""Circuit breakers per connection (D26), shared by every process: the runtime around
:mod:`._breaker_state`.

Routing asks :meth:`Breakers.allow` before it calls a connection and tells
:meth:`Breakers.record` what the calls said. A refused hop is skipped with no network call;
its attempt carries ``PROVIDER_CIRCUIT_OPEN`` (an ``unavailable`` outcome, so D7 applies when
no fallback is left: 502, or ``queued`` with ``retry_unavailable``).

:class:`SharedBreakers` keeps each connection's state in a :class:`BreakerStore` (the
messenger's store, or Redis: :mod:`._redis_breaker`) and changes it by compare-and-set, so any
number of processes agree on it and exactly one of them gets the half-open probe. What a send
costs:

- while a connection is healthy, nothing but a look at a local copy of its state, re-read at
  most once per ``cache_ttl`` (1 s): a state opened by another process is seen within it;
- successes while all is well are not written at all: they are counted locally and go out
  with the next write (a failure), so the window's ratio still sees them;
- failures, pauses and probe results are one compare-and-set write each.

A breaker never fails a send: if its store cannot be reached, calls are let through and the
outcomes forgotten (a warning is logged). Only live sends pass through breakers: test keys
talk to the simulator, whose scripted failures must not stop a live connection.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Final, Literal, Protocol

from .._clock import Clock
from .._domain import Connection, ErrorInfo
from .._errors import StorageUnavailable
from ..providers.base import SubmitOutcome
from .breaker_policy import BreakerPolicy
from .breaker_state import (
    CIRCUIT_OPEN,
    JUMP_TOLERANCE,
    BreakerState,
    StoredBreaker,
    Verdict,
    admit,
    observe,
    settle,
    tally,
)

__all__ = [
    "CIRCUIT_OPEN",
    "Admission",
    "BreakerHealth",
    "BreakerStore",
    "Breakers",
    "SharedBreakers",
]

logger = logging.getLogger("unified_messaging.breaker")

#: How long a process trusts its copy of a connection's state before reading it again.
DEFAULT_CACHE_TTL: Final = timedelta(seconds=1)
#: Compare-and-set rounds before a write gives up (another process keeps winning).
_CAS_TRIES: Final = 8


class BreakerStore(Protocol):
    """Protocol: where breaker states are shared (the :class:`~.store.base.Store`, Redis)."""

    async def get_breaker(self, connection_id: str) -> StoredBreaker | None:
        """The connection's stored state, ``None`` if it has none."""
        ...

    async def put_breaker(self, connection_id: str, data: str, *, version: int) -> bool:
        """Store ``data`` as version ``version + 1`` if the stored version is ``version``
        (``0``: none is stored); ``False``, changing nothing, if it is not."""
        ...


@dataclass(frozen=True, slots=True)
class Admission:
    """May routing call the connection: ``allowed`` (``probe``: as its one half-open call), or
    ``refusal``, the error of the skipped attempt."""

    allowed: bool
    probe: bool = False
    refusal: ErrorInfo | None = None


ALLOWED: Final = Admission(True)

BreakerPhase = Literal["closed", "open", "half_open", "paused"]


@dataclass(frozen=True, slots=True)
class BreakerHealth:
    """A connection's breaker as an operator sees it (``connections list``,
    ``Messenger.connection_health``).

    ``state``: ``closed`` (calls go out), ``open`` (skipped until ``until``), ``half_open``
    (one probe call is out; the others are skipped until it answers or ``until``), or
    ``paused`` (the provider asked us to wait until ``until``). ``calls`` and ``failures``
    count the policy's window; ``consecutive`` the unavailable calls in a row.
    """

    connection_id: str
    provider: str
    state: BreakerPhase
    until: datetime | None
    calls: int
    failures: int
    consecutive: int
    opened_at: datetime | None
    reason: str | None
    policy: BreakerPolicy


class Breakers(Protocol):
    """Protocol: the breakers routing consults (``_routing.dispatch(breakers=...)``)."""

    async def allow(self, connection: Connection) -> Admission: ...

    async def record(
        self, connection: Connection, outcomes: Sequence[SubmitOutcome], admission: Admission
    ) -> None: ...


@dataclass(slots=True)
class _Copy:
    state: BreakerState
    read_at: datetime


class SharedBreakers:
    """:class:`Breakers` over a :class:`BreakerStore`, with a local copy of each state.

    ``probe_lease``: how long the half-open probe is held by the process that took it;
    if that process dies mid-call, another one probes after it (the messenger passes its
    submit time-out: longer than any call). ``cache_ttl``: see the module docstring.
    """

    def __init__(
        self,
        store: BreakerStore,
        clock: Clock,
        *,
        probe_lease: timedelta,
        cache_ttl: timedelta = DEFAULT_CACHE_TTL,
    ) -> None:
        self._store = store
        self._clock = clock
        self._lease = probe_lease
        self._ttl = cache_ttl
        self._copies: dict[str, _Copy] = {}
        self._reads: dict[str, asyncio.Lock] = {}
        #: Successes not written yet, per connection: (count, when the first happened).
        self._pending: dict[str, tuple[int, datetime]] = {}
        self._warned = False
        #: This process's view of time never runs back (see :meth:`_now`).
        self._latest: datetime | None = None
        self._offset = timedelta(0)

    def __repr__(self) -> str:
        return f"SharedBreakers({self._store!r})"

    async def allow(self, connection: Connection) -> Admission:
        now = self._now()
        try:
            state = await self._state(connection.id, now)
            for _ in range(_CAS_TRIES):
                verdict = admit(state, now, connection.breaker, lease=self._lease)
                if verdict.claim is None:
                    return _admission(connection, verdict)
                if await self._put(connection, state, verdict.claim):
                    return Admission(True, probe=True)
                state = await self._read(connection.id, now)  # another process moved first
        except StorageUnavailable:
            self._store_down()
        return ALLOWED

    async def record(
        self, connection: Connection, outcomes: Sequence[SubmitOutcome], admission: Admission
    ) -> None:
        calls = tally(outcomes)
        if not calls.calls and not admission.probe:
            return  # a probe that said nothing still gives its lease back (``observe``)
        now = self._now()
        policy = connection.breaker
        earlier = self._earlier_successes(connection.id, now, policy.window)
        try:
            state = await self._state(connection.id, now)
            for _ in range(_CAS_TRIES):
                changed = observe(
                    state, now, policy, calls, probe=admission.probe, earlier_successes=earlier
                )
                if changed is None:
                    if not calls.failures:
                        first = self._pending.get(connection.id, (0, now))[1]
                        self._pending[connection.id] = (earlier + calls.calls, first)
                    return
                if await self._put(connection, state, changed):
                    self._pending.pop(connection.id, None)
                    return
                state = await self._read(connection.id, now)
        except StorageUnavailable:
            self._store_down()

    async def health(self, connection: Connection) -> BreakerHealth:
        """The connection's breaker as stored now (no local copy)."""
        now = self._now()
        state = await self._read(connection.id, now)
        policy = connection.breaker
        calls, failures = state.window_counts(now, policy.window)
        phase: BreakerPhase = state.phase
        until = state.until if state.phase != "closed" else None
        paused = state.paused_until if state.paused(now) else None
        if paused is not None and (until is None or paused > until):
            phase, until = "paused", paused
        if phase == "open" and until is not None and until <= now:
            until = None  # cool-down over: the next call probes
        return BreakerHealth(
            connection_id=connection.id,
            provider=connection.provider,
            state=phase,
            until=until,
            calls=calls,
            failures=failures,
            consecutive=state.consecutive,
            opened_at=state.opened_at if state.phase != "closed" else None,
            reason=state.reason if phase != "closed" else None,
            policy=policy,
        )

    def _now(self) -> datetime:
        """The clock, but never earlier than it already read: a jump back (an NTP step, a
        restored VM) freezes this process's view of time until the clock catches up with
        it, so no cool-down, pause or lease gets longer or shorter for it. (A state written
        by another process ahead of us is slid back by ``_breaker_state.settle``.)"""
        now = self._clock.now() + self._offset
        if self._latest is not None and now < self._latest:
            self._offset += self._latest - now
            now = self._latest
        self._latest = now
        return now

    # -- the local copy

    async def _state(self, connection_id: str, now: datetime) -> BreakerState:
        copy = self._copies.get(connection_id)
        if copy is not None and copy.read_at <= now < copy.read_at + self._ttl:
            return copy.state
        lock = self._reads.setdefault(connection_id, asyncio.Lock())
        async with lock:  # one read per connection at a time; the others use its result
            copy = self._copies.get(connection_id)
            if copy is not None and copy.read_at <= now < copy.read_at + self._ttl:
                return copy.state
            return await self._read(connection_id, now)

    async def _read(self, connection_id: str, now: datetime) -> BreakerState:
        state = BreakerState.from_stored(await self._store.get_breaker(connection_id))
        if state.at is not None and state.at - now > JUMP_TOLERANCE:
            state = await self._slide_back(connection_id, state, now)
        self._copies[connection_id] = _Copy(state, now)
        return state

    async def _slide_back(
        self, connection_id: str, state: BreakerState, now: datetime
    ) -> BreakerState:
        """A state stamped ahead of this process's clock (the clock was stepped back while
        nobody here was looking): store it slid back to now, every remaining span kept, so
        the next read does not slide it again from scratch (and never waits longer)."""
        slid, _ = settle(state, now)
        if await self._store.put_breaker(connection_id, slid.to_json(), version=state.version):
            return replace(slid, version=state.version + 1)
        # Another process wrote it meanwhile: use what it wrote (slid if still ahead).
        fresh = BreakerState.from_stored(await self._store.get_breaker(connection_id))
        return settle(fresh, now)[0] if fresh.at is not None and fresh.at > now else fresh

    async def _put(self, connection: Connection, old: BreakerState, new: BreakerState) -> bool:
        if not await self._store.put_breaker(connection.id, new.to_json(), version=old.version):
            return False
        stored = replace(new, version=old.version + 1)
        self._copies[connection.id] = _Copy(stored, self._now())
        if stored.phase != old.phase:
            _log_change(connection, old, stored)
        return True

    def _earlier_successes(self, connection_id: str, now: datetime, window: timedelta) -> int:
        pending = self._pending.get(connection_id)
        if pending is None:
            return 0
        count, since = pending
        if now - since >= window:  # out of the window by now: they no longer count
            self._pending.pop(connection_id, None)
            return 0
        return count

    def _store_down(self) -> None:
        if not self._warned:
            logger.warning("circuit breaker state is unreachable; calls go out unguarded")
            self._warned = True


def _admission(connection: Connection, verdict: Verdict) -> Admission:
    if verdict.allowed:
        return ALLOWED
    when = verdict.until.strftime("%H:%M:%S UTC") if verdict.until is not None else "later"
    name = f"the {connection.provider} connection"
    if verdict.why == "paused":
        message = f"Not called: {name} is paused until {when}, as the provider asked."
    elif verdict.why == "probing":
        message = f"Not called: the circuit of {name} is half-open and its one probe is out."
    else:
        message = (
            f"Not called: the circuit of {name} is open after repeated failures; "
            f"it is tried again after {when}."
        )
    return Admission(False, refusal=ErrorInfo(CIRCUIT_OPEN, message))


def _log_change(connection: Connection, old: BreakerState, new: BreakerState) -> None:
    if new.phase == "open" and old.phase == "half_open" and new.until == new.at:
        logger.info(
            "circuit of connection %s (%s): probe not made, the next call probes",
            connection.id,
            connection.provider,
        )
    elif new.phase == "open":
        logger.warning(
            "circuit of connection %s (%s) opened: %s",
            connection.id,
            connection.provider,
            new.reason,
        )
    elif new.phase == "closed":
        logger.warning("circuit of connection %s (%s) closed", connection.id, connection.provider)
    else:
        logger.info("circuit of connection %s (%s) half-open", connection.id, connection.provider)
