"""The metrics seam (D30): what the library counts and times, behind one Protocol.

``Messenger(metrics=...)`` takes a :class:`Metrics`; the default, :data:`NO_METRICS`,
records nothing and costs one identity check per call site. The Prometheus implementation
is :class:`~unified_messaging.PrometheusMetrics` (the ``metrics`` extra).

The call sites hand over domain facts (a finished send's records and jobs, a provider call,
a message that reached its final state, a batch of reports, a webhook attempt, a refusal);
the ``record_*`` helpers here turn them into labelled observations, so each call site stays
one line and the label rules live in one place:

- labels are closed vocabularies only: provider codes, channels, statuses, outcome kinds,
  error codes, work kinds, ``mode`` (``live``/``test``);
- never a recipient, a body, a sender, a key or a secret; a workspace id only reaches
  :meth:`Metrics.message`, and an implementation drops it unless the operator asked for it.

The scrape side (gauges read from the store when ``/metrics`` is asked) is a
:class:`StoreSnapshot`, taken by :func:`take_snapshot` with one cheap store query.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Final, Literal, Protocol, runtime_checkable

from .._errors import MessagingError, StorageUnavailable
from .._lifecycle.rules import FINAL_STATUSES

if TYPE_CHECKING:
    from .._domain import MessageRecord
    from .._routing.dispatch import Job
    from ..accounts.records import ProviderAccount
    from ..providers.base import ProviderReport, SubmitOutcome
    from ..store.base import Store, WorkStats
    from ..webhooks._sender import DeliveryResult

__all__ = [
    "NO_METRICS",
    "RATE_LIMIT_CODES",
    "CircuitReading",
    "CircuitSource",
    "Metrics",
    "MetricsExposition",
    "NoMetrics",
    "StoreSnapshot",
    "VerificationMetrics",
    "counting_refusals",
    "record_redispatch",
    "record_reports",
    "record_sends",
    "record_settled",
    "record_webhook",
    "take_snapshot",
    "timed_batch",
    "timed_submit",
]

logger = logging.getLogger("unified_messaging.metrics")

#: The 429 codes ``um_rate_limited_total`` counts (D14, D16, D17, D28).
RATE_LIMIT_CODES: Final = frozenset({"RATE_LIMITED", "QUOTA_EXCEEDED", "RECIPIENT_RATE_LIMITED"})
#: An attempt routing never made because the connection's circuit was open (D26).
_CIRCUIT_OPEN: Final = "PROVIDER_CIRCUIT_OPEN"
#: A webhook attempt's outcome (``_webhook_sender.DeliveryOutcome``) as the metric names it.
_WEBHOOK_RESULTS: Final = {
    "success": "delivered",
    "retry": "failed",
    "disable": "gone",
    "refused": "refused",
}

Mode = Literal["live", "test"]


@runtime_checkable
class Metrics(Protocol):
    """Protocol: where the library's counters and timings go (D30).

    Each method runs on a hot path: it must be cheap, must not block and must never raise.
    Every argument is a closed vocabulary (see the module doc) except ``workspace_id``,
    which an implementation keeps only when the operator asked for workspace labels.
    """

    def message(
        self, *, provider: str, channel: str, outcome: str, mode: Mode, workspace_id: str
    ) -> None:
        """A message's outcome at send time: ``sent``, ``queued``, ``failed``, ``delivered``
        (a chat channel's final answer) or ``rejected`` (refused before any provider)."""
        ...

    def attempt(self, *, provider: str, result: str, mode: Mode) -> None:
        """One try of one message at one provider: ``accepted``, ``rejected``,
        ``recipient_failed``, ``unavailable`` or ``circuit_open`` (skipped, no call)."""
        ...

    def fallback(self, *, from_provider: str, to_provider: str, mode: Mode) -> None:
        """A message moved on from one provider to the next (at submit or later)."""
        ...

    def provider_call(self, *, provider: str, outcome: str, seconds: float) -> None:
        """One live provider request (a submit or a batch submit) and how long it took."""
        ...

    def delivery(self, *, provider: str, status: str, mode: Mode, seconds: float) -> None:
        """A message reached its final state: seconds from its provider's acceptance."""
        ...

    def report(self, *, provider: str, status: str, mode: Mode) -> None:
        """One delivery report received (pushed, polled or simulated)."""
        ...

    def webhook_delivery(self, *, result: str) -> None:
        """One webhook attempt: ``delivered``, ``failed``, ``gone`` (410) or ``refused``."""
        ...

    def rate_limited(self, *, code: str) -> None:
        """A request, or a bulk item, refused with one of :data:`RATE_LIMIT_CODES`."""
        ...


class NoMetrics:
    """Records nothing: the default of :class:`~unified_messaging.Messenger`."""

    def message(
        self, *, provider: str, channel: str, outcome: str, mode: Mode, workspace_id: str
    ) -> None:
        return None

    def attempt(self, *, provider: str, result: str, mode: Mode) -> None:
        return None

    def fallback(self, *, from_provider: str, to_provider: str, mode: Mode) -> None:
        return None

    def provider_call(self, *, provider: str, outcome: str, seconds: float) -> None:
        return None

    def delivery(self, *, provider: str, status: str, mode: Mode, seconds: float) -> None:
        return None

    def report(self, *, provider: str, status: str, mode: Mode) -> None:
        return None

    def webhook_delivery(self, *, result: str) -> None:
        return None

    def rate_limited(self, *, code: str) -> None:
        return None

    def verification(self, *, channel: str, event: str, mode: Mode) -> None:
        return None

    def verification_approved(self, *, channel: str, mode: Mode, seconds: float) -> None:
        return None

    def verification_refused(self, *, reason: str) -> None:
        return None

    def __repr__(self) -> str:
        return "NoMetrics()"


NO_METRICS: Final = NoMetrics()


@runtime_checkable
class VerificationMetrics(Protocol):
    """Protocol: where Verify's counts go (D34), beside :class:`Metrics`.

    A protocol of its own, so a :class:`Metrics` written before Verify stays one: the
    library records these only into metrics that have them (:class:`NoMetrics` and
    ``PrometheusMetrics`` do). ``channel`` is the code's channel, ``event`` one of
    ``started``, ``approved``, ``failed``, ``expired``, ``canceled``.
    """

    def verification(self, *, channel: str, event: str, mode: Mode) -> None:
        """A verification started, or ended in ``event``."""
        ...

    def verification_approved(self, *, channel: str, mode: Mode, seconds: float) -> None:
        """A verification was approved ``seconds`` after it started."""
        ...

    def verification_refused(self, *, reason: str) -> None:
        """The SMS-pumping guard refused a start: ``prefix`` or ``address``."""
        ...


# ---------------------------------------------------------------------- the scrape side


@dataclass(frozen=True, slots=True)
class CircuitReading:
    """One connection's circuit breaker as a scrape shows it (D26): ``closed``, ``open``,
    ``half_open`` or ``paused``."""

    provider: str
    connection_id: str
    state: str


class CircuitSource(Protocol):
    """Protocol: where a scrape reads the circuit breakers' states from (the hook for D26's
    breakers; ``um_circuit_state`` is left out while none is given)."""

    async def circuit_states(self) -> Sequence[CircuitReading]: ...


@dataclass(frozen=True, slots=True)
class StoreSnapshot:
    """What a scrape reads from the store, at ``now``: the due work by kind (``None``: the
    store could not be read) and the circuit states (``None``: no source)."""

    now: datetime
    work: Sequence[WorkStats] | None
    circuits: Sequence[CircuitReading] | None = None
    #: The provider accounts as last read (``None``: the store could not be read).
    accounts: Sequence[ProviderAccount] | None = None


@runtime_checkable
class MetricsExposition(Protocol):
    """Protocol: metrics that ``GET /metrics`` can render (``PrometheusMetrics``)."""

    @property
    def content_type(self) -> str: ...

    def exposition(self, snapshot: StoreSnapshot) -> bytes:
        """The whole scrape: the counters and histograms, and the gauges of ``snapshot``."""
        ...


async def take_snapshot(
    store: Store, now: datetime, circuits: CircuitSource | None = None
) -> StoreSnapshot:
    """The store's side of a scrape. A store that cannot be read leaves its gauges out (and
    ``um_store_up`` at 0) rather than failing the scrape: the counters still matter then."""
    try:
        work: Sequence[WorkStats] | None = await store.work_stats(now)
    except StorageUnavailable:
        logger.warning("metrics scrape: the store could not be read; its gauges are left out")
        work = None
    readings = None
    if circuits is not None:
        try:
            readings = await circuits.circuit_states()
        except StorageUnavailable:
            readings = None
    accounts: Sequence[ProviderAccount] | None = None
    if work is not None:
        try:
            accounts = await store.list_accounts()
        except StorageUnavailable:
            accounts = None
    return StoreSnapshot(now, work, readings, accounts)


# ---------------------------------------------------------------------- call-site helpers


def _mode(livemode: bool) -> Mode:
    return "live" if livemode else "test"


def _send_outcome(record: MessageRecord) -> str:
    if record.status == "failed" and not record.attempts:
        return "rejected"  # refused before any provider: a bad recipient, the flood guard
    return record.status


def record_sends(metrics: Metrics, records: Sequence[MessageRecord], jobs: Sequence[Job]) -> None:
    """A finished send or bulk: each message's outcome, each job's attempts and fallbacks,
    and the bulk items the flood guard refused (counted as rate-limited)."""
    if metrics is NO_METRICS:
        return
    for record in records:
        metrics.message(
            provider=record.provider,
            channel=record.channel,
            outcome=_send_outcome(record),
            mode=_mode(record.livemode),
            workspace_id=record.workspace_id,
        )
        if record.error is not None and record.error.code in RATE_LIMIT_CODES:
            metrics.rate_limited(code=record.error.code)
    livemode = records[0].livemode if records else True
    for job in jobs:
        _record_job(metrics, job, _mode(livemode), previous=None)


def record_redispatch(
    metrics: Metrics, record: MessageRecord, job: Job, *, retry: bool = False
) -> None:
    """A re-dispatch of ``record`` (as it was before it): the attempts, and the fallback
    from the provider it had to the first one tried now. A D7 retry (``retry``) tries the
    chain again from its start: that is no fallback."""
    if metrics is NO_METRICS:
        return
    previous = record.attempts[-1].provider if record.attempts and not retry else None
    _record_job(metrics, job, _mode(record.livemode), previous=previous)


def _record_job(metrics: Metrics, job: Job, mode: Mode, *, previous: str | None) -> None:
    for attempt, kind in zip(job.attempts, job.outcome_kinds, strict=False):
        error = attempt.error
        result = "circuit_open" if error is not None and error.code == _CIRCUIT_OPEN else kind
        metrics.attempt(provider=attempt.provider, result=result, mode=mode)
        if previous is not None and previous != attempt.provider:
            metrics.fallback(from_provider=previous, to_provider=attempt.provider, mode=mode)
        previous = attempt.provider


def record_settled(metrics: Metrics, before: MessageRecord, after: MessageRecord) -> None:
    """A stored change: when it took the message to a final state, how long that took
    from the accepting provider's submit (``sent_at``, as ``stats`` measures it). A
    message no provider accepted has no such time and is not observed."""
    if metrics is NO_METRICS or after.status not in FINAL_STATUSES:
        return
    if before.status in FINAL_STATUSES or after.sent_at is None or after.final_at is None:
        return  # already final (a late report replacing unknown), or never accepted
    seconds = max(0.0, (after.final_at - after.sent_at).total_seconds())
    metrics.delivery(
        provider=after.provider, status=after.status, mode=_mode(after.livemode), seconds=seconds
    )


def record_reports(
    metrics: Metrics, provider: str, reports: Sequence[ProviderReport], *, livemode: bool
) -> None:
    """Reports received for one connection, by the status each carries."""
    if metrics is NO_METRICS:
        return
    mode = _mode(livemode)
    for report in reports:
        metrics.report(provider=provider, status=report.status, mode=mode)


def record_webhook(metrics: Metrics, result: DeliveryResult) -> None:
    """One webhook attempt's result (the sender's outcome, in the metric's words)."""
    metrics.webhook_delivery(result=_WEBHOOK_RESULTS.get(result.outcome, result.outcome))


@contextmanager
def counting_refusals(metrics: Metrics) -> Iterator[None]:
    """Count a 429 (quota, flood guard) raised inside, by its code; it still propagates."""
    try:
        yield
    except MessagingError as error:
        if error.code in RATE_LIMIT_CODES:
            metrics.rate_limited(code=error.code)
        raise


async def timed_submit(
    metrics: Metrics, provider: str, call: Awaitable[SubmitOutcome]
) -> SubmitOutcome:
    """Await one provider submit, observing its duration and outcome kind (``error`` if it
    raised: routing turns that into ``unavailable``)."""
    if metrics is NO_METRICS:
        return await call
    started = time.perf_counter()
    outcome = "error"
    try:
        answer = await call
        outcome = answer.kind
        return answer
    finally:
        metrics.provider_call(
            provider=provider, outcome=outcome, seconds=time.perf_counter() - started
        )


async def timed_batch(
    metrics: Metrics, provider: str, call: Awaitable[list[SubmitOutcome]]
) -> list[SubmitOutcome]:
    """:func:`timed_submit` for a batch request: one observation, whose outcome is the
    kind all its messages share, or ``mixed``."""
    if metrics is NO_METRICS:
        return await call
    started = time.perf_counter()
    outcome = "error"
    try:
        answers = await call
        kinds = {answer.kind for answer in answers}
        outcome = kinds.pop() if len(kinds) == 1 else "mixed"
        return answers
    finally:
        metrics.provider_call(
            provider=provider, outcome=outcome, seconds=time.perf_counter() - started
        )
