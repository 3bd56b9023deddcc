"""The delivery state machine (D10): what a report or a time-out does to a message.

Pure functions over :class:`MessageRecord`; the worker and the report endpoint call them and
store what they return. The rules:

- ``queued → sent → {delivered, expired, rejected, failed, unknown}``; ``queued → failed``;
  ``sent → failed`` at submit. The whole table is :data:`TRANSITIONS`, and every status
  change in the package goes through :func:`move` (or :func:`check_move`), which refuses
  any other with :class:`IllegalTransition`: a move the table lacks is a bug, not a state.
- Final states are terminal, except that a late report may replace ``unknown``.
- A ``failed``/``rejected`` report with fallback left does not end the message: it asks for
  re-dispatch to the next provider (``Transition.fallback``), under the same ``job_id``.
- Reports are idempotent: a duplicate, or one arriving after its attempt already ended, changes
  nothing. A report for a superseded attempt updates that attempt only.
- No report within the connection's ``dlr_timeout``: the next fallback, or ``unknown``.
- A submit whose outcome was never stored (the process died during the provider call, or
  the store was down when it answered): ``queued → unknown`` with ``SUBMIT_INTERRUPTED``,
  never a second send. The same holds for a re-dispatch cut off mid-call.
- A submit the provider may have taken without our knowing (an unreadable 2xx, no answer
  once the request was sent: an ``unknown`` outcome): ``unknown`` with the attempt's
  ``PROVIDER_OUTCOME_UNKNOWN``, no fallback and no retry; a later report
  naming the attempt settles it, as any late report replaces ``unknown``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Literal, get_args

from .._domain import Attempt, DeliveryReport, ErrorInfo, MessageRecord
from .._errors import MessageNotCancelable, SubmitInterrupted
from .._routing.verdicts import CANCELED, NO_PROVIDER_REACHED, no_provider_reached
from .._types import AttemptStatus, DeliveryStatus, MessageStatus
from ..providers.base import NO_FALLBACK_CODES, ProviderReport

if TYPE_CHECKING:
    # Types only: the public webhook verifier imports this module, and routing is heavy.
    from .._routing.dispatch import Hop, Job

__all__ = [
    "CANCELED",
    "EVENT_TYPES",
    "FINAL_STATUSES",
    "INITIAL_STATUSES",
    "IN_FLIGHT",
    "NO_PROVIDER_REACHED",
    "QUOTA_AT_HANDOVER",
    "SUBMIT_INTERRUPTED",
    "TRANSITIONS",
    "EventType",
    "IllegalTransition",
    "Transition",
    "after_routing",
    "apply_cancel",
    "apply_interrupted",
    "apply_report",
    "apply_timeout",
    "begin",
    "can_transition",
    "check_move",
    "event_for",
    "is_write_ahead",
    "move",
    "no_provider_reached",
]

EventType = Literal[
    "message.sent",
    "message.delivered",
    "message.failed",
    "message.expired",
    "message.rejected",
    "message.unknown",
    "message.fallback",
    "message.inbound",
    # D34: a verification's end (``data`` is the verification, never its code).
    "verification.approved",
    "verification.failed",
    "verification.expired",
    # D33: a consent changed in İYS (a citizen's RET to 3338, pulled); ``data`` the consent.
    "consent.changed",
    # A connection's provider balance went below its threshold (once per crossing); ``data``
    # is the provider account (``messenger.accounts``).
    "connection.balance_low",
]
#: The same names as a tuple, in that order (the type is the one list of them).
EVENT_TYPES: Final[tuple[EventType, ...]] = get_args(EventType)

FINAL_STATUSES: Final[frozenset[MessageStatus]] = frozenset(
    ("delivered", "expired", "rejected", "failed", "unknown")
)
#: The statuses a message record is created with: ``queued`` (a send's write-ahead row, D22)
#: and ``failed`` (a bulk item refused before any provider was called).
INITIAL_STATUSES: Final[frozenset[MessageStatus]] = frozenset(("queued", "failed"))
#: Every legal change of a message's status (D10): all the code makes, nothing else.
TRANSITIONS: Final[frozenset[tuple[MessageStatus, MessageStatus]]] = frozenset(
    {
        # The send's outcome over its write-ahead row (and a D7 retry's, D27 pacing's).
        ("queued", "sent"),
        ("queued", "failed"),  # also a cancel (CANCELED) before any provider has it
        ("queued", "delivered"),  # chatbot: the API's success is final (no receipts)
        ("queued", "queued"),  # D7 queued for retries, or D27 waiting for a send slot
        ("queued", "unknown"),  # SUBMIT_INTERRUPTED: the submit's outcome was never stored
        # Reports, the DLR time-out, re-dispatch to the fallback providers.
        ("sent", "delivered"),
        ("sent", "expired"),
        ("sent", "rejected"),
        ("sent", "failed"),
        ("sent", "unknown"),
        ("sent", "sent"),  # a fallback provider took it
        ("sent", "queued"),  # the fallback provider's send rate is full: waits for a slot
        # A late report; or (``sent``/``queued`` only over SUBMIT_INTERRUPTED) a submit's
        # own outcome arriving after its check ended the row: the outcome is the truth.
        ("unknown", "delivered"),
        ("unknown", "expired"),
        ("unknown", "rejected"),
        ("unknown", "failed"),
        ("unknown", "sent"),
        ("unknown", "queued"),
    }
)
#: Moves legal only out of a row its submit check ended (``error == SUBMIT_INTERRUPTED``):
#: a message that timed out ``unknown`` never goes back to ``sent`` or ``queued``.
_OUTCOME_ONLY: Final[frozenset[tuple[MessageStatus, MessageStatus]]] = frozenset(
    {("unknown", "sent"), ("unknown", "queued")}
)


class IllegalTransition(AssertionError):
    """A status change :data:`TRANSITIONS` does not allow: a bug in this library, never
    bad input (an ``AssertionError``, so no ``except MessagingError`` hides it)."""


_ATTEMPT_OPEN: Final[frozenset[AttemptStatus]] = frozenset(("accepted", "unknown"))


def can_transition(source: MessageStatus, target: MessageStatus) -> bool:
    return (source, target) in TRANSITIONS


def check_move(record: MessageRecord, target: MessageStatus) -> None:
    """Refuse (:class:`IllegalTransition`) moving ``record`` to ``target`` unless the table
    allows it. The one place the state machine is enforced; a frozenset lookup or two."""
    pair = (record.status, target)
    if pair not in TRANSITIONS or (pair in _OUTCOME_ONLY and record.error != SUBMIT_INTERRUPTED):
        raise IllegalTransition(
            f"message {record.job_id}: {record.status} -> {target} is not a legal move (D10)"
        )


def move(record: MessageRecord, target: MessageStatus, **changes: Any) -> MessageRecord:
    """``record`` in status ``target`` with ``changes``, if the move is legal (D10)."""
    check_move(record, target)
    return replace(record, status=target, **changes)


def begin(status: MessageStatus) -> MessageStatus:
    """The status a new record is created with, if it is one a message may start in."""
    if status not in INITIAL_STATUSES:
        raise IllegalTransition(f"a message cannot start {status} (D10)")
    return status


def event_for(status: MessageStatus) -> EventType | None:
    """The webhook event announcing that a message reached ``status``."""
    if status == "queued":
        return None
    return f"message.{status}"  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class Transition:
    """What applying a report or a time-out did."""

    record: MessageRecord
    #: Did anything (the message or one of its attempts) change?
    changed: bool
    #: The event to announce, if the message's state changed in a way customers see.
    event: EventType | None = None
    #: Re-dispatch to ``record.fallback_left[0]`` is due (D6, D10).
    fallback: bool = False
    #: The message is ``queued`` with no provider having it: the worker hands it over now.
    handover: bool = False


def _find_attempt(record: MessageRecord, provider_message_id: str) -> int | None:
    for index in range(len(record.attempts) - 1, -1, -1):
        if record.attempts[index].provider_message_id == provider_message_id:
            return index
    return None


def apply_report(record: MessageRecord, report: ProviderReport, *, now: datetime) -> Transition:
    """Apply one delivery report to the message it belongs to."""
    index = _find_attempt(record, report.provider_message_id)
    if index is None or report.status == "pending":
        return Transition(record, changed=False)
    attempt = record.attempts[index]
    if attempt.status not in _ATTEMPT_OPEN or attempt.status == report.status:
        return Transition(record, changed=False)  # duplicate, or that attempt already ended
    status: DeliveryStatus = report.status
    attempts = _with_attempt(record.attempts, index, status, report.error)
    current = index == len(record.attempts) - 1
    if not current or record.status not in ("sent", "unknown") or record.status == status:
        # A superseded attempt's report, or one for a message already final: the attempt
        # remembers it, the message does not move (D10).
        return Transition(replace(record, attempts=attempts, updated_at=now), changed=True)
    dlr = DeliveryReport(
        status=status,
        received_at=now,
        provider_status=report.provider_status,
        error=report.error,
    )
    recipient_level = report.error is not None and report.error.code in NO_FALLBACK_CODES
    if (
        status in ("failed", "rejected")
        and record.fallback_left
        and record.status == "sent"
        and not recipient_level
    ):
        moved = replace(record, attempts=attempts, dlr=dlr, updated_at=now)
        return Transition(moved, changed=True, event="message.fallback", fallback=True)
    error = None
    if status in ("failed", "rejected"):
        error = report.error or _report_error(status)
    ended = move(
        record,
        status,
        attempts=attempts,
        dlr=dlr,
        error=error,
        final_at=now,
        updated_at=now,
    )
    return Transition(ended, changed=True, event=event_for(status))


def apply_timeout(record: MessageRecord, *, now: datetime) -> Transition:
    """No report came within the connection's ``dlr_timeout``: fall back, or ``unknown``."""
    if record.status != "sent" or not record.attempts:
        return Transition(record, changed=False)
    last = len(record.attempts) - 1
    if record.attempts[last].status != "accepted":
        return Transition(record, changed=False)
    attempts = _with_attempt(record.attempts, last, "unknown", None)
    if record.fallback_left:
        moved = replace(record, attempts=attempts, updated_at=now)
        return Transition(moved, changed=True, event="message.fallback", fallback=True)
    ended = move(record, "unknown", attempts=attempts, final_at=now, updated_at=now)
    return Transition(ended, changed=True, event="message.unknown")


