"""The hand-over gate (D35): the rules asked at the moment a message goes to a provider.

:func:`~.dispatch.dispatch` is the one function that hands messages to providers, for
every path (first send, scheduled, D7 retry, fallback hop, D27 paced, campaign row, re-send
after a crash), and it asks the gate before each hop's call. The gate answers for each
message, with the rules in this order:

1. canceled: a message canceled meanwhile is never handed over;
2. suppressed for the channel (Telegram ``@usernames`` case-folded); not read
   again at the first hand-over of a send whose admission read it in the same call
   (``Job.suppression_checked``): every later hand-over reads it;
3. queue TTL: a message not handed over within its workspace's ``queue_ttl`` of being due
   ends ``failed`` (D7);
4. consent (D33, :class:`ConsentCheck`: ``iys.IysConsentCheck``, which asks our records
   under the workspace's policy ``local``, and İYS too under ``iys``; a message İYS cannot
   be asked about in time is held and asked again);
5. quiet hours: held until the window ends (DST-correct, :meth:`QuietHours.opens_at`);
6. then the call.

A message the gate stops ends with the code admission would have given it at submit
(``RECIPIENT_SUPPRESSED``, ``IYS_CONSENT_MISSING``, ``CANCELED``), without a provider
attempt, and gives its quota unit back (D17: no provider took it). A rule added later is
added here, once.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final, Protocol

from .._clock import Clock
from .._domain import Connection, ErrorInfo, MessageRecord, Workspace
from .._quota import provider_took
from .._schedule import hand_over_at
from .._types import Channel
from ..suppressions._rules import suppressed_refusal, suppression_key
from .dispatch import Hop, Job
from .verdicts import CANCELED, GO, QUEUE_EXPIRED, HoldUntil, Stop, Verdict, no_provider_reached

__all__ = [
    "NO_CONSENT_CHECK",
    "ConsentCheck",
    "Gates",
    "HandOverGate",
    "SuppressionLookup",
]


class SuppressionLookup(Protocol):
    """Protocol: the store's suppression list (``Store.suppressed``)."""

    async def suppressed(
        self, workspace_id: str, livemode: bool, channel: Channel, recipients: Sequence[str]
    ) -> set[str]: ...


class ConsentCheck(Protocol):
    """Protocol: the consent rule (D33), asked for the messages the earlier rules let
    through: an error (``IYS_CONSENT_MISSING``) for each one that may not go, a
    :class:`HoldUntil` for one that cannot be judged now, else ``None``. ``workspace`` is
    the one whose messages they are, by its settings now (its ``consent_policy``);
    ``consents.LocalConsentCheck`` and ``iys.IysConsentCheck`` implement it."""

    async def refusals(
        self,
        records: Sequence[MessageRecord],
        connection: Connection,
        *,
        now: datetime,
        workspace: Workspace,
    ) -> Sequence[ErrorInfo | HoldUntil | None]: ...


class _NoConsentCheck:
    async def refusals(
        self,
        records: Sequence[MessageRecord],
        connection: Connection,
        *,
        now: datetime,
        workspace: Workspace,
    ) -> list[ErrorInfo | None]:
        return [None] * len(records)


#: Consent left to the providers (their İYS refusal maps to ``IYS_CONSENT_MISSING``).
NO_CONSENT_CHECK: Final[ConsentCheck] = _NoConsentCheck()


