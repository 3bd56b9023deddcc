"""Routing (D3, D4, D6, D7): hand jobs to an ordered chain of providers.

A chain is built hop by hop by :func:`hop_for`, at submit and at every re-dispatch (a
fallback after a report or a time-out, a D7 retry) alike, so a hop always sends with the
header D3 gives *its* connection.

Each job is tried on the first hop; the jobs a hop rejects or cannot reach move to the next
hop, all together, so a batch-capable provider still gets one request per batch at every
hop. Trying stops at the first ``accepted``, at a ``recipient_failed`` (another provider
would refuse the recipient too; but D36's escalation moves on to a next hop of another
channel) and at an ``unknown`` (the provider may have taken it:
another could send it twice). Every try is an :class:`Attempt`, in order, and
every try that did not take the message is logged with its cause.

With ``breakers`` (D26, live sends), each hop asks its connection's circuit breaker first:
an open (or paused) connection is skipped with no network call, every job getting an
``unavailable`` attempt with ``PROVIDER_CIRCUIT_OPEN``, and the jobs move on at once. A
half-open connection takes one job as its probe; the others move on. What the calls said is
handed back to the breaker.

Before each hop's call, the hand-over gate (D35, :class:`Gate`) judges the jobs about to
go: a job it stops is ``stopped`` (it ends ``failed`` with the gate's error, no attempt
made), a job it holds is ``held`` until a time (it waits ``queued``, like a paced job, and
the worker hands it over then, asking the gate again). This is the one function that hands
a message to a provider, so every path passes the gate: no caller can forget a rule.

With ``pacing`` (D27, live sends), a hop's calls keep to its connection's send rate
(:mod:`._send_pacing`): they wait for their slots, and the jobs no slot is free for within the
bound stop at that hop, *paced*: ``paced_until`` says when, ``paced_hop`` where. They are not
failures and move on to no fallback; the caller stores them ``queued`` for the worker.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from .._clock import Clock
from .._domain import Attempt, Connection, ErrorInfo, MessageRecord
from .._encoding import analyze_sms
from .._errors import SenderNotApproved, SenderRequired
from .._observability.tracing import provider_call_span
from .._types import AttemptStatus, Channel, Encoding, IysMode
from ..providers.base import (
    OutcomeKind,
    ProviderAdapter,
    ProviderTemplate,
    SubmitOutcome,
    SubmitRequest,
    uses_turkish_shift,
)
from ..providers.simulator import Simulator
from .breaker import CIRCUIT_OPEN, Admission, Breakers
from .send_pacing import Hold, SendPacing
from .split import split_refused
from .verdicts import HoldUntil, Stop, Verdict

__all__ = [
    "AdapterSource",
    "Gate",
    "Hop",
    "Job",
    "dispatch",
    "hop_for",
    "job_for",
    "resolve_sender",
]

logger = logging.getLogger("unified_messaging.routing")


@dataclass(frozen=True, slots=True)
class Hop:
    """One provider in a message's chain: its connection, adapter and message header."""

    connection: Connection
    adapter: ProviderAdapter
    sender: str | None


class AdapterSource(Protocol):
    """Protocol: where a hop's adapter comes from (the messenger's adapter pool)."""

    def for_connection(self, connection: Connection, *, livemode: bool) -> ProviderAdapter: ...


class Gate(Protocol):
    """Protocol: the hand-over gate (D35) :func:`dispatch` asks before each hop's call
    (:class:`~.gate.HandOverGate`)."""

    async def verdicts(self, jobs: Sequence[Job], hop: Hop) -> list[Verdict]:
        """One verdict per job, for handing it to ``hop`` now."""
        ...


def resolve_sender(sender: str | None, connection: Connection) -> str | None:
    """D3: the header ``connection`` sends with when the request asked for ``sender``
    (``None``: it named none), or the 422 that explains why there is none.

    The one place of the rule: a send resolves it for every hop of its chain, and a
    re-dispatch resolves it again, from the *requested* sender, for the hop it goes to.
    """
    if connection.channel != "sms":
        return None
    if sender is None:
        if connection.default_sender is None:
            raise SenderRequired(
                f"No sender given and the {connection.provider} connection has no default."
            )
        return connection.default_sender
    if connection.approved_senders and sender not in connection.approved_senders:
        raise SenderNotApproved(
            f"The sender is not approved for the {connection.provider} connection."
        )
    return sender


