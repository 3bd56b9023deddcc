"""Send-rate pacing at run time (D27): what routing does with a connection's ``max_rate`` and
``max_calls`` before it calls the provider.

The jobs of one hop go out in *groups*, each group reserved from the :class:`~._pacing.Pacer`
before it is sent: one batch call of a batch-capable provider (its messages count against
``max_rate``, the call once against ``max_calls``), or a few single-message calls of the
others. A group is never larger than the limit's burst (a tenth of a second's worth, at least
one), so a batch provider paced at 100 messages/s gets calls of 10: the slots handed out never
put more than the rate plus one burst in a second. Each group waits for its slot (here, in the
sending task, between groups, while the groups before it are on the wire) and goes out.

``max_wait`` (2 s by default) bounds the whole send, not each group: a bulk of 200 at 100
messages/s goes out within 2 s, one of 200 at 10/s sends about 20 and defers the rest. A
group that cannot get a slot within what is left of it is not an error: it and
every job after it are *deferred*, each with the time a slot should be free for it (spread at
the rate, so the worker does not wake them all at once). Routing leaves them where they are,
the caller stores them ``queued`` and the worker sends them then, through this same pacing.

A pacer that cannot be reached never stops a send (as for the circuit breakers): the calls
go out unpaced and a warning is logged once.

A send that must wait for a slot says so first (``hold``, :class:`Hold`): the caller stores
those jobs' phase ``waiting`` (no provider has them), and before a group goes out after the
wait it takes them back (``accepted``) by compare-and-set. A process killed during the wait
so leaves rows its submit check can hand to the worker (``queued``, sent later, once),
rather than end ``unknown`` as if a provider might have them; a group the check took over
meanwhile is not sent here (it comes back deferred).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final, Generic, Protocol, TypeVar

from .._clock import Clock
from .._domain import Connection
from .._errors import StorageUnavailable
from ..providers.base import SubmitOutcome
from .pacing import DEFAULT_PACE_WAIT, Pacer, Reservation

__all__ = ["DEFAULT_PACE_WAIT", "Hold", "Paced", "SendPacing", "Sleep", "burst_of"]

logger = logging.getLogger("unified_messaging.pacing")

#: How to wait for a slot: ``asyncio.sleep`` in production; tests move a ManualClock.
Sleep = Callable[[float], Awaitable[None]]
#: A burst is this long a stretch of the rate: what may go out at once after a quiet spell.
BURST_SPAN: Final = 0.1

J = TypeVar("J")


def burst_of(rate: float) -> int:
    """Slots usable at once at ``rate``: a tenth of a second's worth, at least one."""
    return max(1, math.floor(rate * BURST_SPAN))


class Hold(Protocol[J]):
    """Protocol: where a send says that some of its jobs wait for their slots (D27)."""

    async def waiting(self, jobs: Sequence[J]) -> None:
        """``jobs`` are about to wait: none of them has been handed to a provider."""
        ...

    async def resuming(self, jobs: Sequence[J]) -> Sequence[J]:
        """``jobs`` waited and are about to be sent: those still this send's to send."""
        ...


