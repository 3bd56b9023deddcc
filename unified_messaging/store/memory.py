"""The in-memory store: the library's default and the tests' reference backend.

Every method runs without awaiting, so on one event loop each call is atomic; a lock still
guards the multi-step writes because a ``SyncMessenger`` may share the store across threads.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from .._access.flood_guard import RecipientLimit
from .._domain import ApiKey, Connection, MessageRecord, Template, Workspace
from .._errors import AlreadyExists, IdempotencyInProgress, ResourceNotFound
from .._routing.breaker_state import StoredBreaker
from .._routing.pacing import gcra
from .._types import MessageStatus, ProviderCode, SendPhase
from ..accounts.records import ProviderAccount
from ..audit._events import AuditEvent
from ..consents.models import Consent, ConsentChange
from ..iys.records import IysConnection, IysRegistration
from ..suppressions._rules import Suppression
from ..users._store import DashboardSession, User
from ..verifications._guard_rules import GuardSettings
from ..verifications._records import Verification, VerificationSettings
from ._memory_accounts import MemoryAccountsMixin
from ._memory_audit import MemoryAuditMixin
from ._memory_consents import MemoryConsentsMixin
from ._memory_guard import RecipientIndex
from ._memory_iys import MemoryIysMixin
from ._memory_search import list_order, matches, scorecard
from ._memory_stats import MemoryStatsMixin
from ._memory_suppressions import MemorySuppressionsMixin
from ._memory_users import MemoryUsersMixin
from ._memory_verifications import MemoryVerificationsMixin
from ._memory_verify_ops import MemoryVerifyOpsMixin
from .base import (
    BatchWrite,
    ConnectionStats,
    IdempotencyClaim,
    IdempotencyRecord,
    JsonValue,
    MessageChange,
    MessageQuery,
    ProviderRef,
    QuotaCharge,
    WebhookDelivery,
    WebhookEndpoint,
    WorkItem,
    WorkStats,
)

__all__ = ["MemoryStore"]

V = TypeVar("V")


class MemoryStore(
    MemoryAccountsMixin,
    MemoryAuditMixin,
    MemoryUsersMixin,
    MemorySuppressionsMixin,
    MemoryConsentsMixin,
    MemoryIysMixin,
    MemoryVerificationsMixin,
    MemoryVerifyOpsMixin,
    MemoryStatsMixin,
):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._workspaces: dict[str, Workspace] = {}
        self._keys: dict[str, ApiKey] = {}
        self._key_ids_by_hash: dict[str, str] = {}
        self._connections: dict[str, Connection] = {}
        self._templates: dict[tuple[str, str], Template] = {}
        self._messages: dict[str, MessageRecord] = {}
        self._verifications: dict[str, Verification] = {}
        self._pending_verifications: dict[tuple[str, bool, str], str] = {}
        self._verification_settings: dict[str, VerificationSettings] = {}
        self._verification_guards: dict[str, GuardSettings] = {}
        self._quota: dict[tuple[str, str], int] = {}
        self._work: dict[str, WorkItem] = {}
        self._allowlist: dict[str, set[str]] = {}
        self._idempotency: dict[tuple[str, str, str], IdempotencyRecord] = {}
        self._endpoints: dict[str, WebhookEndpoint] = {}
        self._deliveries: dict[str, WebhookDelivery] = {}
        self._refs: dict[tuple[str, str], ProviderRef] = {}
        self._recipients = RecipientIndex()
        self._breakers: dict[str, StoredBreaker] = {}
        self._pacing: dict[str, int] = {}
        self._audit_log: list[AuditEvent] = []
        self._users: dict[str, User] = {}
        self._sessions: dict[str, DashboardSession] = {}
        self._login_failures: dict[str, list[datetime]] = {}
        self._notices: dict[str, list[tuple[str, datetime, str]]] = {}
        self._suppressions: dict[tuple[str, bool, str, str], Suppression] = {}
        self._consents: dict[tuple[str, bool, str, str, str], Consent] = {}
        self._consent_changes: dict[str, list[ConsentChange]] = {}
        self._iys_connections: dict[str, IysConnection] = {}
        self._iys_registrations: dict[str, IysRegistration] = {}
        self._accounts: dict[str, ProviderAccount] = {}

    def __repr__(self) -> str:
        return f"MemoryStore(workspaces={len(self._workspaces)}, messages={len(self._messages)})"

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    # -- workspaces
    async def create_workspace(self, workspace: Workspace) -> None:
        with self._lock:
            if workspace.id in self._workspaces:
                raise AlreadyExists(f"Workspace {workspace.id} already exists.")
            self._workspaces[workspace.id] = workspace

    async def get_workspace(self, workspace_id: str) -> Workspace | None:
        return self._workspaces.get(workspace_id)

    async def list_workspaces(self) -> list[Workspace]:
        return sorted(self._workspaces.values(), key=lambda w: (w.created_at, w.id))

    async def update_workspace(self, workspace: Workspace) -> None:
        with self._lock:
            self._require(self._workspaces, workspace.id, "Workspace")
            self._workspaces[workspace.id] = workspace

    # -- API keys
    async def add_api_key(self, key: ApiKey) -> None:
        with self._lock:
            self._require(self._workspaces, key.workspace_id, "Workspace")
            if key.id in self._keys or key.key_hash in self._key_ids_by_hash:
                raise AlreadyExists("API key already exists.")
            self._keys[key.id] = key
            self._key_ids_by_hash[key.key_hash] = key.id

    async def get_api_key(self, key_id: str) -> ApiKey | None:
        return self._keys.get(key_id)

    async def find_api_key(self, key_hash: str) -> ApiKey | None:
        key_id = self._key_ids_by_hash.get(key_hash)
        return None if key_id is None else self._keys.get(key_id)

    async def list_api_keys(self, workspace_id: str) -> list[ApiKey]:
        keys = [k for k in self._keys.values() if k.workspace_id == workspace_id]
        return sorted(keys, key=lambda k: (k.created_at, k.id))

    async def update_api_key(self, key: ApiKey) -> None:
        with self._lock:
            self._require(self._keys, key.id, "API key")
            self._keys[key.id] = key

    # -- connections
    async def add_connection(self, connection: Connection) -> None:
        with self._lock:
            self._require(self._workspaces, connection.workspace_id, "Workspace")
            siblings = self._connections_of(connection.workspace_id)
            if any(c.provider == connection.provider for c in siblings):
                raise AlreadyExists(
                    f"The workspace already has a {connection.provider} connection."
                )
            if connection.id in self._connections:
                raise AlreadyExists(f"Connection {connection.id} already exists.")
            if not siblings:
                connection = replace(connection, is_default=True)
            elif connection.is_default:
                self._clear_default(connection.workspace_id)
            self._connections[connection.id] = connection

    async def get_connection(self, connection_id: str) -> Connection | None:
        return self._connections.get(connection_id)

    async def list_connections(self, workspace_id: str) -> list[Connection]:
        return self._connections_of(workspace_id)

    async def update_connection(self, connection: Connection) -> None:
        with self._lock:
            current = self._require(self._connections, connection.id, "Connection")
            # The default flag moves only through set_default_connection, atomically, and the
            # credentials only through swap_connection_credentials.
            self._connections[connection.id] = replace(
                connection, is_default=current.is_default, credentials=current.credentials
            )

    async def swap_connection_credentials(
        self, connection_id: str, expected: str, sealed: str
    ) -> bool:
        with self._lock:
            current = self._connections.get(connection_id)
            if current is None or current.credentials != expected:
                return False
            self._connections[connection_id] = replace(current, credentials=sealed)
            return True

    async def set_default_connection(self, workspace_id: str, connection_id: str) -> None:
        with self._lock:
            target = self._connections.get(connection_id)
            if target is None or target.workspace_id != workspace_id:
                raise ResourceNotFound(f"Connection {connection_id} not found.")
            self._clear_default(workspace_id)
            self._connections[connection_id] = replace(target, is_default=True)

    async def remove_connection(self, connection_id: str) -> bool:
        with self._lock:
            removed = self._connections.pop(connection_id, None)
            if removed is None:
                return False
            remaining = self._connections_of(removed.workspace_id)
            if removed.is_default and remaining:
                first = remaining[0]
                self._connections[first.id] = replace(first, is_default=True)
            return True

    # -- templates
    async def put_template(self, template: Template) -> None:
        with self._lock:
            self._require(self._workspaces, template.workspace_id, "Workspace")
            self._templates[(template.workspace_id, template.key)] = template

    async def get_template(self, workspace_id: str, key: str) -> Template | None:
        return self._templates.get((workspace_id, key))

    async def list_templates(self, workspace_id: str) -> list[Template]:
        found = [t for (ws, _), t in self._templates.items() if ws == workspace_id]
        return sorted(found, key=lambda t: t.key)

    async def delete_template(self, workspace_id: str, key: str) -> bool:
        with self._lock:
            return self._templates.pop((workspace_id, key), None) is not None

    # -- messages
    async def insert_messages(self, messages: Sequence[MessageRecord]) -> None:
        await self.accept_messages(messages)

    async def accept_messages(
        self,
        messages: Sequence[MessageRecord],
        *,
        work: Sequence[WorkItem] = (),
        quota: QuotaCharge | None = None,
        claim: IdempotencyClaim | None = None,
        recipient_limit: RecipientLimit | None = None,
    ) -> bool:
        with self._lock:
            # Every check before any change: all or nothing.
            ids = [m.job_id for m in messages]
            if len(set(ids)) != len(ids) or any(i in self._messages for i in ids):
                raise AlreadyExists("A message with this job id already exists.")
            for workspace_id in {m.workspace_id for m in messages}:
                self._require(self._workspaces, workspace_id, "Workspace")
            self._recipients.check(messages, recipient_limit)  # D28
            if quota is not None and not self._quota_fits(quota):
                return False
            if claim is not None:
                key = (claim.workspace_id, claim.key_id, claim.idem_key)
                held = self._idempotency.get(key)
                if held is None or held.owner != claim.owner or held.status_code is not None:
                    raise IdempotencyInProgress
                self._idempotency[key] = replace(held, job_ids=tuple(ids))
            if quota is not None:
                self._add_quota(quota)
            for message in messages:
                self._messages[message.job_id] = message
            self._recipients.add(messages)
            self._follow_ups(work, ())
            return True

    async def finish_messages(
        self,
        messages: Sequence[MessageRecord],
        *,
        work: Sequence[WorkItem] = (),
        refs: Sequence[ProviderRef] = (),
        done: Sequence[str] = (),
        release: QuotaCharge | None = None,
    ) -> list[str]:
        with self._lock:
            moved = []
            for message in messages:
                stored = self._messages.get(message.job_id)
                if stored is None or stored.version != message.version - 1:
                    moved.append(message.job_id)
                else:
                    self._messages[message.job_id] = message
            self._follow_ups([item for item in work if item.ref not in moved], refs)
            for item_id in done:
                self._work.pop(item_id, None)
            if release is not None:
                self._give_back(release)
            return moved

    async def update_messages(
        self,
        messages: Sequence[MessageRecord],
        *,
        work: Sequence[WorkItem] = (),
        refs: Sequence[ProviderRef] = (),
    ) -> None:
        with self._lock:
            for message in messages:
                self._require(self._messages, message.job_id, "Message")
            for message in messages:
                self._messages[message.job_id] = message
            self._follow_ups(work, refs)

    async def get_message(
        self, workspace_id: str, livemode: bool, job_id: str
    ) -> MessageRecord | None:
        message = self._messages.get(job_id)
        if message is None or message.workspace_id != workspace_id:
            return None
        return message if message.livemode == livemode else None

    async def list_messages(self, query: MessageQuery) -> list[MessageRecord]:
        found = [m for m in list(self._messages.values()) if matches(m, query)]
        found.sort(key=list_order, reverse=True)
        return found[: query.limit]

    async def connection_stats(
        self, workspace_id: str, livemode: bool, since: datetime
    ) -> list[ConnectionStats]:
        query = MessageQuery(workspace_id, livemode, created_after=since)
        return scorecard(m for m in list(self._messages.values()) if matches(m, query))

    async def count_messages(
        self, workspace_id: str, livemode: bool, since: datetime
    ) -> dict[tuple[ProviderCode, MessageStatus], int]:
        query = MessageQuery(workspace_id, livemode, created_after=since)
        found = [m for m in list(self._messages.values()) if matches(m, query)]
        return dict(Counter((m.provider, m.status) for m in found))

    async def replace_message(
        self,
        record: MessageRecord,
        *,
        work: Sequence[WorkItem] = (),
        refs: Sequence[ProviderRef] = (),
        closed: Sequence[tuple[str, str]] = (),
    ) -> bool:
        with self._lock:
            stored = self._messages.get(record.job_id)
            if stored is None or stored.version != record.version - 1:
                return False
            self._messages[record.job_id] = record
            self._follow_ups(work, refs)
            for key in closed:
                ref = self._refs.get(key)
                if ref is not None and ref.open:
                    self._refs[key] = replace(ref, open=False)
            return True

    async def get_messages(self, keys: Sequence[tuple[str, bool, str]]) -> dict[str, MessageRecord]:
        found = {}
        for workspace_id, livemode, job_id in keys:
            message = self._messages.get(job_id)
            if message is not None and (message.workspace_id, message.livemode) == (
                workspace_id,
                livemode,
            ):
                found[job_id] = message
        return found

    async def replace_messages(
        self,
        changes: Sequence[MessageChange],
        *,
        worker_id: str,
        done: Sequence[str] = (),
    ) -> BatchWrite:
        _one_per_job(changes)
        with self._lock:

            def held(item_id: str | None) -> bool:
                if item_id is None:
                    return True
                item = self._work.get(item_id)
                return item is not None and item.claimed_by == worker_id

            lost = [c.done for c in changes if c.done is not None and not held(c.done)]
            lost += [item_id for item_id in done if not held(item_id)]
            moved = []
            for change in changes:
                if not held(change.done):
                    continue
                record = change.record
                stored = self._messages.get(record.job_id)
                if stored is None or stored.version != record.version - 1:
                    moved.append(record.job_id)
                    continue
                self._messages[record.job_id] = record
                self._follow_ups(change.work, ())
                for key in change.closed:
                    ref = self._refs.get(key)
                    if ref is not None and ref.open:
                        self._refs[key] = replace(ref, open=False)
                if change.done is not None:
                    del self._work[change.done]
            for item_id in done:
                if held(item_id):
                    del self._work[item_id]
            return BatchWrite(moved=tuple(moved), lost=tuple(lost))

    async def move_send_phase(
        self,
        workspace_id: str,
        livemode: bool,
        job_ids: Sequence[str],
        *,
        source: SendPhase,
        target: SendPhase,
    ) -> list[str]:
        moved: list[str] = []
        with self._lock:
            for job_id in job_ids:
                stored = self._messages.get(job_id)
                if (
                    stored is None
                    or (stored.workspace_id, stored.livemode) != (workspace_id, livemode)
                    or stored.phase != source
                ):
                    continue
                self._messages[job_id] = replace(stored, phase=target, version=stored.version + 1)
                moved.append(job_id)
        return moved

    def _follow_ups(self, work: Sequence[WorkItem], refs: Sequence[ProviderRef]) -> None:
        # Called with the lock held.
        for item in work:
            if item.id not in self._work:
                self._work[item.id] = replace(item, payload=_json_copy(item.payload))
        for ref in refs:
            self._refs.setdefault((ref.connection_id, ref.provider_message_id), ref)

    async def add_provider_refs(self, refs: Sequence[ProviderRef]) -> None:
        with self._lock:
            for ref in refs:
                self._refs.setdefault((ref.connection_id, ref.provider_message_id), ref)

    async def find_provider_ref(
        self, connection_id: str, provider_message_id: str
    ) -> ProviderRef | None:
        return self._refs.get((connection_id, provider_message_id))

    async def find_reported_message(
        self, connection_id: str, provider_message_id: str
    ) -> tuple[ProviderRef, MessageRecord | None] | None:
        ref = self._refs.get((connection_id, provider_message_id))
        if ref is None:
            return None
        return ref, await self.get_message(ref.workspace_id, ref.livemode, ref.job_id)

    async def refs_to_poll(
        self, connection_id: str, now: datetime, limit: int
    ) -> list[ProviderRef]:
        found = [
            r
            for r in list(self._refs.values())
            if r.connection_id == connection_id
            and r.open
            and r.livemode
            and (r.poll_after is None or r.poll_after <= now)
        ]
        return sorted(found, key=_poll_order)[:limit]

    async def postpone_refs(
        self, connection_id: str, provider_message_ids: Sequence[str], until: datetime
    ) -> None:
        with self._lock:
            for message_id in provider_message_ids:
                ref = self._refs.get((connection_id, message_id))
                if ref is not None:
                    self._refs[(connection_id, message_id)] = replace(ref, poll_after=until)

    async def close_provider_refs(
        self, connection_id: str, provider_message_ids: Sequence[str]
    ) -> None:
        with self._lock:
            for message_id in provider_message_ids:
                ref = self._refs.get((connection_id, message_id))
                if ref is not None and ref.open:
                    self._refs[(connection_id, message_id)] = replace(ref, open=False)

    # -- quota
    async def consume_quota(
        self, workspace_id: str, period: str, units: int, limit: int | None
    ) -> bool:
        charge = QuotaCharge(workspace_id, period, units, limit)
        with self._lock:
            if not self._quota_fits(charge):
                return False
            self._add_quota(charge)
            return True

    async def release_quota(self, workspace_id: str, period: str, units: int) -> None:
        with self._lock:
            self._give_back(QuotaCharge(workspace_id, period, units))

    def _quota_fits(self, charge: QuotaCharge) -> bool:
        used = self._quota.get((charge.workspace_id, charge.period), 0)
        return charge.limit is None or used + charge.units <= charge.limit

    def _add_quota(self, charge: QuotaCharge) -> None:
        key = (charge.workspace_id, charge.period)
        self._quota[key] = self._quota.get(key, 0) + charge.units

    def _give_back(self, charge: QuotaCharge) -> None:
        used = self._quota.get((charge.workspace_id, charge.period), 0)
        self._quota[(charge.workspace_id, charge.period)] = max(0, used - charge.units)

    async def quota_used(self, workspace_id: str, period: str) -> int:
        return self._quota.get((workspace_id, period), 0)

    # -- due work
    async def enqueue_work(self, item: WorkItem) -> None:
        with self._lock:
            if item.id in self._work:
                raise AlreadyExists(f"Work item {item.id} already exists.")
            self._work[item.id] = replace(item, payload=_json_copy(item.payload))

    async def enqueue_work_many(self, items: Sequence[WorkItem]) -> None:
        with self._lock:
            for item in items:
                if item.id not in self._work:
                    self._work[item.id] = replace(item, payload=_json_copy(item.payload))

    async def claim_due_work(
        self, *, now: datetime, worker_id: str, lease: timedelta, limit: int
    ) -> list[WorkItem]:
        with self._lock:
            free = [
                item
                for item in self._work.values()
                if item.due_at <= now and (item.lease_until is None or item.lease_until <= now)
            ]
            free.sort(key=lambda item: (item.due_at, item.id))
            claimed = []
            for item in free[: max(limit, 0)]:
                held = replace(
                    item,
                    claimed_by=worker_id,
                    lease_until=now + lease,
                    attempts=item.attempts + 1,
                )
                self._work[item.id] = held
                claimed.append(replace(held, payload=_json_copy(held.payload)))
            return claimed

    async def work_stats(self, now: datetime) -> list[WorkStats]:
        with self._lock:
            items = list(self._work.values())
        kinds = sorted({item.kind for item in items})
        stats = []
        for kind in kinds:
            mine = [item.due_at for item in items if item.kind == kind]
            due = [at for at in mine if at <= now]
            stats.append(WorkStats(kind, len(mine), len(due), min(due) if due else None))
        return stats

    async def renew_work(
        self, item_ids: Sequence[str], worker_id: str, lease_until: datetime
    ) -> list[str]:
        with self._lock:
            held = []
            for item_id in item_ids:
                item = self._work.get(item_id)
                if item is not None and item.claimed_by == worker_id:
                    self._work[item_id] = replace(item, lease_until=lease_until)
                    held.append(item_id)
            return held

    async def complete_work(self, item_id: str, worker_id: str) -> bool:
        with self._lock:
            item = self._work.get(item_id)
            if item is None or item.claimed_by != worker_id:
                return False
            del self._work[item_id]
            return True

    async def reschedule_work(self, item_id: str, worker_id: str, due_at: datetime) -> bool:
        with self._lock:
            item = self._work.get(item_id)
            if item is None or item.claimed_by != worker_id:
                return False
            self._work[item_id] = replace(item, due_at=due_at, claimed_by=None, lease_until=None)
            return True

    # -- IP allowlist
    async def add_allowlist_entry(self, workspace_id: str, cidr: str) -> None:
        with self._lock:
            self._require(self._workspaces, workspace_id, "Workspace")
            self._allowlist.setdefault(workspace_id, set()).add(cidr)

    async def remove_allowlist_entry(self, workspace_id: str, cidr: str) -> bool:
        with self._lock:
            entries = self._allowlist.get(workspace_id, set())
            if cidr not in entries:
                return False
            entries.discard(cidr)
            return True

    async def list_allowlist(self, workspace_id: str) -> list[str]:
        return sorted(self._allowlist.get(workspace_id, ()))

    # -- idempotency
    async def begin_idempotent(self, record: IdempotencyRecord) -> IdempotencyRecord | None:
        key = (record.workspace_id, record.key_id, record.idem_key)
        with self._lock:
            existing = self._idempotency.get(key)
            if existing is not None:
                return existing
            self._idempotency[key] = record
            return None

    async def take_over_idempotent(
        self, record: IdempotencyRecord, previous_owner: str | None, *, bound_ok: bool = False
    ) -> bool:
        key = (record.workspace_id, record.key_id, record.idem_key)
        with self._lock:
            stored = self._idempotency.get(key)
            if stored is None or stored.owner != previous_owner:
                return False
            if stored.job_ids and not bound_ok:
                return False
            self._idempotency[key] = record
            return True

    async def finish_idempotent(
        self, workspace_id: str, key_id: str, idem_key: str, status_code: int, body: bytes
    ) -> None:
        key = (workspace_id, key_id, idem_key)
        with self._lock:
            record = self._idempotency.get(key)
            if record is None:
                raise ResourceNotFound(f"Idempotency key {idem_key!r} not found.")
            self._idempotency[key] = replace(
                record, status_code=status_code, response_body=bytes(body)
            )

    async def drop_idempotent(
        self, workspace_id: str, key_id: str, idem_key: str, *, owner: str | None = None
    ) -> bool:
        key = (workspace_id, key_id, idem_key)
        with self._lock:
            record = self._idempotency.get(key)
            if record is None or record.job_ids:
                return False
            if owner is not None and record.owner != owner:
                return False
            del self._idempotency[key]
            return True

    async def purge_idempotent(self, before: datetime) -> int:
        with self._lock:
            old = [k for k, r in self._idempotency.items() if r.created_at < before]
            for key in old:
                del self._idempotency[key]
            return len(old)

    # -- webhook endpoints and deliveries
    async def add_webhook_endpoint(self, endpoint: WebhookEndpoint) -> None:
        with self._lock:
            self._require(self._workspaces, endpoint.workspace_id, "Workspace")
            if endpoint.id in self._endpoints:
                raise AlreadyExists(f"Webhook endpoint {endpoint.id} already exists.")
            self._endpoints[endpoint.id] = endpoint

    async def get_webhook_endpoint(self, endpoint_id: str) -> WebhookEndpoint | None:
        return self._endpoints.get(endpoint_id)

    async def list_webhook_endpoints(self, workspace_id: str) -> list[WebhookEndpoint]:
        found = [e for e in self._endpoints.values() if e.workspace_id == workspace_id]
        return sorted(found, key=lambda e: (e.created_at, e.id))

    async def update_webhook_endpoint(self, endpoint: WebhookEndpoint) -> None:
        with self._lock:
            current = self._require(self._endpoints, endpoint.id, "Webhook endpoint")
            # The sealed secrets move only through swap_webhook_secrets (compare-and-set).
            self._endpoints[endpoint.id] = replace(
                endpoint,
                secret_ciphertext=current.secret_ciphertext,
                previous_secret_ciphertext=current.previous_secret_ciphertext,
                previous_secret_expires_at=current.previous_secret_expires_at,
            )

    async def swap_webhook_secrets(
        self,
        endpoint_id: str,
        *,
        expected: tuple[str, str | None],
        secret: str,
        previous: str | None,
        previous_expires_at: datetime | None,
    ) -> bool:
        with self._lock:
            current = self._endpoints.get(endpoint_id)
            stored = None if current is None else current.sealed_secrets
            if current is None or stored != expected:
                return False
            self._endpoints[endpoint_id] = replace(
                current,
                secret_ciphertext=secret,
                previous_secret_ciphertext=previous,
                previous_secret_expires_at=previous_expires_at,
            )
            return True

    async def set_webhook_endpoint_health(
        self,
        endpoint_id: str,
        *,
        enabled: bool,
        disabled_at: datetime | None,
        failing_since: datetime | None,
    ) -> None:
        with self._lock:
            endpoint = self._endpoints.get(endpoint_id)
            if endpoint is not None:
                self._endpoints[endpoint_id] = replace(
                    endpoint, enabled=enabled, disabled_at=disabled_at, failing_since=failing_since
                )

    async def remove_webhook_endpoint(self, endpoint_id: str) -> bool:
        with self._lock:
            if self._endpoints.pop(endpoint_id, None) is None:
                return False
            for delivery in list(self._deliveries.values()):
                if delivery.endpoint_id == endpoint_id:
                    del self._deliveries[delivery.id]
            return True

    def _add_delivery(self, delivery: WebhookDelivery) -> None:
        """Under the lock: store ``delivery`` unless its endpoint is gone or has the event."""
        self._require(self._endpoints, delivery.endpoint_id, "Webhook endpoint")
        if delivery.id in self._deliveries or any(
            d.endpoint_id == delivery.endpoint_id and d.event_id == delivery.event_id
            for d in self._deliveries.values()
        ):
            raise AlreadyExists("This event already has a delivery to this endpoint.")
        self._deliveries[delivery.id] = delivery

    async def add_webhook_delivery(
        self, delivery: WebhookDelivery, work: WorkItem | None = None
    ) -> None:
        with self._lock:
            if work is not None and work.id in self._work:
                raise AlreadyExists(f"Work item {work.id} already exists.")
            self._add_delivery(delivery)
            if work is not None:
                self._work[work.id] = replace(work, payload=_json_copy(work.payload))

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
        with self._lock:
            item = self._work.get(held)
            if (
                item is None
                or item.claimed_by != worker_id
                or item.lease_until is None
                or item.lease_until <= now
            ):
                return False
            if retry is not None and retry.id in self._work:
                raise AlreadyExists(f"Work item {retry.id} already exists.")
            self._add_delivery(delivery)
            if retry is not None:
                self._work[retry.id] = replace(retry, payload=_json_copy(retry.payload))
            if complete:
                del self._work[held]
            return True

    async def get_webhook_delivery(self, delivery_id: str) -> WebhookDelivery | None:
        return self._deliveries.get(delivery_id)

    async def update_webhook_delivery(self, delivery: WebhookDelivery) -> None:
        with self._lock:
            self._require(self._deliveries, delivery.id, "Webhook delivery")
            self._deliveries[delivery.id] = delivery

    async def list_webhook_deliveries(self, endpoint_id: str) -> list[WebhookDelivery]:
        found = [d for d in self._deliveries.values() if d.endpoint_id == endpoint_id]
        return sorted(found, key=lambda d: (d.created_at, d.id))

    # -- circuit breakers (D26)
    async def get_breaker(self, connection_id: str) -> StoredBreaker | None:
        return self._breakers.get(connection_id)

    async def put_breaker(self, connection_id: str, data: str, *, version: int) -> bool:
        with self._lock:
            stored = self._breakers.get(connection_id)
            if (stored.version if stored is not None else 0) != version:
                return False
            self._breakers[connection_id] = StoredBreaker(data, version + 1)
            return True

    # -- send-rate pacing (D27)
    async def reserve_slots(
        self, key: str, *, now: int, cost: int, burst: int, max_wait: int
    ) -> tuple[bool, int]:
        with self._lock:
            granted, tat, _ = gcra(self._pacing.get(key, 0), now, cost, burst, max_wait)
            if granted:
                self._pacing[key] = tat
            return granted, tat

    async def release_slots(self, key: str, *, now: int, cost: int) -> None:
        with self._lock:
            if key in self._pacing:
                self._pacing[key] = max(self._pacing[key] - cost, now)

    # -- helpers (called with the lock held where they feed a write)
    def _connections_of(self, workspace_id: str) -> list[Connection]:
        found = [c for c in self._connections.values() if c.workspace_id == workspace_id]
        return sorted(found, key=lambda c: (c.created_at, c.id))

    def _clear_default(self, workspace_id: str) -> None:
        for connection in self._connections_of(workspace_id):
            if connection.is_default:
                self._connections[connection.id] = replace(connection, is_default=False)

    @staticmethod
    def _require(table: dict[str, V], key: str, kind: str) -> V:
        try:
            return table[key]
        except KeyError:
            raise ResourceNotFound(f"{kind} {key} not found.") from None


_AT_ONCE = datetime.min.replace(tzinfo=UTC)


def _poll_order(ref: ProviderRef) -> tuple[datetime, str, str]:
    # The SQL store's order: no poll_after first (NULLS FIRST), then the longest due.
    return (ref.poll_after or _AT_ONCE, ref.job_id, ref.provider_message_id)


def _json_copy(payload: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """A deep copy through JSON: what a SQL backend would give back, and no shared state."""
    if all(value is None or isinstance(value, str | int | float) for value in payload.values()):
        return dict(payload)  # flat, immutable values (the common case): a shallow copy is deep
    copied: dict[str, JsonValue] = json.loads(json.dumps(payload))
    return copied


def _one_per_job(changes: Sequence[MessageChange]) -> None:
    if len({c.record.job_id for c in changes}) != len(changes):
        raise ValueError("replace_messages takes at most one change per job id")
