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

Besides the records of ``_domain`` this module owns the store-only records: due work,
idempotency records and webhook endpoints and deliveries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol, TypeAlias, runtime_checkable

from .._access.flood_guard import RecipientLimit
from .._domain import ApiKey, Connection, MessageRecord, Template, Workspace
from .._observability.tracing import TRACE_KEY, carrier_of_current
from .._routing.breaker_state import StoredBreaker
from .._types import MessageStatus, ProviderCode, SendPhase
from ..accounts.store import AccountStore
from ..consents.store import ConsentStore
from ..iys.store import IysStore
from ..stats._store import StatsStore
from ..verifications._ops_store import VerificationOpsStore
from ..verifications._store import VerificationStore
from .users import UserStore

if TYPE_CHECKING:
    # Only for the protocol's signatures: the records bring pydantic, which the command
    # line's ``--help`` (it reads ``webhooks._admin``, which imports this module) never needs.
    from .._types import Channel
    from ..audit._events import AuditEvent, AuditQuery
    from ..suppressions._rules import Suppression

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
class WebhookEndpoint:
    """A workspace's webhook receiver (D19). The secret is a vault ciphertext."""

    id: str
    workspace_id: str
    url: str
    events: tuple[str, ...]
    secret_ciphertext: str = field(repr=False)
    created_at: datetime
    enabled: bool = True
    disabled_at: datetime | None = None
    #: When the current run of failed deliveries began; five days of it disables the endpoint.
    failing_since: datetime | None = None
    #: The secret before the last rotation, still signing beside the new one until it expires.
    previous_secret_ciphertext: str | None = field(default=None, repr=False)
    previous_secret_expires_at: datetime | None = None

    @property
    def sealed_secrets(self) -> tuple[str, str | None]:
        """(secret, previous secret) as sealed: what :meth:`Store.swap_webhook_secrets`
        compares before it writes."""
        return self.secret_ciphertext, self.previous_secret_ciphertext


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
class WebhookDelivery:
    """One event on its way to one endpoint; retried under the same ``event_id`` (D19)."""

    id: str
    endpoint_id: str
    event_id: str
    event_type: str
    payload: bytes = field(repr=False)
    #: ``pending`` until it succeeds or is given up; the lifecycle names the other states.
    status: str
    created_at: datetime
    updated_at: datetime
    attempts: int = 0
    next_attempt_at: datetime | None = None
    last_status_code: int | None = None
    last_error: str | None = None


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
class SuppressionQuery:
    """Which suppression-list entries of one workspace and mode to list, newest first
    (``created_at`` descending, then ``id`` descending). ``older_than`` is the keyset cursor."""

    workspace_id: str
    livemode: bool
    channel: Channel | None = None
    #: Any of these (a recipient as typed and normalised for each channel); empty: all.
    recipients: tuple[str, ...] = ()
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