@dataclass(slots=True)
class Paced(Generic[J]):
    """What :meth:`SendPacing.send` did: the jobs ``sent`` (in the order of ``outcomes``) and
    the jobs ``deferred``, each with when a slot should be free for it."""

    sent: list[J] = field(default_factory=list)
    outcomes: list[SubmitOutcome] = field(default_factory=list)
    deferred: list[tuple[J, datetime]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Limit:
    key: str
    rate: float
    burst: int


@dataclass(frozen=True, slots=True)
class _Plan:
    """How a connection's jobs go out: ``size`` jobs a group; ``batched``: a group is one call."""

    messages: _Limit | None
    calls: _Limit | None
    size: int
    batched: bool

    def costs(self, jobs: int) -> tuple[int, int]:
        """(messages, calls) a group of ``jobs`` takes."""
        return jobs, 1 if self.batched else jobs

    def spacing(self) -> float:
        """Seconds between two deferred jobs: the worker sends them one call each."""
        return max(1 / limit.rate for limit in (self.messages, self.calls) if limit is not None)


def _plan(connection: Connection, max_batch: int) -> _Plan | None:
    messages = calls = None
    if connection.max_rate is not None:
        rate = connection.max_rate
        messages = _Limit(f"{connection.id}:messages", rate, burst_of(rate))
    if connection.max_calls is not None:
        rate = connection.max_calls
        calls = _Limit(f"{connection.id}:calls", rate, burst_of(rate))
    if messages is None and calls is None:
        return None
    batch = max(1, max_batch)
    if batch > 1:  # one call a group: its messages within the message burst
        size = min(batch, messages.burst) if messages is not None else batch
        return _Plan(messages, calls, size, batched=True)
    size = min(limit.burst for limit in (messages, calls) if limit is not None)
    return _Plan(messages, calls, size, batched=False)


class SendPacing:
    """Paces each connection's sends to its ``max_rate`` and ``max_calls`` through ``pacer``,
    shared with every process that uses the same backend.

    ``max_wait``: the longest a send waits for a slot before its jobs are deferred (queued for
    the worker). ``sleep``: how to wait (default ``asyncio.sleep``; tests pass one that moves
    their ManualClock)."""

    def __init__(
        self,
        pacer: Pacer,
        clock: Clock,
        *,
        max_wait: timedelta = DEFAULT_PACE_WAIT,
        sleep: Sleep | None = None,
    ) -> None:
        if max_wait < timedelta(0):
            raise ValueError("max_wait must not be negative")
        self._pacer = pacer
        self._clock = clock
        self._max_wait = max_wait.total_seconds()
        self._sleep: Sleep = sleep or asyncio.sleep
        self._warned = False
        self._latest: datetime | None = None

    def __repr__(self) -> str:
        return f"SendPacing({self._pacer!r}, max_wait={self._max_wait:g}s)"

    @property
    def pacer(self) -> Pacer:
        return self._pacer

    def deadline(self) -> datetime:
        """When a send starting now stops waiting for slots: a send made of several
        :meth:`send` calls (a refused batch sent again in halves) shares one bound."""
        return self._now() + timedelta(seconds=self._max_wait)

    async def send(
        self,
        connection: Connection,
        max_batch: int,
        jobs: Sequence[J],
        submit: Callable[[Sequence[J]], Awaitable[list[SubmitOutcome]]],
        hold: Hold[J] | None = None,
        *,
        deadline: datetime | None = None,
    ) -> Paced[J]:
        """Send ``jobs`` through ``connection`` with ``submit`` (one group at a time), each
        group after its slot; the jobs no slot is found for by ``deadline`` (default: the
        bound from now) come back deferred. ``hold`` hears of the jobs that wait before they
        do, and of each group after."""
        plan = _plan(connection, max_batch)
        if plan is None or not jobs:
            return Paced(list(jobs), await submit(jobs) if jobs else [])
        groups = [jobs[i : i + plan.size] for i in range(0, len(jobs), plan.size)]
        deadline = deadline or self.deadline()
        done = Paced[J]()
        running: list[asyncio.Task[list[SubmitOutcome]]] = []
        held = False
        try:
            for index, group in enumerate(groups):
                refused, wait = await self._take(plan, len(group), deadline)
                if refused is not None:
                    done.deferred += self._defer(plan, jobs[index * plan.size :], refused)
                    break
                if wait > 0:
                    if hold is not None and not held:
                        await hold.waiting(jobs[index * plan.size :])
                        held = True
                    await self._sleep(wait)
                if held:
                    assert hold is not None
                    ours = await hold.resuming(group)
                    kept = {id(job) for job in ours}
                    now = self._now()
                    done.deferred.extend((job, now) for job in group if id(job) not in kept)
                    group = list(ours)
                    if not group:
                        continue
                running.append(asyncio.ensure_future(submit(group)))
                done.sent.extend(group)
            for answer in await asyncio.gather(*running):
                done.outcomes.extend(answer)
        finally:
            for task in running:  # the sender was cancelled: so are its calls
                task.cancel()
        if done.deferred:
            logger.info(
                "connection %s (%s): %d message(s) over its send rate queued until %s",
                connection.id,
                connection.provider,
                len(done.deferred),
                done.deferred[0][1].isoformat(),
            )
        return done

    async def _take(
        self, plan: _Plan, jobs: int, deadline: datetime
    ) -> tuple[Reservation | None, float]:
        """Reserve a group's slots, usable by ``deadline``: the refusal, if there is one, and
        the seconds to wait for them (the caller waits)."""
        messages, calls = plan.costs(jobs)
        wanted = [(limit, cost) for limit, cost in ((plan.calls, calls), (plan.messages, messages))
                  if limit is not None]  # fmt: skip
        held: list[tuple[_Limit, int]] = []
        wait = 0.0
        now = self._now()
        max_wait = max(0.0, (deadline - now).total_seconds())
        try:
            for limit, cost in wanted:
                got = await self._pacer.reserve(limit.key, cost=cost, rate=limit.rate,
                                                burst=limit.burst, max_wait=max_wait,
                                                now=now)  # fmt: skip
                if not got.granted:
                    for kept, kept_cost in held:  # the other limit's slots go back unused
                        await self._pacer.release(kept.key, cost=kept_cost, rate=kept.rate,
                                                  now=now)  # fmt: skip
                    return got, 0.0
                held.append((limit, cost))
                wait = max(wait, got.wait)
        except StorageUnavailable:
            self._unreachable()
            return None, 0.0
        return None, wait

    def _defer(
        self, plan: _Plan, jobs: Sequence[J], refused: Reservation
    ) -> list[tuple[J, datetime]]:
        first = self._now() + timedelta(seconds=refused.wait)
        step = plan.spacing()
        return [(job, first + timedelta(seconds=k * step)) for k, job in enumerate(jobs)]

    def _now(self) -> datetime:
        # Never earlier than already read: a clock stepped back must not re-issue slots.
        now = self._clock.now()
        if self._latest is not None and now < self._latest:
            return self._latest
        self._latest = now
        return now

    def _unreachable(self) -> None:
        if not self._warned:
            logger.warning("the send-rate store is unreachable; sends go out unpaced")
            self._warned = True
