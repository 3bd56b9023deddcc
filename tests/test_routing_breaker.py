"""``_routing.dispatch`` with circuit breakers (D26): an open hop is skipped with no call and an
``unavailable`` attempt coded ``PROVIDER_CIRCUIT_OPEN``; a half-open hop takes one probe job."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from fakes.gates import OPEN

from unified_messaging._clock import ManualClock
from unified_messaging._domain import Connection
from unified_messaging._routing.breaker import SharedBreakers
from unified_messaging._routing.dispatch import Hop, Job, dispatch
from unified_messaging._types import ProviderCode
from unified_messaging.providers.base import (
    InboundCallback,
    ProviderReport,
    SubmitOutcome,
    SubmitRequest,
)
from unified_messaging.store.memory import MemoryStore

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class Scripted:
    """An adapter that answers every call with one outcome and counts its calls."""

    max_batch = 1

    def __init__(self, code: ProviderCode, outcome: SubmitOutcome) -> None:
        self._code: ProviderCode = code
        self.outcome = outcome
        self.calls: list[str] = []

    @property
    def code(self) -> ProviderCode:
        return self._code

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        self.calls.append(request.job_id)
        return self.outcome

    async def submit_batch(self, requests: Sequence[SubmitRequest]) -> list[SubmitOutcome]:
        return [await self.submit(r) for r in requests]

    def parse_reports(self, callback: InboundCallback) -> list[ProviderReport]:
        return []

    async def poll_reports(self, provider_message_ids: Sequence[str]) -> list[ProviderReport]:
        return []

    async def aclose(self) -> None:
        return


def hop(code: ProviderCode, adapter: Scripted) -> Hop:
    connection = Connection(f"conn_{code}", "ws_1", code, START, "x", default_sender="ACME")
    return Hop(connection, adapter, "ACME")


def jobs(count: int) -> list[Job]:
    return [Job(f"msg_{n}", "+905551234567", "Kod 1", "ws_1") for n in range(count)]


async def open_circuit(breakers: SharedBreakers, first: Hop) -> None:
    down = SubmitOutcome.unavailable("The provider did not answer in time.")
    for _ in range(5):
        admission = await breakers.allow(first.connection)
        await breakers.record(first.connection, [down], admission)


async def test_an_open_hop_is_skipped_without_a_call_and_the_next_one_sends() -> None:
    clock = ManualClock(START)
    breakers = SharedBreakers(MemoryStore(), clock, probe_lease=timedelta(minutes=2))
    a = Scripted("sms_a", SubmitOutcome.accepted("a1"))
    b = Scripted("sms_b", SubmitOutcome.accepted("b1"))
    hops = [hop("sms_a", a), hop("sms_b", b)]
    await open_circuit(breakers, hops[0])
    batch = jobs(3)

    await dispatch(batch, hops, clock=clock, gate=OPEN, concurrency=4, breakers=breakers)

    assert a.calls == []
    assert len(b.calls) == 3
    for job in batch:
        assert job.accepted
        skipped, sent = job.attempts
        assert (skipped.provider, skipped.status) == ("sms_a", "unavailable")
        assert skipped.error is not None and skipped.error.code == "PROVIDER_CIRCUIT_OPEN"
        assert (sent.provider, sent.status) == ("sms_b", "accepted")
        assert job.outcome_kinds == ["unavailable", "accepted"]


async def test_every_hop_open_leaves_the_jobs_all_unavailable() -> None:
    clock = ManualClock(START)
    breakers = SharedBreakers(MemoryStore(), clock, probe_lease=timedelta(minutes=2))
    a = Scripted("sms_a", SubmitOutcome.accepted("a1"))
    hops = [hop("sms_a", a)]
    await open_circuit(breakers, hops[0])
    (job,) = jobs(1)

    await dispatch([job], hops, clock=clock, gate=OPEN, concurrency=1, breakers=breakers)

    assert a.calls == []
    assert job.all_unavailable and not job.accepted
    assert job.last_outcome is not None and job.last_outcome.error is not None
    assert job.last_outcome.error.code == "PROVIDER_CIRCUIT_OPEN"


async def test_a_half_open_hop_sends_one_probe_and_the_rest_fall_back() -> None:
    clock = ManualClock(START)
    breakers = SharedBreakers(MemoryStore(), clock, probe_lease=timedelta(minutes=2))
    a = Scripted("sms_a", SubmitOutcome.accepted("a1"))
    b = Scripted("sms_b", SubmitOutcome.accepted("b1"))
    hops = [hop("sms_a", a), hop("sms_b", b)]
    await open_circuit(breakers, hops[0])
    clock.advance(30)
    batch = jobs(4)

    await dispatch(batch, hops, clock=clock, gate=OPEN, concurrency=4, breakers=breakers)

    assert a.calls == ["msg_0"]
    assert b.calls == ["msg_1", "msg_2", "msg_3"]
    assert (await breakers.health(hops[0].connection)).state == "closed"  # the probe succeeded


async def test_without_breakers_every_hop_is_called() -> None:
    clock = ManualClock(START)
    breakers = SharedBreakers(MemoryStore(), clock, probe_lease=timedelta(minutes=2))
    a = Scripted("sms_a", SubmitOutcome.accepted("a1"))
    hops = [hop("sms_a", a)]
    await open_circuit(breakers, hops[0])

    await dispatch(jobs(2), hops, clock=clock, gate=OPEN, concurrency=2)

    assert len(a.calls) == 2
