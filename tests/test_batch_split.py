"""``_routing.dispatch`` splitting a batch the provider refused as a whole: for any
batch and any guilty messages in it, only the guilty end refused, the rest are accepted, and the
calls stay within the bound docs/decisions.md gives (``2 (n - 1)`` more at most; about
``2 log2 n`` more for one guilty message).

The provider edge is a batch adapter that refuses a whole request, naming no culprit, when any
message of it is guilty, as Verimor does for a 24-hour duplicate.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from datetime import UTC, datetime

from fakes.gates import OPEN
from hypothesis import given, settings
from hypothesis import strategies as st

from unified_messaging._clock import ManualClock
from unified_messaging._domain import Connection
from unified_messaging._routing.dispatch import Hop, Job, dispatch
from unified_messaging._types import ProviderCode
from unified_messaging.providers.base import (
    InboundCallback,
    ProviderReport,
    SubmitOutcome,
    SubmitRequest,
)

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class RefusesWholeBatches:
    """A batch provider that refuses a request as a whole when any of its texts is guilty."""

    max_batch = 100

    def __init__(self, guilty: set[str]) -> None:
        self.guilty = guilty
        self.calls: list[int] = []

    @property
    def code(self) -> ProviderCode:
        return "sms_c"

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        return (await self.submit_batch([request]))[0]

    async def submit_batch(self, requests: Sequence[SubmitRequest]) -> list[SubmitOutcome]:
        self.calls.append(len(requests))
        if any(r.text in self.guilty for r in requests):
            refusal = SubmitOutcome.rejected("DUPLICATE_MESSAGE", "A same-day repeat.")
            return refusal.refused_together(len(requests))
        return [SubmitOutcome.accepted(f"c{len(self.calls)}:{r.to}") for r in requests]

    def parse_reports(self, callback: InboundCallback) -> list[ProviderReport]:
        return []

    async def poll_reports(self, provider_message_ids: Sequence[str]) -> list[ProviderReport]:
        return []

    async def aclose(self) -> None:
        return


def route(size: int, guilty: set[int]) -> tuple[list[Job], RefusesWholeBatches]:
    adapter = RefusesWholeBatches({f"text {i}" for i in guilty})
    connection = Connection("conn_c", "ws_1", "sms_c", START, "x", default_sender="ACME")
    jobs = [Job(f"msg_{i}", f"+90532{i:07d}", f"text {i}", "ws_1") for i in range(size)]
    hops = [Hop(connection, adapter, "ACME")]
    asyncio.run(dispatch(jobs, hops, clock=ManualClock(START), gate=OPEN, concurrency=4))
    return jobs, adapter


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 100).flatmap(lambda n: st.tuples(st.just(n), st.sets(st.integers(0, n - 1)))))
def test_only_the_guilty_messages_of_a_refused_batch_fail(
    case: tuple[int, set[int]],
) -> None:
    size, guilty = case
    jobs, adapter = route(size, guilty)

    for index, job in enumerate(jobs):
        outcome = job.last_outcome
        assert outcome is not None and not outcome.batch_refusal
        assert outcome.kind == ("rejected" if index in guilty else "accepted")
        assert len(job.attempts) == 1  # the re-sends are one try at one provider
    assert len(adapter.calls) <= 1 + 2 * (size - 1)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 100).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 1))))
def test_one_guilty_message_costs_about_two_log2_n_more_calls(case: tuple[int, int]) -> None:
    size, culprit = case
    _, adapter = route(size, {culprit})

    assert len(adapter.calls) <= 1 + 2 * math.ceil(math.log2(size))


def test_a_message_refused_alone_is_never_sent_again() -> None:
    jobs, adapter = route(1, {0})

    assert adapter.calls == [1]
    assert jobs[0].last_outcome is not None and jobs[0].last_outcome.kind == "rejected"