def _with_attempt(
    attempts: tuple[Attempt, ...], index: int, status: AttemptStatus, error: ErrorInfo | None
) -> tuple[Attempt, ...]:
    updated = replace(attempts[index], status=status, error=error or attempts[index].error)
    return (*attempts[:index], updated, *attempts[index + 1 :])


def _report_error(status: DeliveryStatus) -> ErrorInfo:
    if status == "rejected":
        return ErrorInfo("PROVIDER_REJECTED", "The provider rejected the message.")
    return ErrorInfo("RECIPIENT_UNREACHABLE", "The message could not be delivered.")


#: The end of a message whose hand-over to a provider may or may not have happened.
SUBMIT_INTERRUPTED: Final = ErrorInfo(SubmitInterrupted.code, SubmitInterrupted.default_message)


def is_write_ahead(record: MessageRecord) -> bool:
    """Whether ``record`` is still as its send wrote it before calling any provider: its
    stored phase says so (a message queued for its send slot with no attempt yet is not)."""
    return record.phase in ("accepted", "waiting")


def apply_interrupted(record: MessageRecord, *, now: datetime) -> Transition:
    """A write-ahead row whose submit never stored its outcome: held back by our own send
    rate (phase ``waiting``), no provider has it, so it is ``queued`` for the worker to hand
    over (once); otherwise it ends ``unknown`` (the provider may have taken it). A row the
    submit did finish is left alone. The stored phase decides, never the other fields."""
    if record.phase == "waiting":
        queued = move(record, "queued", updated_at=now, phase="settled")
        return Transition(queued, changed=True, handover=True)
    if not is_write_ahead(record):
        return Transition(record, changed=False)
    attempt = Attempt(record.provider, "unknown", now, None, SUBMIT_INTERRUPTED)
    ended = move(
        record,
        "unknown",
        attempts=(attempt,),
        error=SUBMIT_INTERRUPTED,
        updated_at=now,
        final_at=now,
        fallback_left=(),
        phase="settled",
    )
    return Transition(ended, changed=True, event="message.unknown")