@runtime_checkable
class Store(
    AccountStore,
    UserStore, ConsentStore, IysStore, VerificationStore, VerificationOpsStore, StatsStore, Protocol
):
    """Protocol: durable state of workspaces, keys, connections, templates and messages,
    and the dashboard's users and sessions (:class:`~unified_messaging.store.users.UserStore`),
    İYS consents (:class:`~unified_messaging.consents.store.ConsentStore`) and the İYS
    connection and registrations (:class:`~unified_messaging.iys.store.IysStore`)."""

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

    # -- workspaces
    async def create_workspace(self, workspace: Workspace) -> None: ...

    async def get_workspace(self, workspace_id: str) -> Workspace | None: ...

    async def list_workspaces(self) -> list[Workspace]: ...

    async def update_workspace(self, workspace: Workspace) -> None: ...

    # -- API keys (hash only)
    async def add_api_key(self, key: ApiKey) -> None: ...

    async def get_api_key(self, key_id: str) -> ApiKey | None: ...

    async def find_api_key(self, key_hash: str) -> ApiKey | None: ...

    async def list_api_keys(self, workspace_id: str) -> list[ApiKey]: ...

    async def update_api_key(self, key: ApiKey) -> None: ...

    # -- connections (one per provider code per workspace)
    async def add_connection(self, connection: Connection) -> None:
        """Add a connection; :class:`AlreadyExists` if the workspace has its code already.

        The first connection of a workspace becomes its default, whatever ``is_default``
        says; a connection added with ``is_default`` takes the default from the others.
        """
        ...

    async def get_connection(self, connection_id: str) -> Connection | None: ...

    async def list_connections(self, workspace_id: str) -> list[Connection]:
        """The workspace's connections, oldest first."""
        ...

    async def update_connection(self, connection: Connection) -> None:
        """Store the connection's settings. Its default flag and its sealed credentials are
        left as stored: they move only through :meth:`set_default_connection` and
        :meth:`swap_connection_credentials`, so a whole row written from a stale read never
        puts back credentials that a vault rotation re-sealed meanwhile."""
        ...

    async def swap_connection_credentials(
        self, connection_id: str, expected: str, sealed: str
    ) -> bool:
        """Compare-and-set of the sealed credentials (D21, the vault rotation): store
        ``sealed`` only if the stored credentials are still ``expected``, and change nothing
        else of the row. ``False`` when they changed meanwhile or the connection is gone: the
        caller reads the row again rather than write over what another writer stored."""
        ...

    async def set_default_connection(self, workspace_id: str, connection_id: str) -> None:
        """Make one connection the default and every other one of the workspace not."""
        ...

    async def remove_connection(self, connection_id: str) -> bool:
        """Remove it; if it was the default, the oldest remaining one becomes default."""
        ...

    # -- templates
    async def put_template(self, template: Template) -> None:
        """Insert or replace by ``(workspace_id, key)``."""
        ...

    async def get_template(self, workspace_id: str, key: str) -> Template | None: ...

    async def list_templates(self, workspace_id: str) -> list[Template]:
        """Ordered by key."""
        ...

    async def delete_template(self, workspace_id: str, key: str) -> bool: ...

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
        reports are simulated, and a page of them must not hide the live ones (issue 22.11)."""
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

    # -- IP allowlist (D18): strings as given, the caller validates them
    async def add_allowlist_entry(self, workspace_id: str, cidr: str) -> None:
        """Add an entry; adding one that is there already changes nothing."""
        ...

    async def remove_allowlist_entry(self, workspace_id: str, cidr: str) -> bool: ...

    async def list_allowlist(self, workspace_id: str) -> list[str]:
        """The workspace's entries, sorted; empty means every address is allowed."""
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

    # -- webhook endpoints and deliveries (D19)
    async def add_webhook_endpoint(self, endpoint: WebhookEndpoint) -> None: ...

    async def get_webhook_endpoint(self, endpoint_id: str) -> WebhookEndpoint | None: ...

    async def list_webhook_endpoints(self, workspace_id: str) -> list[WebhookEndpoint]:
        """Oldest first."""
        ...

    async def update_webhook_endpoint(self, endpoint: WebhookEndpoint) -> None:
        """Store an endpoint's settings (URL, events, health); its sealed secrets are left as
        they are stored: they move only by :meth:`swap_webhook_secrets`."""
        ...

    async def swap_webhook_secrets(
        self,
        endpoint_id: str,
        *,
        expected: tuple[str, str | None],
        secret: str,
        previous: str | None,
        previous_expires_at: datetime | None,
    ) -> bool:
        """Compare-and-set of an endpoint's sealed secrets (D19, D21): store ``secret``,
        ``previous`` and its expiry only if its (secret, previous secret) are still
        ``expected``, and change nothing else of the row (its health, its URL). ``False``
        when they changed meanwhile or the endpoint is gone: the caller reads it again."""
        ...

    async def set_webhook_endpoint_health(
        self,
        endpoint_id: str,
        *,
        enabled: bool,
        disabled_at: datetime | None,
        failing_since: datetime | None,
    ) -> None:
        """Change only how an endpoint is faring, so a delivery's outcome never overwrites a
        secret rotated meanwhile. An endpoint that is gone is left gone (no error)."""
        ...

    async def remove_webhook_endpoint(self, endpoint_id: str) -> bool:
        """Remove the endpoint and its deliveries."""
        ...

    async def add_webhook_delivery(
        self, delivery: WebhookDelivery, work: WorkItem | None = None
    ) -> None:
        """Insert a delivery, and with it (in the same transaction) the work item that will
        make it: a crash can never leave one without the other. :class:`AlreadyExists` if the
        endpoint has this ``event_id`` already (or the work id is taken);
        :class:`ResourceNotFound` if the endpoint does not exist."""
        ...

    async def record_webhook_attempt(
        self,
        delivery: WebhookDelivery,
        *,
        retry: WorkItem | None,
        held: str,
        worker_id: str,
        now: datetime,
        complete: bool,
    ) -> bool:
        """Insert a delivery whose first attempt was just made, its outcome in it, with the
        work item of its next attempt (``retry``, while it stays pending), in **one**
        transaction, and only while ``worker_id`` holds the work item ``held`` (the event
        item whose handler made the attempt) under a lease that runs past ``now``.
        ``complete`` deletes ``held`` in the same transaction (the event item is done).

        ``False``, and nothing written, if the item is no longer held so (its lease was lost
        or ran out: another worker may run it now). :class:`AlreadyExists` if the endpoint
        has this ``event_id`` already; :class:`ResourceNotFound` if the endpoint is gone.
        Either error writes nothing either (``held`` stays held)."""
        ...

    async def get_webhook_delivery(self, delivery_id: str) -> WebhookDelivery | None: ...

    async def update_webhook_delivery(self, delivery: WebhookDelivery) -> None: ...

    async def list_webhook_deliveries(self, endpoint_id: str) -> list[WebhookDelivery]:
        """Oldest first."""
        ...

    # -- circuit breakers (D26): plain keyed rows, like the quota counters
    async def get_breaker(self, connection_id: str) -> StoredBreaker | None:
        """The connection's breaker state as stored, ``None`` if it has none."""
        ...

    async def put_breaker(self, connection_id: str, data: str, *, version: int) -> bool:
        """Compare-and-set: store ``data`` as version ``version + 1`` if the stored version is
        ``version`` (``0``: none stored yet); ``False``, changing nothing, if it is not."""
        ...

    # -- audit log (D32): append and list, nothing else; no row is ever changed or deleted
    async def append_audit_event(self, event: AuditEvent) -> None:
        """Append one event (inside :meth:`atomic`, with the change it records)."""
        ...

    async def list_audit_events(self, query: AuditQuery) -> list[AuditEvent]:
        """Up to ``query.limit`` events that match it, newest first: ``at`` descending, ties
        by ``id`` descending. :class:`ResourceNotFound` if ``query.starting_after`` names no
        stored event."""
        ...

    # -- suppression list (issue 26): one entry per workspace, mode, channel and recipient
    async def add_suppression(self, entry: Suppression) -> tuple[Suppression, bool]:
        """Store ``entry``, or keep the one stored for its workspace, mode, channel and
        recipient: ``(the stored entry, whether it is new)``. Safe under concurrent adds (one
        row wins). :class:`ResourceNotFound` for an unknown workspace."""
        ...

    async def get_suppression(
        self, workspace_id: str, livemode: bool, suppression_id: str
    ) -> Suppression | None: ...

    async def remove_suppression(
        self, workspace_id: str, livemode: bool, channel: Channel, recipient: str
    ) -> Suppression | None:
        """Delete the entry and return it; ``None`` when there was none."""
        ...

    async def list_suppressions(self, query: SuppressionQuery) -> list[Suppression]:
        """Up to ``query.limit`` entries that match it, newest first."""
        ...

    async def suppressed(
        self, workspace_id: str, livemode: bool, channel: Channel, recipients: Sequence[str]
    ) -> set[str]:
        """Which of ``recipients`` (normalised) are on the list: a send's admission check,
        one indexed lookup, never cached (an opt-out counts from the next send on)."""
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