def hop_for(
    connection: Connection,
    adapters: AdapterSource,
    requested_sender: str | None,
    *,
    livemode: bool,
) -> Hop:
    """One hop of a chain: ``connection``, its adapter (D2: the simulator in test mode) and
    its D3 header for ``requested_sender``. Raises the :class:`MessagingError` that keeps
    the connection out of the chain (a 422 at submit, a refused attempt at re-dispatch)."""
    adapter = adapters.for_connection(connection, livemode=livemode)
    return Hop(connection, adapter, resolve_sender(requested_sender, connection))


@dataclass(slots=True)
class Job:
    """One logical message on its way through the chain (mutable while routing)."""

    job_id: str
    to: str
    text: str
    workspace_id: str
    template: ProviderTemplate | None = None
    attempts: list[Attempt] = field(default_factory=list)
    last_outcome: SubmitOutcome | None = None
    outcome_kinds: list[OutcomeKind] = field(default_factory=list)
    #: Index of the hop that answered last (the accepting one, when accepted).
    last_hop: int = -1
    #: D27: no send slot was free in time at hop ``paced_hop``; one should be at this time.
    #: Also set when the gate held it (``held``): at hop ``paced_hop``, until then.
    paced_until: datetime | None = None
    paced_hop: int = -1
    #: The stored message this send was built from (:func:`job_for`): what the gate judges.
    record: MessageRecord | None = None
    #: D35: the gate stopped it at hop ``last_hop``: it ends ``failed`` with this error.
    stopped: ErrorInfo | None = None
    #: D35: the gate held it (quiet hours) until ``paced_until``.
    held: bool = False
    #: Admission looked ``to`` up on this channel's suppression list in the same call that
    #: hands it over: the gate's first look for that channel is the same read, so it skips
    #: it once (and clears this); every later hand-over looks again.
    suppression_checked: Channel | None = None
    _encodings: dict[bool, tuple[Encoding, int]] = field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        return self.last_outcome is not None and self.last_outcome.kind == "accepted"

    @property
    def unknown(self) -> bool:
        """The last provider may have taken it: no fallback, no retry."""
        return self.last_outcome is not None and self.last_outcome.kind == "unknown"

    @property
    def paced(self) -> bool:
        return self.paced_until is not None

    @property
    def all_unavailable(self) -> bool:
        return bool(self.outcome_kinds) and all(k == "unavailable" for k in self.outcome_kinds)

    def sms_encoding(self, connection: Connection) -> tuple[Encoding, int]:
        """``(encoding, segments)`` as sent through ``connection`` (memoized): the Turkish
        shift only where the connection allows it and its provider can send it."""
        shift = uses_turkish_shift(connection)
        found = self._encodings.get(shift)
        if found is None:
            info = analyze_sms(self.text, allow_turkish_shift=shift)
            found = self._encodings[shift] = (info.encoding, info.segments)
        return found

    def iys_mode(self, connection: Connection) -> IysMode:
        """The İYS class this send is marked with at ``connection`` (D33): the message's,
        fixed at acceptance; a message stored before that, or a bare job, takes the
        connection's. Mutlucell, which cannot mark commercial traffic, refuses a commercial
        one without a call, and the chain moves on."""
        mode = self.record.iys_mode if self.record is not None else None
        return mode or connection.iys_mode

    def request_for(self, hop: Hop, attempt: int) -> SubmitRequest:
        connection = hop.connection
        encoding = self.sms_encoding(connection)[0] if hop.sender else None
        return SubmitRequest(
            job_id=self.job_id,
            to=self.to,
            text=self.text,
            sender=hop.sender,
            attempt=attempt,
            iys_mode=self.iys_mode(connection),
            encoding=encoding,
            template=self.template,
            workspace_id=self.workspace_id,
            connection_id=connection.id,
            one_time_code=self.record is not None and self.record.masked_text is not None,
        )


def job_for(record: MessageRecord) -> Job:
    """The send of a stored message: its recipient, text and provider template as the
    record keeps them. The one place a send is built, for the submit (from the write-ahead
    record) and for every re-send by the worker (a D27 slot, a D7 retry, a D6 fallback), so
    a re-send can never lose what the submit sent (a ``bizchat`` template going out as free
    text, which WhatsApp refuses outside the 24 h window). Each hop adds its own header
    (:func:`hop_for`) and encoding (:meth:`Job.request_for`)."""
    template = None
    if record.template_name is not None:
        language = record.template_language or ""
        template = ProviderTemplate(record.template_name, language, record.template_params)
    return Job(record.job_id, record.to, record.text, record.workspace_id, template, record=record)