def after_routing(
    record: MessageRecord,
    job: Job,
    hops: Sequence[Hop],
    *,
    attempts: tuple[Attempt, ...],
    now: datetime,
    retry: bool,
) -> MessageRecord:
    """The message as its chain of providers left it, at submit and at a worker's
    re-dispatch alike (``attempts``: the record's whole list after this round):

    - no send slot in time (D27), or held by the hand-over gate for quiet hours (D35):
      ``queued`` at the hop it got to, for the worker;
    - stopped by the gate (D35): ``failed`` with the gate's error, at the hop it got to;
    - a provider accepted it: ``sent``, the rest of the chain kept for fallback (D6), or
      ``delivered`` on the chatbot channel, whose success is final (D10);
    - the provider it reached may have taken it without our knowing (an ``unknown``
      outcome): ``unknown`` with that attempt's error, the rest of the chain dropped, since
      trying it could send the message twice;
    - every provider unavailable and ``retry`` (D7's window is open): ``queued``, for the
      whole chain again;
    - otherwise ``failed`` with the last refusal, or ``PROVIDER_UNAVAILABLE`` naming each
      provider's cause (D7).

    The record names the hop it is at (its provider, header and D24 encoding); a unit of
    quota stays with every outcome but ``failed`` (D17).
    """
    status: MessageStatus
    if job.paced:
        index, status = job.paced_hop, "queued"
    elif job.stopped is not None:
        index, status = job.last_hop, "failed"
    elif job.accepted:
        index, status = job.last_hop, "sent"
    elif job.unknown:
        index, status = job.last_hop, "unknown"
    elif retry and job.all_unavailable:
        index, status = 0, "queued"
    else:
        index, status = job.last_hop, "failed"
    hop = hops[index]
    encoding, segments = record.encoding, record.segments
    if hop.sender is not None:
        # D24: what this hop's provider is (or was) sent, not what the first one was.
        encoding, segments = job.sms_encoding(hop.connection)
    changes: dict[str, Any] = {}
    left = tuple(h.connection.provider for h in hops[index + 1 :])
    if job.held:
        changes["held_until"] = job.paced_until  # its queue TTL counts from then (D35)
    if status == "failed":
        outcome = job.last_outcome
        error = outcome.error if outcome is not None else None
        if job.stopped is not None:
            error = job.stopped
        elif job.all_unavailable or error is None:
            error = no_provider_reached(job.attempts)
        changes.update(error=error, final_at=now)
        left = ()
    elif status == "unknown":
        outcome = job.last_outcome
        changes.update(error=outcome.error if outcome else None, final_at=now)
        left = ()
    elif status == "sent":
        changes.update(error=None, dlr=None, sent_at=now)
        if hop.connection.channel == "chatbot":
            status, left = "delivered", ()
            changes["final_at"] = now
            attempts = (*attempts[:-1], replace(attempts[-1], status="delivered"))
    return move(
        record, status, provider=hop.connection.provider, channel=hop.connection.channel,
        sender=hop.sender,
        attempts=attempts, updated_at=now, encoding=encoding, segments=segments,
        fallback_left=left, version=record.version + 1, phase="settled", **changes,
    )  # fmt: skip


