"""Finding the guilty messages of a batch the provider refused as a whole.

Some refusals fall on a whole provider request for one of its messages without naming it:
Verimor's ``MUKERRER_RAPORLAMA`` (a 24-hour duplicate) or ``FORBIDDEN_MESSAGE``, İletimerkezi's
451 and 453, NetGSM's 20. The adapter marks each outcome of such a request
``batch_refusal`` (:meth:`~..providers.base.SubmitOutcome.refused_together`); nothing of it
was sent, so sending again is safe. Here the refused messages are sent again by bisection:
each refused group in two halves, each half one call (or a few, where the adapter splits it by
header), until every refusal falls on a request of one message, which names its culprit.

Why bisection (docs/decisions.md): a batch refused for one message costs about
``2 log2 n`` more calls (15 for a batch of 100) where one by one costs ``n`` (100), and every
call counts against the connection's send rate (D27: the calls go through the same pacing as
the first); ``k`` guilty messages cost about ``2 k log2(n / k)``. The bound holds whatever the
provider says: a group is only ever split into strictly smaller halves, and a message alone is
never sent again, so a batch of ``n`` costs at most ``2 (n - 1)`` more calls.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TypeVar

from ..providers.base import SubmitOutcome

__all__ = ["Call", "split_refused"]

J = TypeVar("J")

#: Sends some jobs through the hop, paced: the jobs called (those no send slot was found for
#: are left out: they wait for the worker) and what each call said, in that order.
Call = Callable[[list[J]], Awaitable[tuple[list[J], list[SubmitOutcome]]]]


async def split_refused(
    jobs: Sequence[J], outcomes: Sequence[SubmitOutcome], call: Call[J]
) -> tuple[list[J], list[SubmitOutcome]]:
    """``jobs`` and their ``outcomes`` with every ``batch_refusal`` resolved by sending the
    refused jobs again in halves through ``call``: the jobs that ended with an answer, in
    their order, and each one's final outcome (never a ``batch_refusal``)."""
    latest: dict[int, SubmitOutcome] = {}
    final: dict[int, SubmitOutcome] = {}
    refused: list[J] = []
    for job, outcome in zip(jobs, outcomes, strict=True):
        latest[id(job)] = outcome
        if outcome.batch_refusal:
            refused.append(job)
        else:
            final[id(job)] = outcome
    groups = [refused] if refused else []
    while groups:
        group = groups.pop()
        if len(group) == 1:  # refused alone: the refusal is its own
            final[id(group[0])] = replace(latest[id(group[0])], batch_refusal=False)
            continue
        middle = len(group) // 2
        for half in (group[:middle], group[middle:]):
            again = await _send_again(half, call, latest, final)
            if again:
                groups.append(again)
    ended = [job for job in jobs if id(job) in final]
    return ended, [final[id(job)] for job in ended]


async def _send_again(
    half: list[J], call: Call[J], latest: dict[int, SubmitOutcome], final: dict[int, SubmitOutcome]
) -> list[J]:
    """Send ``half`` once; the jobs refused together again, to be split further."""
    called, outcomes = await call(half)
    again: list[J] = []
    for job, outcome in zip(called, outcomes, strict=True):
        latest[id(job)] = outcome
        if outcome.batch_refusal and len(half) > 1:
            again.append(job)
        else:
            final[id(job)] = replace(outcome, batch_refusal=False)
    return again