async def dispatch(
    jobs: Sequence[Job],
    hops: Sequence[Hop],
    *,
    clock: Clock,
    gate: Gate,
    concurrency: int,
    first_attempt: int = 0,
    breakers: Breakers | None = None,
    pacing: SendPacing | None = None,
    hold: Hold[Job] | None = None,
) -> None:
    """Route every job through ``hops``; results are left on each job.

    ``gate`` judges the jobs before each hop's call (D35): stopped and held jobs go no
    further. ``first_attempt`` numbers the first hop's tries: a re-dispatch after a failed report
    continues the count of the message's attempts (providers and the simulator see it).
    ``breakers``: the circuit breakers to consult per hop (D26); ``None`` calls every hop.
    ``pacing``: the send rates to keep to (D27); ``None`` calls at once. ``hold``: told of
    the jobs that wait for their slots, before and after (:class:`~.send_pacing.Hold`).
    """
    limiter = asyncio.Semaphore(concurrency)
    pending = list(jobs)
    for index, hop in enumerate(hops):
        pending = await _through_gate(gate, pending, hop, index)
        if not pending:
            return
        calling, skipped = pending, []
        admission: Admission | None = None
        if breakers is not None:
            admission = await breakers.allow(hop.connection)
            if not admission.allowed:
                calling, skipped = [], pending
            elif admission.probe:
                calling, skipped = pending[:1], pending[1:]
        calling, outcomes = await _call(hop, index, calling, first_attempt, limiter, pacing, hold)
        if breakers is not None and admission is not None and (outcomes or admission.probe):
            # Always for a probe, even one our own send rate kept back (no outcome): the
            # breaker must hear of it, or its lease holds the connection shut (D26, D27).
            await breakers.record(hop.connection, outcomes, admission)
        now = clock.now()
        skip = _skipped(admission)
        _log_failures(hop, calling, outcomes)
        moving_on: list[Job] = []
        for job, outcome in [*zip(calling, outcomes, strict=True), *((j, skip) for j in skipped)]:
            job.attempts.append(_attempt(hop, outcome, now))
            job.last_outcome = outcome
            job.outcome_kinds.append(outcome.kind)
            job.last_hop = index
            if outcome.kind in ("rejected", "unavailable") or (
                outcome.kind == "recipient_failed" and _escalates(hops, index)
            ):
                moving_on.append(job)
        pending = moving_on


def _escalates(hops: Sequence[Hop], index: int) -> bool:
    """D36: the next hop is another channel, which a recipient this one cannot reach (not
    on WhatsApp, a template refused) may still get: the escalation moves on to it."""
    if index + 1 >= len(hops):
        return False
    return hops[index + 1].connection.channel != hops[index].connection.channel


async def _through_gate(gate: Gate, jobs: list[Job], hop: Hop, index: int) -> list[Job]:
    """The jobs the gate lets go to ``hop`` now; the others are marked stopped or held."""
    if not jobs:
        return jobs
    going: list[Job] = []
    for job, verdict in zip(jobs, await gate.verdicts(jobs, hop), strict=True):
        if isinstance(verdict, Stop):
            job.stopped, job.last_hop = verdict.error, index
        elif isinstance(verdict, HoldUntil):
            job.paced_until, job.paced_hop, job.held = verdict.until, index, True
        else:
            going.append(job)
    return going


async def _call(
    hop: Hop,
    index: int,
    jobs: list[Job],
    first_attempt: int,
    limiter: asyncio.Semaphore,
    pacing: SendPacing | None,
    hold: Hold[Job] | None,
) -> tuple[list[Job], list[SubmitOutcome]]:
    """Call ``hop`` for ``jobs``: the jobs called, and what each call said. Under ``pacing``
    the jobs no slot was free for are marked paced and left out of both. A batch the
    provider refused as a whole, naming no culprit, is sent again in halves, paced the same
    way, until the refusal falls on the guilty messages alone (:mod:`.split`)."""

    def submit(group: Sequence[Job]) -> Awaitable[list[SubmitOutcome]]:
        requests = [job.request_for(hop, first_attempt + index) for job in group]
        return _submit_all(hop.adapter, requests, limiter)

    # The halves of a refused batch share the first call's bound (D27: max_wait bounds the
    # whole send); what misses it is queued for the worker like any paced job.
    deadline = pacing.deadline() if pacing is not None else None

    async def once(group: list[Job]) -> tuple[list[Job], list[SubmitOutcome]]:
        if pacing is None:
            return group, await submit(group)
        paced = await pacing.send(
            hop.connection, hop.adapter.max_batch, group, submit, hold, deadline=deadline
        )
        for job, due in paced.deferred:
            job.paced_until, job.paced_hop = due, index
        return paced.sent, paced.outcomes

    if not jobs:
        return [], []
    called, outcomes = await once(jobs)
    return await split_refused(called, outcomes, once)