class HandOverGate:
    """The gate of one workspace, at one hand-over (cheap: build one per dispatch)."""

    def __init__(
        self,
        workspace: Workspace,
        suppressions: SuppressionLookup,
        clock: Clock,
        *,
        consent: ConsentCheck = NO_CONSENT_CHECK,
    ) -> None:
        self._workspace = workspace
        self._suppressions = suppressions
        self._clock = clock
        self._consent = consent

    async def verdicts(self, jobs: Sequence[Job], hop: Hop) -> list[Verdict]:
        """D35, in its order; one suppression lookup and one consent call for all ``jobs``."""
        now = self._clock.now()
        records = [_record_of(job) for job in jobs]
        verdicts: list[Verdict | None] = [_canceled(record) for record in records]
        channel = hop.connection.channel
        # Admission just read the list for these (one send or bulk, handed over at once).
        checked = [job.suppression_checked == channel for job in jobs]
        for job in jobs:
            job.suppression_checked = None
        await self._suppressed(records, channel, verdicts, checked)
        for i, record in enumerate(records):
            if verdicts[i] is None:
                verdicts[i] = self._expired(record, now)
        await self._refused(records, hop.connection, now, verdicts)
        for i, job in enumerate(jobs):
            if verdicts[i] is None:
                verdicts[i] = self._quiet(job, hop.connection, now)
        return [GO if verdict is None else verdict for verdict in verdicts]

    async def _suppressed(
        self,
        records: Sequence[MessageRecord],
        channel: Channel,
        verdicts: list[Verdict | None],
        checked: Sequence[bool],
    ) -> None:
        asked = [i for i, verdict in enumerate(verdicts) if verdict is None and not checked[i]]
        if not asked:
            return
        keys = {i: suppression_key(channel, records[i].to) for i in asked}
        first = records[asked[0]]
        found = await self._suppressions.suppressed(
            first.workspace_id, first.livemode, channel, sorted(set(keys.values()))
        )
        for i in asked:
            if keys[i] in found:
                refusal = suppressed_refusal(channel, records[i].to)
                verdicts[i] = Stop(ErrorInfo(refusal.code, refusal.message))

    def _expired(self, record: MessageRecord, now: datetime) -> Verdict | None:
        """D7's queue TTL for a message no provider has taken yet, counted from when it was
        due: the end of the quiet hours that last held it, its ``send_at``, or its creation.
        A fallback after a provider took it (a failed report, a DLR time-out a day later)
        is not waiting in the queue: no TTL."""
        due = max(record.held_until or record.created_at, record.send_at or record.created_at)
        if now <= due + self._workspace.queue_ttl or provider_took(record):
            return None
        return Stop(no_provider_reached(record.attempts) if record.attempts else QUEUE_EXPIRED)

    async def _refused(
        self,
        records: Sequence[MessageRecord],
        connection: Connection,
        now: datetime,
        verdicts: list[Verdict | None],
    ) -> None:
        asked = [i for i, verdict in enumerate(verdicts) if verdict is None]
        if not asked:
            return
        errors = await self._consent.refusals(
            [records[i] for i in asked], connection, now=now, workspace=self._workspace
        )
        for i, error in zip(asked, errors, strict=True):
            if isinstance(error, HoldUntil):
                verdicts[i] = error
            elif error is not None:
                verdicts[i] = Stop(error)

    def _quiet(self, job: Job, connection: Connection, now: datetime) -> Verdict | None:
        """Quiet hours by the message's class at this hop (a ``commercial`` scope holds
        commercial messages only), unless it asked to ignore them."""
        quiet = self._workspace.quiet_hours
        ignore = _record_of(job).ignore_quiet_hours
        mode = job.iys_mode(connection)
        until = hand_over_at(now, quiet, mode, ignore_quiet_hours=ignore)
        return HoldUntil(until) if until > now else None


def _record_of(job: Job) -> MessageRecord:
    if job.record is None:
        raise ValueError(f"job {job.job_id} carries no record: the gate cannot judge it")
    return job.record


def _canceled(record: MessageRecord) -> Verdict | None:
    if record.status == "failed" and record.error == CANCELED:
        return Stop(CANCELED)
    return None


class Gates:
    """Where a messenger's paths get their gate: one per workspace and hand-over, all
    asking the same store and the same consent check."""

    def __init__(
        self,
        suppressions: SuppressionLookup,
        clock: Clock,
        *,
        consent: ConsentCheck = NO_CONSENT_CHECK,
    ) -> None:
        self._suppressions = suppressions
        self._clock = clock
        self._consent = consent

    def at(self, workspace: Workspace) -> HandOverGate:
        """The gate for a hand-over of ``workspace``'s messages, by its settings now."""
        return HandOverGate(workspace, self._suppressions, self._clock, consent=self._consent)
