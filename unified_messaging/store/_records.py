"""The store's own records: due work, idempotency, quota charges, provider refs and the
message queries and changes. They name only the core's records, so every room's slice of the
store protocol (``webhooks._store`` needs :class:`WorkItem`) can import them without an import
circle through :mod:`.base`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeAlias

from .._domain import MessageRecord
from .._observability.tracing import TRACE_KEY, carrier_of_current
from .._types import MessageStatus, ProviderCode

__all__ = [
    "BatchWrite",
    "ConnectionStats",
    "IdempotencyClaim",
    "IdempotencyRecord",
    "JsonValue",
    "MessageChange",
    "MessageQuery",
    "ProviderRef",
    "QuotaCharge",
    "WorkItem",
    "WorkStats",
]

#: What a work item's payload may hold: what JSON can carry, nothing more.
JsonValue: TypeAlias = str | int | float | bool | list["JsonValue"] | dict[str, "JsonValue"] | None


@dataclass(frozen=True, slots=True)
class WorkItem:
    """One durable piece of background work (a DLR time-out, a retry, a webhook delivery).

    ``kind`` names the handler, ``ref`` what it acts on (a job id, a delivery id). While a
    worker holds it, ``claimed_by`` and ``lease_until`` say who and until when; a lease that
    runs out (its worker died) makes the item claimable again. ``attempts`` counts claims.
    """

    id: str
    kind: str
    ref: str
    due_at: datetime
    created_at: datetime
    payload: Mapping[str, JsonValue] = field(default_factory=dict)
    claimed_by: str | None = None
    lease_until: datetime | None = None
    attempts: int = 0

    def __post_init__(self) -> None:
        # Made while a span records (a send, a report, a webhook event): the item carries
        # that trace, and the worker that runs it, in any process, continues it.
        if TRACE_KEY not in self.payload:
            carrier = carrier_of_current()
            if carrier is not None:
                object.__setattr__(self, "payload", {**self.payload, TRACE_KEY: carrier})


@dataclass(frozen=True, slots=True)
class WorkStats:
    """The stored work of one ``kind`` at a moment (``Store.work_stats``, for D30's gauges):
    ``items`` in all, ``due`` of them due by then (held by a worker or not), and the
    earliest ``due_at`` among those due (``None`` when none is)."""

    kind: str
    items: int
    due: int
    oldest_due_at: datetime | None


@dataclass(frozen=True, slots=True)
class IdempotencyRecord:
    """The first request seen with one ``Idempotency-Key``, per workspace and API key (D22).

    ``status_code`` and ``response_body`` stay ``None`` while that request is in flight.
    """

    workspace_id: str
    key_id: str
    idem_key: str
    #: Hash of the request (method, path, body) that first used the key.
    request_hash: str
    created_at: datetime
    status_code: int | None = None
    response_body: bytes | None = field(default=None, repr=False)
    #: A token of the request that holds the key: a takeover or a binding is a
    #: compare-and-set on it, so two retries can never both win.
    owner: str | None = None
    #: The jobs the request created, bound in its write-ahead transaction (D22): after a
    #: crash, a retry answers with them instead of sending again.
    job_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class IdempotencyClaim:
    """The key a request holds while it runs: written into its write-ahead transaction."""

    workspace_id: str
    key_id: str
    idem_key: str
    owner: str


@dataclass(frozen=True, slots=True)
class QuotaCharge:
    """Units of a workspace's monthly quota (D17), taken or given back with a write."""

    workspace_id: str
    period: str
    units: int
    #: The period's limit; ``None``: unlimited (the units are still counted).
    limit: int | None = None


@dataclass(frozen=True, slots=True)
class ProviderRef:
    """Which job a provider's message id belongs to, for delivery reports (D20)."""

    connection_id: str
    provider_message_id: str
    job_id: str
    workspace_id: str
    livemode: bool
    #: Still waiting for its report (a polling worker asks the provider about open refs).
    open: bool = True
    #: Polled providers: not asked about before this (its send plus the provider's
    #: ``first_after``, then each query plus ``again_after``); ``None``: at once.
    poll_after: datetime | None = None


@dataclass(frozen=True, slots=True)
class MessageChange:
    """One compare-and-set of :meth:`Store.replace_messages`: ``record`` replaces the stored
    row if that row's version is ``record.version - 1``; with it, the ``work`` it starts is
    queued, the ``closed`` ``(connection_id, provider_message_id)`` refs are closed, and the
    work item ``done`` (the one that made the change) is deleted."""

    record: MessageRecord
    work: Sequence[WorkItem] = ()
    closed: Sequence[tuple[str, str]] = ()
    done: str | None = None


@dataclass(frozen=True, slots=True)
class BatchWrite:
    """What :meth:`Store.replace_messages` did not store: the job ids whose rows had moved
    on (or are gone), and the work item ids ``worker_id`` no longer held (their changes,
    and their deletions, were not written). Everything else was, in one transaction."""

    moved: tuple[str, ...] = ()
    lost: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MessageQuery:
    """Which messages of one workspace and mode to list, newest first (D29).

    Every filter given must hold. ``to`` matches any of its values (a number as typed and in
    E.164). ``created_after`` is inclusive and ``created_before`` exclusive, so consecutive
    windows neither overlap nor leave a gap. ``older_than`` is the keyset cursor: only
    messages that sort after it in the list's order (``created_at`` descending, then
    ``job_id`` descending).
    """

    workspace_id: str
    livemode: bool
    to: tuple[str, ...] = ()
    status: MessageStatus | None = None
    provider: ProviderCode | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    #: ``(created_at, job_id)`` of the last message of the previous page.
    older_than: tuple[datetime, str] | None = None
    limit: int = 20


@dataclass(frozen=True, slots=True)
class ConnectionStats:
    """How one provider connection fared for a workspace's messages created since a moment.

    Counted per attempt, so a message that fell back from ``sms_a`` to ``sms_b`` counts for
    both: ``sent`` attempts the provider took (it answered with its message id);
    ``delivered``, ``expired``, ``failed`` (refused at submit, or reported failed or
    rejected), ``unknown`` (no report in time, or the hand-over's outcome was lost) and
    ``pending`` (still waiting for its report) by the attempt's state; ``fallbacks``
    attempts after which the message went on to another connection. ``p50_ms`` and
    ``p95_ms``: the median and 95th percentile (nearest rank) of ``final_at - sent_at`` of
    the messages delivered through this connection, in milliseconds; ``None`` without any.
    """

    provider: ProviderCode
    sent: int = 0
    delivered: int = 0
    failed: int = 0
    expired: int = 0
    unknown: int = 0
    pending: int = 0
    fallbacks: int = 0
    p50_ms: int | None = None
    p95_ms: int | None = None

    @property
    def delivery_rate(self) -> float | None:
        """Delivered out of the attempts whose outcome is known; ``None`` before any is."""
        settled = self.delivered + self.failed + self.expired + self.unknown
        return None if settled == 0 else self.delivered / settled