#: The placeholder attempt of a worker's hand-over in flight; left behind only by a worker
#: that died (the next run ends the message ``unknown``, never sends it twice).
IN_FLIGHT: Final = ErrorInfo("SUBMIT_IN_PROGRESS", "Being handed to the provider.")
#: The end of a scheduled message whose hand-over found the month's quota used up (D17).
QUOTA_AT_HANDOVER: Final = ErrorInfo(
    "QUOTA_EXCEEDED", "The workspace's monthly message quota was used up at the send time."
)


def apply_cancel(record: MessageRecord, *, now: datetime) -> Transition:
    """Cancel a message no provider has: one ``queued`` for its ``send_at`` or quiet hours
    (phase ``scheduled``), for a send slot (D27) or for D7's retries, with no hand-over in
    flight. It ends ``failed`` with ``CANCELED``. A message canceled already is left as it
    is (a retried cancel answers the same); any other is :class:`MessageNotCancelable`:
    a provider has it, is being handed it, or it has ended. The worker's hand-over and a
    cancel both write with compare-and-set, so exactly one of them wins."""
    if record.status == "failed" and record.error == CANCELED:
        return Transition(record, changed=False)
    in_flight = bool(record.attempts) and record.attempts[-1].error == IN_FLIGHT
    if record.status != "queued" or is_write_ahead(record) or in_flight:
        raise MessageNotCancelable(
            f"The message is {record.status} and was already handed to a provider (or is being "
            "handed over now); it cannot be canceled."
            if record.status != "failed"
            else "The message has ended failed; there is nothing to cancel."
        )
    ended = move(record, "failed", error=CANCELED, final_at=now, updated_at=now, fallback_left=())
    return Transition(ended, changed=True, event="message.failed")