def _skipped(admission: Admission | None) -> SubmitOutcome:
    """The outcome of a job the breaker kept from the hop: ``unavailable`` (D7 applies)."""
    refusal = admission.refusal if admission is not None else None
    if refusal is None:  # a half-open hop's other jobs: its one probe is out
        return SubmitOutcome.unavailable(
            "Not called: the circuit is half-open and its one probe is out.", code=CIRCUIT_OPEN
        )
    return SubmitOutcome.unavailable(refusal.message, code=refusal.code)


def _log_failures(hop: Hop, jobs: Sequence[Job], outcomes: Sequence[SubmitOutcome]) -> None:
    """One log line per distinct failure of a hop's calls, with its cause: a
    batch that failed as one is one line, not two hundred. Outcomes carry no credential
    (the adapters mask them), and the line names no recipient and no text. A provider
    that may have taken the message or could not be reached is a warning; a refusal is
    news, not trouble; the simulator's (test keys) only for debugging."""
    seen: dict[tuple[str, str, str], list[str]] = {}
    for job, outcome in zip(jobs, outcomes, strict=True):
        if outcome.kind == "accepted" or outcome.error is None:
            continue
        key = (outcome.kind, outcome.error.code, outcome.error.message)
        seen.setdefault(key, []).append(job.job_id)
    for (kind, code, message), job_ids in seen.items():
        level = logging.INFO if kind in ("rejected", "recipient_failed") else logging.WARNING
        if isinstance(hop.adapter, Simulator):
            level = logging.DEBUG  # a test key's failure is a magic number asking for it
        shown = job_ids[0] if len(job_ids) == 1 else f"{job_ids[0]} and {len(job_ids) - 1} more"
        logger.log(
            level,
            "%s (connection %s) %s for %s: %s: %s",
            hop.connection.provider, hop.connection.id, kind, shown, code, message,
        )  # fmt: skip


def _attempt_status(outcome: SubmitOutcome) -> AttemptStatus:
    """An attempt's status from its outcome: ``unknown`` keeps the report able to settle it."""
    if outcome.kind in ("accepted", "unknown", "unavailable"):
        return outcome.kind
    return "rejected"


def _attempt(hop: Hop, outcome: SubmitOutcome, now: datetime) -> Attempt:
    return Attempt(
        provider=hop.connection.provider,
        status=_attempt_status(outcome),
        at=now,
        provider_message_id=outcome.provider_message_id,
        error=outcome.error,
    )


async def _submit_all(
    adapter: ProviderAdapter, requests: list[SubmitRequest], limiter: asyncio.Semaphore
) -> list[SubmitOutcome]:
    if len(requests) == 1:
        return [await _guarded_submit(adapter, requests[0])]
    size = max(1, adapter.max_batch)
    if size > 1:
        chunks = [requests[i : i + size] for i in range(0, len(requests), size)]
        answers = await asyncio.gather(*(_guarded_batch(adapter, c, limiter) for c in chunks))
        return [outcome for answer in answers for outcome in answer]

    async def one(request: SubmitRequest) -> SubmitOutcome:
        async with limiter:
            return await _guarded_submit(adapter, request)

    return list(await asyncio.gather(*(one(r) for r in requests)))


async def _guarded_submit(adapter: ProviderAdapter, request: SubmitRequest) -> SubmitOutcome:
    with provider_call_span(adapter.code, [request]) as traced:
        try:
            outcome = await adapter.submit(request)
        except Exception as exc:
            # An adapter is supposed to map every failure to an outcome; one that raises
            # anyway must not lose the job: it may or may not have left, so "unavailable".
            outcome = _crashed(adapter, exc)
        traced.outcomes([outcome])
        return outcome


async def _guarded_batch(
    adapter: ProviderAdapter, requests: list[SubmitRequest], limiter: asyncio.Semaphore
) -> list[SubmitOutcome]:
    async with limiter:
        with provider_call_span(adapter.code, requests) as traced:
            try:
                outcomes = await adapter.submit_batch(requests)
            except Exception as exc:
                outcomes = [_crashed(adapter, exc)] * len(requests)
            traced.outcomes(outcomes)
    if len(outcomes) != len(requests):
        logger.error(
            "%s returned %d outcomes for %d requests", adapter.code, len(outcomes), len(requests)
        )
        # The provider answered: some of these may have been taken.
        unmatched = SubmitOutcome.unknown("The provider's answer could not be matched to them.")
        return [unmatched] * len(requests)
    return outcomes


def _crashed(adapter: ProviderAdapter, exc: Exception) -> SubmitOutcome:
    logger.error("adapter %s raised %s", adapter.code, type(exc).__name__)
    return SubmitOutcome.unavailable("The provider could not be reached.")
