"""The ``Store`` protocol: everything the library keeps, behind one seam.

Backends: :class:`~unified_messaging.store.memory.MemoryStore` (tests, library default) and
the SQL store (SQLite embedded default, PostgreSQL for many hosts). One contract test suite
runs against all of them, so behaviour never depends on the backend.

Rules every backend keeps:

- Records are frozen dataclasses; a backend returns values, never live references.
- ``insert_messages`` happens *before* a provider is called (write-ahead acceptance), so a
  crash between the two leaves a ``queued`` record to reconcile, never a lost message.
- ``consume_quota`` is atomic across every process sharing the store.
- A backend that cannot reach its database raises
  :class:`~unified_messaging.StorageUnavailable`, never a driver exception.
- Every record that names a workspace (keys, connections, templates, messages, allowlist
  entries, webhook endpoints) needs that workspace to exist, else
  :class:`~unified_messaging.ResourceNotFound`. Quota counters, idempotency records and
  due work are plain keyed rows and need nothing.
- Datetimes go in timezone-aware and come back timezone-aware (UTC from the SQL backends).

The protocol is the sum of each room's part (``keys._store``, ``webhooks._store``, …) and
the core's own part below: messages, provider refs, quota, due work, idempotency, breakers
and pacing. The store-only records live in :mod:`._records`; this module re-exports them,
and the rooms' records, so a backend imports one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta
from typing import Protocol, runtime_checkable

from .._access.flood_guard import RecipientLimit
from .._domain import MessageRecord
from .._routing.breaker_state import StoredBreaker
from .._types import MessageStatus, ProviderCode, SendPhase
from ..accounts.store import AccountStore
from ..allowlist._store import AllowlistStore
from ..audit._store import AuditStore
from ..connections._store import ConnectionStore
from ..consents.store import ConsentStore
from ..iys.store import IysStore
from ..keys._store import KeyStore
from ..stats._store import StatsStore
from ..suppressions._store import SuppressionQuery, SuppressionStore
from ..templates._store import TemplateStore
from ..users._store import UserStore
from ..verifications._ops_store import VerificationOpsStore
from ..verifications._store import VerificationStore
from ..webhooks._store import WebhookDelivery, WebhookEndpoint, WebhookStore
from ..workspaces._store import WorkspaceStore
from ._records import (
    BatchWrite,
    ConnectionStats,
    IdempotencyClaim,
    IdempotencyRecord,
    JsonValue,
    MessageChange,
    MessageQuery,
    ProviderRef,
    QuotaCharge,
    WorkItem,
    WorkStats,
)

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
    "Store",
    "SuppressionQuery",
    "WebhookDelivery",
    "WebhookEndpoint",
    "WorkItem",
    "WorkStats",
]


@runtime_checkable
class Store(
    WorkspaceStore,
    KeyStore,
    ConnectionStore,
    AccountStore,
    TemplateStore,
    AllowlistStore,
    WebhookStore,
    AuditStore,
    SuppressionStore,
    UserStore,
    ConsentStore,
    IysStore,
    VerificationStore,
    VerificationOpsStore,
    StatsStore,
    Protocol,
):
    """Protocol: everything the library keeps. Each resource's part is its room's protocol
    (named in the bases); the messages' lifecycle, which every room leans on, is here."""

    async def open(self) -> None:
        """Connect and bring the schema up to date. Idempotent."""
        ...

    async def close(self) -> None: ...

    def atomic(self) -> AbstractAsyncContextManager[None]:
        """A block whose writes commit together at its end, or not at all if it raises.

        Every write this task makes through the store inside the block joins one transaction
        (reads inside see them), so an admin change and its audit row (D32) are stored
        together or not at all. A block inside a block joins the outer one. The SQL store
        holds its write transaction for the block: keep it short, and call no provider in it.
        The memory store applies each write at once and undoes nothing: nothing it holds
        survives a crash, and the admin methods raise before they write.
        """
        ...

    # -- messages
    async def insert_messages(self, messages: Sequence[MessageRecord]) -> None:
        """Insert new records (all or none)."""
        ...

    async def accept_messages(
        self,
        messages: Sequence[MessageRecord],
        *,
        work: Sequence[WorkItem] = (),
        quota: QuotaCharge | None = None,
        claim: IdempotencyClaim | None = None,
        recipient_limit: RecipientLimit | None = None,
    ) -> bool:
        """The write-ahead transaction of a send, before any provider is called: insert the
        new records, queue ``work`` (the check that settles them if their outcome never
        lands), take ``quota`` and bind ``claim``'s key to the records' job ids, all or none.

        ``False`` (nothing stored) if the quota has too few units left.
        :class:`IdempotencyInProgress` (nothing stored) if the claim's key is no longer
        held by ``claim.owner`` (another request took it over).
        :class:`RecipientRateLimited` (nothing stored, checked first) if, with
        ``recipient_limit``, the records would take a recipient past it (D28): counted from
        the stored messages of the same workspace, mode and ``to`` created within the
        window before each record's ``created_at`` (``_flood_guard.recipient_refusals``),
        serialized per recipient across every process sharing the store.
        """
        ...

    async def finish_messages(
        self,
        messages: Sequence[MessageRecord],
        *,
        work: Sequence[WorkItem] = (),
        refs: Sequence[ProviderRef] = (),
        done: Sequence[str] = (),
        release: QuotaCharge | None = None,
    ) -> list[str]:
        """Store the outcome of a submit in one transaction: each record replaces its stored
        row if that row's version is still ``record.version - 1``; queue ``work``, remember
        ``refs``, delete the work items ``done`` and give back ``release``.

        Returns the job ids whose rows had moved on (someone else changed them meanwhile):
        those records were not stored; everything else was.
        """
        ...

    async def update_messages(
        self,
        messages: Sequence[MessageRecord],
        *,
        work: Sequence[WorkItem] = (),
        refs: Sequence[ProviderRef] = (),
    ) -> None:
        """Replace existing records by ``job_id``; in the same transaction, queue ``work``
        and remember ``refs`` (taken ids and known refs are left as they are)."""
        ...

    async def get_message(
        self, workspace_id: str, livemode: bool, job_id: str
    ) -> MessageRecord | None:
        """One message, only within its own workspace and mode (D2, D11)."""
        ...

    async def replace_message(
        self,
        record: MessageRecord,
        *,
        work: Sequence[WorkItem] = (),
        refs: Sequence[ProviderRef] = (),
        closed: Sequence[tuple[str, str]] = (),
    ) -> bool:
        """Store ``record`` if the stored version is ``record.version - 1`` (compare and set),
        and in the same transaction queue the ``work``, remember the ``refs`` and close the
        ``closed`` ``(connection_id, provider_message_id)`` refs that follow from the change,
        so a crash can never keep one without the other.

        ``False`` (and nothing stored) if another writer changed the message first or it is
        gone: re-read it and decide again.
        """
        ...

    async def get_messages(self, keys: Sequence[tuple[str, bool, str]]) -> dict[str, MessageRecord]:
        """Many messages in one read, each ``(workspace_id, livemode, job_id)`` only within
        its own workspace and mode (D2, D11); by job id, those not found left out."""
        ...

    async def replace_messages(
        self,
        changes: Sequence[MessageChange],
        *,
        worker_id: str,
        done: Sequence[str] = (),
    ) -> BatchWrite:
        """Many :meth:`replace_message` in one transaction, with the work items that made
        them: each change is stored (record, work, closed refs, and its ``done`` item
        deleted) only if ``worker_id`` still holds its ``done`` item and the compare-and-set
        holds; the items ``done`` (finished with no change to store) are deleted where
        ``worker_id`` still holds them. A change that is not stored writes nothing. At most
        one change per job id. See :class:`BatchWrite` for the answer."""
        ...

    async def move_send_phase(
        self,
        workspace_id: str,
        livemode: bool,
        job_ids: Sequence[str],
        *,
        source: SendPhase,
        target: SendPhase,
    ) -> list[str]:
        """Move each of the messages ``job_ids`` from the send phase ``source`` to ``target``
        (bumping its version), in one transaction, where it still is in ``source``; the ids
        moved. A compare-and-set: of a send resuming after a wait and a submit check settling
        the same row, exactly one wins."""
        ...

    async def list_messages(self, query: MessageQuery) -> list[MessageRecord]:
        """Up to ``query.limit`` messages of the query's workspace and mode that match it,
        newest first: ``created_at`` descending, ties by ``job_id`` descending (D29)."""
        ...

    async def connection_stats(
        self, workspace_id: str, livemode: bool, since: datetime
    ) -> list[ConnectionStats]:
        """Per provider, how the attempts of the workspace's messages of this mode created
        at or after ``since`` fared (see :class:`ConnectionStats`); sorted by provider code,
        only providers with at least one attempt."""
        ...

    async def count_messages(
        self, workspace_id: str, livemode: bool, since: datetime
    ) -> dict[tuple[ProviderCode, MessageStatus], int]:
        """How many of the workspace's messages of this mode created at or after ``since``
        are with each provider (the one that took them, or the last tried) in each status
        now; pairs with none left out. The dashboard's overview."""
        ...

    async def add_provider_refs(self, refs: Sequence[ProviderRef]) -> None:
        """Remember which job each provider message id belongs to; a known pair is kept."""
        ...

    async def find_provider_ref(
        self, connection_id: str, provider_message_id: str
    ) -> ProviderRef | None: ...

    async def find_reported_message(
        self, connection_id: str, provider_message_id: str
    ) -> tuple[ProviderRef, MessageRecord | None] | None:
        """:meth:`find_provider_ref` and the message it names (``None`` if that is gone), in
        one read: a pushed delivery report needs both. ``None`` if the ref is unknown."""
        ...

    async def refs_to_poll(
        self, connection_id: str, now: datetime, limit: int
    ) -> list[ProviderRef]:
        """Up to ``limit`` refs a report poll of the connection may ask about at ``now``:
        live, open, and due (``poll_after`` unset or not after ``now``), the longest due
        first (``poll_after``, then ``job_id``). Test-mode refs are never among them: their
        reports are simulated, and a page of them must not hide the live ones."""
        ...

    async def postpone_refs(
        self, connection_id: str, provider_message_ids: Sequence[str], until: datetime
    ) -> None:
        """A poll asked about these refs: none is due again before ``until``."""
        ...

    async def close_provider_refs(
        self, connection_id: str, provider_message_ids: Sequence[str]
    ) -> None:
        """Mark refs as answered: polling stops asking about them (lookups still find them)."""
        ...

    # -- quota (D17)
    async def consume_quota(
        self, workspace_id: str, period: str, units: int, limit: int | None
    ) -> bool:
        """Atomically add ``units`` to the period's count if it stays within ``limit``.

        ``limit=None`` always succeeds (and still counts). Returns whether it was added.
        """
        ...

    async def release_quota(self, workspace_id: str, period: str, units: int) -> None:
        """Give back units reserved for messages that no provider accepted."""
        ...

    async def quota_used(self, workspace_id: str, period: str) -> int: ...

    # -- due work (durable background jobs)
    async def enqueue_work(self, item: WorkItem) -> None:
        """Store a new item; :class:`AlreadyExists` if its id is taken. Committed on return."""
        ...

    async def enqueue_work_many(self, items: Sequence[WorkItem]) -> None:
        """Store new items in one transaction; an item whose id is taken is left as it is."""
        ...

    async def claim_due_work(
        self, *, now: datetime, worker_id: str, lease: timedelta, limit: int
    ) -> list[WorkItem]:
        """Lease up to ``limit`` items with ``due_at <= now`` that nobody holds (or whose lease
        ran out), earliest first, to ``worker_id`` until ``now + lease``.

        No two callers, in any process, ever get the same item under a live lease.
        """
        ...

    async def renew_work(
        self, item_ids: Sequence[str], worker_id: str, lease_until: datetime
    ) -> list[str]:
        """Extend the lease of the items this worker still holds (a heartbeat while they
        run); returns the ids it still held."""
        ...

    async def complete_work(self, item_id: str, worker_id: str) -> bool:
        """Delete an item this worker holds. ``False`` if it is gone or now held by another
        worker (the lease ran out and it was claimed again): that worker finishes it."""
        ...

    async def reschedule_work(self, item_id: str, worker_id: str, due_at: datetime) -> bool:
        """Move an item this worker holds to ``due_at`` and release the lease."""
        ...

    async def work_stats(self, now: datetime) -> list[WorkStats]:
        """The stored work by kind as of ``now`` (kinds with no item are left out), in one
        cheap read: a metrics scrape asks for it every few seconds."""
        ...

    # -- idempotency (D22)
    async def begin_idempotent(self, record: IdempotencyRecord) -> IdempotencyRecord | None:
        """Insert ``record`` unless its key is taken, atomically.

        ``None``: the caller owns the key and must finish or drop it. Otherwise the record
        already stored (in flight while its ``status_code`` is ``None``). Expiry is the
        caller's rule: compare ``created_at``, and purge old records.
        """
        ...

    async def take_over_idempotent(
        self, record: IdempotencyRecord, previous_owner: str | None, *, bound_ok: bool = False
    ) -> bool:
        """Replace the stored record of ``record``'s key by ``record`` if its owner is still
        ``previous_owner`` and, unless ``bound_ok``, it has no jobs bound (compare and set):
        of two retries taking over one abandoned or expired key, exactly one wins, and a
        key whose request has meanwhile bound its jobs is never taken. ``False``: someone
        else changed it first."""
        ...

    async def finish_idempotent(
        self, workspace_id: str, key_id: str, idem_key: str, status_code: int, body: bytes
    ) -> None:
        """Store the response to replay; :class:`ResourceNotFound` if the record is gone."""
        ...

    async def drop_idempotent(
        self, workspace_id: str, key_id: str, idem_key: str, *, owner: str | None = None
    ) -> bool:
        """Forget a key whose request failed, so a retry runs afresh; a key bound to jobs is
        kept (``False``): its request stored something, and a retry must answer with it.
        ``owner``: only while that request still holds it (not one that took it over since)."""
        ...

    async def purge_idempotent(self, before: datetime) -> int:
        """Delete records created before ``before``; returns how many."""
        ...

    # -- circuit breakers (D26): plain keyed rows, like the quota counters
    async def get_breaker(self, connection_id: str) -> StoredBreaker | None:
        """The connection's breaker state as stored, ``None`` if it has none."""
        ...

    async def put_breaker(self, connection_id: str, data: str, *, version: int) -> bool:
        """Compare-and-set: store ``data`` as version ``version + 1`` if the stored version is
        ``version`` (``0``: none stored yet); ``False``, changing nothing, if it is not."""
        ...

    # -- send-rate pacing (D27): one number per key, like the quota counters
    async def reserve_slots(
        self, key: str, *, now: int, cost: int, burst: int, max_wait: int
    ) -> tuple[bool, int]:
        """One GCRA reservation (``_pacing.gcra``; every value in microseconds), in one atomic
        step: ``(True, the new TAT)`` when the slots can be used within ``max_wait`` of
        ``now``, else ``(False, the stored TAT)`` (``0`` for none), changing nothing."""
        ...

    async def release_slots(self, key: str, *, now: int, cost: int) -> None:
        """Give back ``cost`` microseconds of reserved slots (never to before ``now``)."""
        ...
