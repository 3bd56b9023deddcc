"""SQL store methods for due work, idempotency records, the IP allowlist, webhooks, and the
compare-and-set of sealed values (the vault rotation's only writes).

Claiming due work is one ``UPDATE … WHERE id IN (SELECT … LIMIT n) RETURNING``:

- PostgreSQL: the inner select is ``FOR UPDATE SKIP LOCKED``, so concurrent claimers lock
  disjoint rows and never wait on each other; a row claimed and committed meanwhile is
  re-checked against the lease condition and dropped.
- SQLite: the statement runs in a ``BEGIN IMMEDIATE`` transaction (no ``FOR UPDATE`` is
  rendered); the database's single write lock makes claimers take turns.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import sqlalchemy as sa

from .._errors import IdempotencyInProgress, ResourceNotFound
from ._sql_base import SqlBase
from ._sql_hot import Hot, write_all
from ._sql_rows import (
    delivery_from,
    delivery_row,
    endpoint_from,
    endpoint_row,
    idempotency_from,
    idempotency_row,
    work_from,
    work_row,
)
from ._tables import (
    allowlist,
    connections,
    due_work,
    idempotency,
    webhook_deliveries,
    webhook_endpoints,
)
from .base import IdempotencyRecord, WebhookDelivery, WebhookEndpoint, WorkItem, WorkStats

__all__ = ["WorkMixin"]

_COMPLETE_WORK = Hot(
    sa.delete(due_work).where(
        due_work.c.id == sa.bindparam("item_id"),
        due_work.c.claimed_by == sa.bindparam("worker_id"),
    )
)
_ALLOWLIST_OF = sa.select(allowlist.c.cidr).where(
    allowlist.c.workspace_id == sa.bindparam("workspace_id")
)
_ENDPOINTS_OF = sa.select(webhook_endpoints).where(
    webhook_endpoints.c.workspace_id == sa.bindparam("workspace_id")
)
# The hot paths (the worker's claims, webhook deliveries) run prebuilt statements: building
# one per call cost SQLAlchemy more CPU (cache keys, bind coercion) than running it.
_LEASE_FREE = sa.or_(
    due_work.c.lease_until.is_(None), due_work.c.lease_until <= sa.bindparam("now")
)
_CLAIM_WORK = Hot(
    sa.update(due_work)
    .where(
        due_work.c.id.in_(
            sa.select(due_work.c.id)
            .where(due_work.c.due_at <= sa.bindparam("now"), _LEASE_FREE)
            .order_by(due_work.c.due_at, due_work.c.id)
            .limit(sa.bindparam("limit", type_=sa.Integer))
            .with_for_update(skip_locked=True)
        )
    )
    .values(
        claimed_by=sa.bindparam("worker_id"),
        lease_until=sa.bindparam("lease_until"),
        attempts=due_work.c.attempts + 1,
    )
    .returning(*due_work.c)
)
_RENEW_WORK = (
    sa.update(due_work)
    .where(
        due_work.c.id.in_(sa.bindparam("item_ids", expanding=True)),
        due_work.c.claimed_by == sa.bindparam("worker_id"),
    )
    .values(lease_until=sa.bindparam("lease_until"))
    .returning(due_work.c.id)
)
_RESCHEDULE_WORK = (
    sa.update(due_work)
    .where(
        due_work.c.id == sa.bindparam("item_id"), due_work.c.claimed_by == sa.bindparam("worker_id")
    )
    .values(due_at=sa.bindparam("due_at"), claimed_by=None, lease_until=None)
)
_INSERT_WORK = sa.insert(due_work)
_INSERT_DELIVERY = sa.insert(webhook_deliveries)
# A first attempt's record (record_webhook_attempt): the event item's hold is its guard,
# checked (and, to complete it, deleted) before anything is written.
_HELD_NOW = sa.and_(
    due_work.c.id == sa.bindparam("item_id"),
    due_work.c.claimed_by == sa.bindparam("worker_id"),
    due_work.c.lease_until > sa.bindparam("now"),
)
_COMPLETE_HELD = Hot(sa.delete(due_work).where(_HELD_NOW))
_HOLDS = Hot(sa.select(due_work.c.id).where(_HELD_NOW).with_for_update())
_RECORD_DELIVERY = Hot(_INSERT_DELIVERY)
_RECORD_RETRY = Hot(_INSERT_WORK)
_DELIVERY = sa.select(webhook_deliveries).where(
    webhook_deliveries.c.id == sa.bindparam("delivery_id")
)
# The SET clause comes from the row's keys; ``b_id`` is the row to change.
_UPDATE_DELIVERY = sa.update(webhook_deliveries).where(
    webhook_deliveries.c.id == sa.bindparam("b_id")
)
_ENDPOINT = sa.select(webhook_endpoints).where(
    webhook_endpoints.c.id == sa.bindparam("endpoint_id")
)
_ENDPOINT_HEALTH = (
    sa.update(webhook_endpoints)
    .where(webhook_endpoints.c.id == sa.bindparam("endpoint_id"))
    .values(
        enabled=sa.bindparam("enabled"),
        disabled_at=sa.bindparam("disabled_at"),
        failing_since=sa.bindparam("failing_since"),
    )
)
# D30's gauges: one pass over the work table, grouped by kind (a scrape every few seconds).
_WORK_STATS = sa.select(
    due_work.c.kind,
    sa.func.count().label("items"),
    sa.func.coalesce(
        sa.func.sum(sa.case((due_work.c.due_at <= sa.bindparam("now"), 1), else_=0)), 0
    ).label("due"),
    sa.func.min(due_work.c.due_at).label("earliest"),
).group_by(due_work.c.kind)
# A key dropped between our failed insert and our read is re-inserted; a few rounds suffice.
_BEGIN_ROUNDS = 5


#: An endpoint's sealed secrets: written by add and swap_webhook_secrets only.
_SEALED_SECRETS = frozenset(
    {"secret_ciphertext", "previous_secret_ciphertext", "previous_secret_expires_at"}
)


class WorkMixin(SqlBase):
    # -- due work
    async def enqueue_work(self, item: WorkItem) -> None:
        row = work_row(item)

        def enqueue(conn: sa.Connection) -> None:
            conn.execute(_INSERT_WORK, row)

        await self._transact(enqueue, exists=f"Work item {item.id} already exists.")

    async def enqueue_work_many(self, items: Sequence[WorkItem]) -> None:
        if items:

            def enqueue(conn: sa.Connection) -> None:
                self._follow_ups(conn, items, ())

            await self._transact(enqueue)

    async def claim_due_work(
        self, *, now: datetime, worker_id: str, lease: timedelta, limit: int
    ) -> list[WorkItem]:
        if limit <= 0:
            return []
        params = {"now": now, "limit": limit, "worker_id": worker_id, "lease_until": now + lease}

        def take(conn: sa.Connection) -> list[WorkItem]:
            return [work_from(r) for r in _CLAIM_WORK.mappings(conn, params)]

        items = await self._transact(take)
        return sorted(items, key=lambda w: (w.due_at, w.id))

    async def renew_work(
        self, item_ids: Sequence[str], worker_id: str, lease_until: datetime
    ) -> list[str]:
        if not item_ids:
            return []
        params = {"item_ids": list(item_ids), "worker_id": worker_id, "lease_until": lease_until}

        def renew(conn: sa.Connection) -> list[str]:
            return list((conn.execute(_RENEW_WORK, params)).scalars().all())

        return await self._transact(renew)

    async def complete_work(self, item_id: str, worker_id: str) -> bool:
        params = {"item_id": item_id, "worker_id": worker_id}

        def complete(conn: sa.Connection) -> bool:
            return _COMPLETE_WORK.rowcount(conn, params) > 0

        return await self._transact(complete)

    async def reschedule_work(self, item_id: str, worker_id: str, due_at: datetime) -> bool:
        params = {"item_id": item_id, "worker_id": worker_id, "due_at": due_at}

        def reschedule(conn: sa.Connection) -> bool:
            return (conn.execute(_RESCHEDULE_WORK, params)).rowcount > 0

        return await self._transact(reschedule)

    async def work_stats(self, now: datetime) -> list[WorkStats]:
        rows = await self._all(_WORK_STATS, now=now)
        stats = []
        for row in sorted(rows, key=lambda r: str(r["kind"])):
            earliest = row["earliest"]
            oldest = earliest if earliest is not None and earliest <= now else None
            stats.append(WorkStats(str(row["kind"]), int(row["items"]), int(row["due"]), oldest))
        return stats

    # -- IP allowlist
    async def add_allowlist_entry(self, workspace_id: str, cidr: str) -> None:
        insert = self._upsert(allowlist).values(workspace_id=workspace_id, cidr=cidr)
        async with self._write(missing=f"Workspace {workspace_id} not found.") as conn:
            await conn.execute(insert.on_conflict_do_nothing())

    async def remove_allowlist_entry(self, workspace_id: str, cidr: str) -> bool:
        async with self._write() as conn:
            result = await conn.execute(
                sa.delete(allowlist).where(
                    allowlist.c.workspace_id == workspace_id, allowlist.c.cidr == cidr
                )
            )
            return result.rowcount > 0

    async def list_allowlist(self, workspace_id: str) -> list[str]:
        async def load() -> tuple[str, ...]:
            entries = await self._column(_ALLOWLIST_OF, workspace_id=workspace_id)
            return tuple(sorted(entries))

        return list(await self._cached(("allowlist", workspace_id), load))

    # -- idempotency
    async def begin_idempotent(self, record: IdempotencyRecord) -> IdempotencyRecord | None:
        insert = (
            self._upsert(idempotency)
            .values(idempotency_row(record))
            .on_conflict_do_nothing()
            .returning(idempotency.c.idem_key)
        )
        existing = sa.select(idempotency).where(
            *self._idempotency_key(record.workspace_id, record.key_id, record.idem_key)
        )

        def begin(conn: sa.Connection) -> IdempotencyRecord | bool | None:
            if (conn.execute(insert)).first() is not None:
                return None
            row = (conn.execute(existing)).mappings().first()
            return False if row is None else idempotency_from(row)

        for _ in range(_BEGIN_ROUNDS):
            found = await self._transact(begin)
            if found is None or isinstance(found, IdempotencyRecord):
                return found
        # Other requests keep taking and dropping the key: one of them is in flight.
        raise IdempotencyInProgress()

    async def take_over_idempotent(
        self, record: IdempotencyRecord, previous_owner: str | None, *, bound_ok: bool = False
    ) -> bool:
        values = idempotency_row(record)
        conditions = [
            *self._idempotency_key(record.workspace_id, record.key_id, record.idem_key),
            sa.func.coalesce(idempotency.c.owner, "") == (previous_owner or ""),
        ]
        if not bound_ok:
            conditions.append(idempotency.c.job_ids.is_(None))
        statement = sa.update(idempotency).where(*conditions).values(values)

        def take_over(conn: sa.Connection) -> bool:
            return (conn.execute(statement)).rowcount == 1

        return await self._transact(take_over)

    async def finish_idempotent(
        self, workspace_id: str, key_id: str, idem_key: str, status_code: int, body: bytes
    ) -> None:
        statement = (
            sa.update(idempotency)
            .where(*self._idempotency_key(workspace_id, key_id, idem_key))
            .values(status_code=status_code, response_body=bytes(body))
        )

        def finish(conn: sa.Connection) -> None:
            if (conn.execute(statement)).rowcount == 0:
                raise ResourceNotFound(f"Idempotency key {idem_key!r} not found.")

        await self._transact(finish)

    async def drop_idempotent(
        self, workspace_id: str, key_id: str, idem_key: str, *, owner: str | None = None
    ) -> bool:
        # A key bound to jobs stays: its request sent something, and a retry must see that.
        conditions = [
            *self._idempotency_key(workspace_id, key_id, idem_key),
            idempotency.c.job_ids.is_(None),
        ]
        if owner is not None:  # still that request's, not taken over since
            conditions.append(idempotency.c.owner == owner)
        statement = sa.delete(idempotency).where(*conditions)

        def drop(conn: sa.Connection) -> bool:
            return (conn.execute(statement)).rowcount > 0

        return await self._transact(drop)

    async def purge_idempotent(self, before: datetime) -> int:
        statement = sa.delete(idempotency).where(idempotency.c.created_at < before)

        def purge(conn: sa.Connection) -> int:
            return int((conn.execute(statement)).rowcount)

        return await self._transact(purge)

    @staticmethod
    def _idempotency_key(
        workspace_id: str, key_id: str, idem_key: str
    ) -> tuple[sa.ColumnElement[bool], ...]:
        return (
            idempotency.c.workspace_id == workspace_id,
            idempotency.c.key_id == key_id,
            idempotency.c.idem_key == idem_key,
        )

    # -- webhook endpoints
    async def add_webhook_endpoint(self, endpoint: WebhookEndpoint) -> None:
        async with self._write(
            exists=f"Webhook endpoint {endpoint.id} already exists.",
            missing=f"Workspace {endpoint.workspace_id} not found.",
        ) as conn:
            await conn.execute(sa.insert(webhook_endpoints).values(endpoint_row(endpoint)))

    async def get_webhook_endpoint(self, endpoint_id: str) -> WebhookEndpoint | None:
        async def load() -> WebhookEndpoint | None:
            row = await self._first(_ENDPOINT, endpoint_id=endpoint_id)
            return None if row is None else endpoint_from(row)

        return await self._cached(("endpoint", endpoint_id), load)

    async def list_webhook_endpoints(self, workspace_id: str) -> list[WebhookEndpoint]:
        async def load() -> tuple[WebhookEndpoint, ...]:
            rows = await self._all(_ENDPOINTS_OF, workspace_id=workspace_id)
            found = (endpoint_from(r) for r in rows)
            return tuple(sorted(found, key=lambda e: (e.created_at, e.id)))

        return list(await self._cached(("endpoints", workspace_id), load))

    async def update_webhook_endpoint(self, endpoint: WebhookEndpoint) -> None:
        async with self._write(missing=f"Workspace {endpoint.workspace_id} not found.") as conn:
            result = await conn.execute(
                sa.update(webhook_endpoints)
                .where(webhook_endpoints.c.id == endpoint.id)
                .values(
                    # The sealed secrets move only by swap_webhook_secrets (compare-and-set):
                    # a whole-row write of what was read could put back old-key ones.
                    {k: v for k, v in endpoint_row(endpoint).items() if k not in _SEALED_SECRETS}
                )
            )
            if result.rowcount == 0:
                raise ResourceNotFound(f"Webhook endpoint {endpoint.id} not found.")

    async def set_webhook_endpoint_health(
        self,
        endpoint_id: str,
        *,
        enabled: bool,
        disabled_at: datetime | None,
        failing_since: datetime | None,
    ) -> None:
        params = {
            "endpoint_id": endpoint_id,
            "enabled": enabled,
            "disabled_at": disabled_at,
            "failing_since": failing_since,
        }

        def set_health(conn: sa.Connection) -> None:
            conn.execute(_ENDPOINT_HEALTH, params)

        self._forget()
        try:
            await self._transact(set_health)
        finally:
            self._forget()

    async def remove_webhook_endpoint(self, endpoint_id: str) -> bool:
        # Its deliveries go with it: the foreign key cascades (foreign_keys=ON on SQLite).
        async with self._write() as conn:
            result = await conn.execute(
                sa.delete(webhook_endpoints).where(webhook_endpoints.c.id == endpoint_id)
            )
            return result.rowcount > 0

    # -- sealed values: compare-and-set, one row at a time (the vault rotation)
    async def swap_connection_credentials(
        self, connection_id: str, expected: str, sealed: str
    ) -> bool:
        statement = (
            sa.update(connections)
            .where(connections.c.id == connection_id, connections.c.credentials == expected)
            .values(credentials=sealed)
        )
        async with self._write() as conn:
            return (await conn.execute(statement)).rowcount == 1

    async def swap_webhook_secrets(
        self,
        endpoint_id: str,
        *,
        expected: tuple[str, str | None],
        secret: str,
        previous: str | None,
        previous_expires_at: datetime | None,
    ) -> bool:
        expected_secret, expected_previous = expected
        stored_previous = webhook_endpoints.c.previous_secret_ciphertext
        statement = (
            sa.update(webhook_endpoints)
            .where(
                webhook_endpoints.c.id == endpoint_id,
                webhook_endpoints.c.secret_ciphertext == expected_secret,
                stored_previous.is_(None)
                if expected_previous is None
                else stored_previous == expected_previous,
            )
            .values(
                secret_ciphertext=secret,
                previous_secret_ciphertext=previous,
                previous_secret_expires_at=previous_expires_at,
            )
        )
        async with self._write() as conn:
            return (await conn.execute(statement)).rowcount == 1

    # -- webhook deliveries
    async def add_webhook_delivery(
        self, delivery: WebhookDelivery, work: WorkItem | None = None
    ) -> None:
        row = delivery_row(delivery)
        work_values = None if work is None else work_row(work)

        def add(conn: sa.Connection) -> None:
            conn.execute(_INSERT_DELIVERY, row)
            if work_values is not None:
                conn.execute(_INSERT_WORK, work_values)

        await self._transact(
            add,
            exists="This event already has a delivery to this endpoint.",
            missing=f"Webhook endpoint {delivery.endpoint_id} not found.",
        )

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
        guard = {"item_id": held, "worker_id": worker_id, "now": now}
        writes = [
            (_RECORD_DELIVERY, [delivery_row(delivery)]),
            (_RECORD_RETRY, [] if retry is None else [work_row(retry)]),
        ]

        def record(conn: sa.Connection) -> bool:
            if complete:
                if _COMPLETE_HELD.rowcount(conn, guard) == 0:
                    return False
            elif not _HOLDS.scalars(conn, guard):
                return False
            write_all(conn, writes)
            return True

        return await self._transact(
            record,
            exists="This event already has a delivery to this endpoint.",
            missing=f"Webhook endpoint {delivery.endpoint_id} not found.",
        )

    async def get_webhook_delivery(self, delivery_id: str) -> WebhookDelivery | None:
        row = await self._first(_DELIVERY, delivery_id=delivery_id)
        return None if row is None else delivery_from(row)

    async def update_webhook_delivery(self, delivery: WebhookDelivery) -> None:
        params = {**delivery_row(delivery), "b_id": delivery.id}

        def update(conn: sa.Connection) -> None:
            if (conn.execute(_UPDATE_DELIVERY, params)).rowcount == 0:
                raise ResourceNotFound(f"Webhook delivery {delivery.id} not found.")

        await self._transact(
            update,
            exists="This event already has a delivery to this endpoint.",
            missing=f"Webhook endpoint {delivery.endpoint_id} not found.",
        )

    async def list_webhook_deliveries(self, endpoint_id: str) -> list[WebhookDelivery]:
        rows = await self._all(
            sa.select(webhook_deliveries).where(webhook_deliveries.c.endpoint_id == endpoint_id)
        )
        return sorted((delivery_from(r) for r in rows), key=lambda d: (d.created_at, d.id))
