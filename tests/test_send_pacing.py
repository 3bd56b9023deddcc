"""How routing paces one hop (D27), on a ManualClock with a provider that answers at once:
the groups a connection's limits make, the waits between them, and what is deferred."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest
from fakes.gates import OPEN

from unified_messaging._clock import ManualClock
from unified_messaging._domain import Connection
from unified_messaging._routing.dispatch import Hop, Job, dispatch
from unified_messaging._routing.pacing import MemoryPacer
from unified_messaging._routing.send_pacing import Hold, SendPacing, burst_of
from unified_messaging.providers.base import (
    InboundCallback,
    ProviderReport,
    SubmitOutcome,
    SubmitRequest,
)

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class Provider:
    """A provider API that takes everything and notes when (on the clock) each call came."""

    def __init__(self, clock: ManualClock, max_batch: int) -> None:
        self.code = "sms_e"
        self.max_batch = max_batch
        self.clock = clock
        self.calls: list[tuple[float, int]] = []

    def _note(self, size: int) -> None:
        self.calls.append(((self.clock.now() - START).total_seconds(), size))

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        self._note(1)
        return SubmitOutcome.accepted(f"id-{request.job_id}")

    async def submit_batch(self, requests: Sequence[SubmitRequest]) -> list[SubmitOutcome]:
        self._note(len(requests))
        return [SubmitOutcome.accepted(f"id-{r.job_id}") for r in requests]

    def parse_reports(self, callback: InboundCallback) -> list[ProviderReport]:
        return []

    async def poll_reports(self, ids: Sequence[str]) -> list[ProviderReport]:
        return []

    async def aclose(self) -> None:
        return None


async def run(
    count: int,
    *,
    max_batch: int = 1,
    wait: float = 2.0,
    pacer: MemoryPacer | None = None,
    hold: Hold[Job] | None = None,
    **rates: float | None,
) -> tuple[list[Job], Provider, list[float]]:
    clock = ManualClock(START)
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        for _ in range(3):  # the groups launched before this wait make their calls first
            await asyncio.sleep(0)
        clock.advance(seconds)

    pacing = SendPacing(
        pacer or MemoryPacer(), clock, max_wait=timedelta(seconds=wait), sleep=sleep
    )
    provider = Provider(clock, max_batch)
    connection = Connection("conn_1", "ws_1", "sms_e", START, "x", **rates)  # type: ignore[arg-type]
    jobs = [Job(f"msg_{i}", "+905551234567", "hi", "ws_1") for i in range(count)]
    await dispatch(jobs, [Hop(connection, provider, "ACME")], clock=clock, gate=OPEN, concurrency=8,  # type: ignore[arg-type]
                   pacing=pacing, hold=hold)  # fmt: skip
    return jobs, provider, waits


@pytest.mark.parametrize(("rate", "burst"), [(0.5, 1), (2, 1), (19.9, 1), (20, 2), (100, 10),
                                             (10_000, 1000)])  # fmt: skip
def test_a_burst_is_a_tenth_of_a_second_of_the_rate(rate: float, burst: int) -> None:
    assert burst_of(rate) == burst


async def test_single_message_calls_go_in_groups_of_one_burst() -> None:
    jobs, provider, waits = await run(9, max_rate=30)  # burst 3

    at = [round(when, 4) for when, _ in provider.calls]  # 1/30 s is 33,333 microseconds
    assert at == [0, 0, 0, 0.1, 0.1, 0.1, 0.2, 0.2, 0.2]
    assert waits == pytest.approx([0.1, 0.1], abs=1e-5)
    assert all(job.accepted for job in jobs)


async def test_the_bound_is_for_the_whole_send_and_the_rest_is_deferred_at_the_rate() -> None:
    jobs, provider, _ = await run(8, max_rate=2, wait=1.0)

    assert [at for at, _ in provider.calls] == pytest.approx([0, 0.5, 1.0])
    deferred = [job for job in jobs if job.paced]
    assert [job.job_id for job in deferred] == [f"msg_{i}" for i in range(3, 8)]
    assert [(job.paced_until - START).total_seconds() for job in deferred] == pytest.approx(  # type: ignore[operator]
        [1.5, 2.0, 2.5, 3.0, 3.5]
    )
    assert {(job.paced_hop, tuple(job.attempts)) for job in deferred} == {(0, ())}


async def test_the_message_burst_sizes_a_batch_and_the_calls_limit_spaces_them() -> None:
    # Batches of up to 100 at 1 call/s and 150 messages/s: calls of 15 (the message burst),
    # one a second.
    jobs, provider, _ = await run(60, max_batch=100, wait=2.0, max_rate=150, max_calls=1)

    assert provider.calls == [(0, 15), (pytest.approx(1.0), 15), (pytest.approx(2.0), 15)]
    assert sum(job.paced for job in jobs) == 15


async def test_a_refusal_by_one_limit_gives_the_others_slots_back() -> None:
    pacer = MemoryPacer()
    jobs, provider, _ = await run(4, wait=1.0, pacer=pacer, max_rate=2, max_calls=100)

    assert len(provider.calls) == 3 and jobs[3].paced
    # The fourth group was asked for at 1.0 s: its call slot (1.0-1.01 s) was taken, then
    # given back when the messages limit refused it. Kept, the next slot would be 1.01 s.
    probe = await pacer.reserve("conn_1:calls", cost=1, rate=100, burst=1, max_wait=9, now=START)
    assert probe.wait == pytest.approx(1.0)


async def test_zero_wait_sends_only_what_is_free_now() -> None:
    jobs, provider, waits = await run(5, max_rate=10, wait=0)  # burst 1
    assert provider.calls == [(0, 1)] and waits == []
    assert sum(job.paced for job in jobs) == 4


class Held:
    """A :class:`Hold` that notes what it hears and gives back all but ``taken`` (the jobs a
    submit check took over while they waited)."""

    def __init__(self, taken: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.taken = taken
        self.heard: list[tuple[str, list[str]]] = []

    async def waiting(self, jobs: Sequence[Job]) -> None:
        self.heard.append(("waiting", [job.job_id for job in jobs]))

    async def resuming(self, jobs: Sequence[Job]) -> Sequence[Job]:
        self.heard.append(("resuming", [job.job_id for job in jobs]))
        return [job for job in jobs if job.job_id not in self.taken]


async def test_the_jobs_that_wait_are_held_before_the_wait_and_taken_back_group_by_group() -> None:
    held = Held()
    jobs, provider, _ = await run(3, max_rate=2, hold=held)  # slots at 0, 0.5, 1.0

    assert held.heard == [
        ("waiting", ["msg_1", "msg_2"]),  # all not sent yet, once, before the first wait
        ("resuming", ["msg_1"]),
        ("resuming", ["msg_2"]),
    ]
    assert all(job.accepted for job in jobs) and len(provider.calls) == 3


async def test_a_group_taken_over_while_it_waited_is_not_sent_but_deferred() -> None:
    held = Held(taken={"msg_1"})
    jobs, provider, _ = await run(3, max_rate=2, hold=held)

    assert [at for at, _ in provider.calls] == pytest.approx([0, 1.0])  # msg_0 and msg_2
    assert jobs[1].paced and not jobs[1].attempts  # never handed to the provider here
    assert jobs[0].accepted and jobs[2].accepted


async def test_a_group_taken_over_stays_deferred_when_a_later_one_is_refused() -> None:
    held = Held(taken={"msg_1"})
    jobs, provider, _ = await run(5, max_rate=2, wait=1.0, hold=held)  # slots 0, 0.5, 1.0

    assert [at for at, _ in provider.calls] == pytest.approx([0, 1.0])  # msg_0 and msg_2
    assert [job.job_id for job in jobs if job.paced] == ["msg_1", "msg_3", "msg_4"]


async def test_a_send_that_never_waits_holds_nothing() -> None:
    held = Held()
    await run(3, max_rate=30, hold=held)  # a burst of 3: all at once
    assert held.heard == []
