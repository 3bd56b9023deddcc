"""SQL store methods for the core records: workspaces, API keys, connections, templates,
messages and quota.

Lists are sorted in Python with the same keys as the memory store: PostgreSQL's ``ORDER BY``
on text follows the server's locale collation, which would order ids and keys differently
from one server to the next.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Final

import sqlalchemy as sa

from .._access.flood_guard import RecipientLimit
from .._domain import ApiKey, Connection, MessageRecord, Template, Workspace
from .._errors import AlreadyExists, IdempotencyInProgress, RecipientRateLimited, ResourceNotFound
from .._types import SendPhase
from ._sql_base import SqlBase
from ._sql_guard import recipients_over
from ._sql_hot import Hot, compare_and_write, write_all
from ._sql_rows import (
    api_key_from,
    api_key_row,
    connection_from,
    connection_row,
    message_from,
    message_row,
    provider_ref_from,
    template_from,
    template_row,
    workspace_from,
    workspace_row,
)
from ._tables import (
    UtcDateTime,
    api_keys,
    connections,
    due_work,
    idempotency,
    provider_refs,
    quota,
    templates,
    workspaces,
)
from ._tables import messages as message_table
from .base import IdempotencyClaim, ProviderRef, QuotaCharge, WorkItem

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ["CoreMixin"]

# The per-request reads (authentication, GET by job id), built once: see SqlBase._all.
_KEY_BY_ID = sa.select(api_keys).where(api_keys.c.id == sa.bindparam("key_id"))
_KEY_BY_HASH = sa.select(api_keys).where(api_keys.c.key_hash == sa.bindparam("key_hash"))
_WORKSPACE_BY_ID = sa.select(workspaces).where(workspaces.c.id == sa.bindparam("workspace_id"))
_CONNECTION_BY_ID = sa.select(connections).where(connections.c.id == sa.bindparam("connection_id"))
_CONNECTIONS_OF = sa.select(connections).where(
    connections.c.workspace_id == sa.bindparam("workspace_id")
)
_TEMPLATE_BY_KEY = sa.select(templates).where(
    templates.c.workspace_id == sa.bindparam("workspace_id"), templates.c.key == sa.bindparam("key")
)
_MESSAGE_BY_ID = Hot(
    sa.select(message_table).where(
        message_table.c.job_id == sa.bindparam("job_id"),
        message_table.c.workspace_id == sa.bindparam("workspace_id"),
        message_table.c.livemode == sa.bindparam("livemode"),
    )
)
_INSERT_MESSAGE = Hot(sa.insert(message_table))


class CoreMixin(SqlBase):
    # -- workspaces
    async def create_workspace(self, workspace: Workspace) -> None:
        async with self._write(exists=f"Workspace {workspace.id} already exists.") as conn:
            await conn.execute(sa.insert(workspaces).values(workspace_row(workspace)))

    async def get_workspace(self, workspace_id: str) -> Workspace | None:
        async def load() -> Workspace | None:
            row = await self._first(_WORKSPACE_BY_ID, workspace_id=workspace_id)
            return None if row is None else workspace_from(row)

        return await self._cached(("workspace", workspace_id), load)

    async def list_workspaces(self) -> list[Workspace]:
        rows = await self._all(sa.select(workspaces))
        return sorted((workspace_from(r) for r in rows), key=lambda w: (w.created_at, w.id))

    async def update_workspace(self, workspace: Workspace) -> None:
        async with self._write() as conn:
            result = await conn.execute(
                sa.update(workspaces)
                .where(workspaces.c.id == workspace.id)
                .values(workspace_row(workspace))
            )
            if result.rowcount == 0:
                raise ResourceNotFound(f"Workspace {workspace.id} not found.")

    # -- API keys
    async def add_api_key(self, key: ApiKey) -> None:
        async with self._write(
            exists="API key already exists.",
            missing=f"Workspace {key.workspace_id} not found.",
        ) as conn:
            await conn.execute(sa.insert(api_keys).values(api_key_row(key)))

    async def get_api_key(self, key_id: str) -> ApiKey | None:
        row = await self._first(_KEY_BY_ID, key_id=key_id)
        return None if row is None else api_key_from(row)

    async def find_api_key(self, key_hash: str) -> ApiKey | None:
        async def load() -> ApiKey | None:
            row = await self._first(_KEY_BY_HASH, key_hash=key_hash)
            return None if row is None else api_key_from(row)

        return await self._cached(("key", key_hash), load, misses=False)

    async def list_api_keys(self, workspace_id: str) -> list[ApiKey]:
        rows = await self._all(sa.select(api_keys).where(api_keys.c.workspace_id == workspace_id))
        return sorted((api_key_from(r) for r in rows), key=lambda k: (k.created_at, k.id))

    async def update_api_key(self, key: ApiKey) -> None:
        async with self._write(exists="API key already exists.") as conn:
            result = await conn.execute(
                sa.update(api_keys).where(api_keys.c.id == key.id).values(api_key_row(key))
            )
            if result.rowcount == 0:
                raise ResourceNotFound(f"API key {key.id} not found.")

    # -- connections
    async def add_connection(self, connection: Connection) -> None:
        workspace_id = connection.workspace_id
        async with self._write(exists=f"Connection {connection.id} already exists.") as conn:
            if not await self._lock_workspace(conn, workspace_id):
                raise ResourceNotFound(f"Workspace {workspace_id} not found.")
            siblings = (
                (
                    await conn.execute(
                        sa.select(connections.c.provider).where(
                            connections.c.workspace_id == workspace_id
                        )
                    )
                )
                .scalars()
                .all()
            )
            if connection.provider in siblings:
                raise AlreadyExists(
                    f"The workspace already has a {connection.provider} connection."
                )
            values = connection_row(connection)
            if not siblings:
                values["is_default"] = True
            elif connection.is_default:
                await self._clear_default(conn, workspace_id)
            await conn.execute(sa.insert(connections).values(values))

    async def get_connection(self, connection_id: str) -> Connection | None:
        async def load() -> Connection | None:
            row = await self._first(_CONNECTION_BY_ID, connection_id=connection_id)
            return None if row is None else connection_from(row)

        return await self._cached(("connection", connection_id), load)

    async def list_connections(self, workspace_id: str) -> list[Connection]:
        async def load() -> tuple[Connection, ...]:
            rows = await self._all(_CONNECTIONS_OF, workspace_id=workspace_id)
            found = (connection_from(r) for r in rows)
            return tuple(sorted(found, key=lambda c: (c.created_at, c.id)))

        return list(await self._cached(("connections", workspace_id), load))

    async def update_connection(self, connection: Connection) -> None:
        values = connection_row(connection)
        # The default flag moves only through set_default_connection, atomically, and the
        # sealed credentials only through swap_connection_credentials: a whole-row write of
        # what an admin setter read must not put back credentials a rotation re-sealed.
        del values["is_default"]
        del values["credentials"]
        exists = f"The workspace already has a {connection.provider} connection."
        async with self._write(exists=exists) as conn:
            result = await conn.execute(
                sa.update(connections).where(connections.c.id == connection.id).values(values)
            )
            if result.rowcount == 0:
                raise ResourceNotFound(f"Connection {connection.id} not found.")

    async def set_default_connection(self, workspace_id: str, connection_id: str) -> None:
        async with self._write() as conn:
            await self._lock_workspace(conn, workspace_id)
            target = await conn.execute(
                sa.select(connections.c.id).where(
                    connections.c.id == connection_id,
                    connections.c.workspace_id == workspace_id,
                )
            )
            if target.first() is None:
                raise ResourceNotFound(f"Connection {connection_id} not found.")
            await self._clear_default(conn, workspace_id)
            await conn.execute(
                sa.update(connections)
                .where(connections.c.id == connection_id)
                .values(is_default=True)
            )

    async def remove_connection(self, connection_id: str) -> bool:
        async with self._write() as conn:
            owner = await conn.execute(
                sa.select(connections.c.workspace_id).where(connections.c.id == connection_id)
            )
            workspace_id = owner.scalar()
            if workspace_id is None:
                return False
            await self._lock_workspace(conn, workspace_id)
            removed = await conn.execute(
                sa.delete(connections)
                .where(connections.c.id == connection_id)
                .returning(connections.c.is_default)
            )
            was_default = removed.scalar()
            if was_default is None:
                return False
            if was_default:
                await self._promote_oldest(conn, workspace_id)
            return True

    @staticmethod
    async def _clear_default(conn: AsyncConnection, workspace_id: str) -> None:
        await conn.execute(
            sa.update(connections)
            .where(connections.c.workspace_id == workspace_id, connections.c.is_default)
            .values(is_default=False)
        )

    @staticmethod
    async def _promote_oldest(conn: AsyncConnection, workspace_id: str) -> None:
        result = await conn.execute(
            sa.select(connections.c.id, connections.c.created_at).where(
                connections.c.workspace_id == workspace_id
            )
        )
        remaining = sorted(result.all(), key=lambda r: (r.created_at, r.id))
        if remaining:
            await conn.execute(
                sa.update(connections)
                .where(connections.c.id == remaining[0].id)
                .values(is_default=True)
            )

    # -- templates
    async def put_template(self, template: Template) -> None:
        values = template_row(template)
        insert = self._upsert(templates).values(values)
        upsert = insert.on_conflict_do_update(
            index_elements=[templates.c.workspace_id, templates.c.key],
            set_={name: insert.excluded[name] for name in values},
        )
        async with self._write(missing=f"Workspace {template.workspace_id} not found.") as conn:
            await conn.execute(upsert)

    async def get_template(self, workspace_id: str, key: str) -> Template | None:
        async def load() -> Template | None:
            row = await self._first(_TEMPLATE_BY_KEY, workspace_id=workspace_id, key=key)
            return None if row is None else template_from(row)

        return await self._cached(("template", workspace_id, key), load)

    async def list_templates(self, workspace_id: str) -> list[Template]:
        rows = await self._all(sa.select(templates).where(templates.c.workspace_id == workspace_id))
        return sorted((template_from(r) for r in rows), key=lambda t: t.key)

    async def delete_template(self, workspace_id: str, key: str) -> bool:
        async with self._write() as conn:
            result = await conn.execute(
                sa.delete(templates).where(
                    templates.c.workspace_id == workspace_id, templates.c.key == key
                )
            )
            return result.rowcount > 0

    # -- messages
    async def insert_messages(self, messages: Sequence[MessageRecord]) -> None:
        if messages:
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
        rows = [message_row(m) for m in messages]
        job_ids = [m.job_id for m in messages]
        owners = sorted({m.workspace_id for m in messages})

        def accept(conn: sa.Connection) -> bool | RecipientRateLimited:
            over = recipients_over(conn, self._dialect, messages, recipient_limit)  # D28
            if over is not None:
                return over
            if quota is not None and not self._take_quota(conn, quota):
                return False
            if claim is not None:
                self._bind_claim(conn, claim, job_ids)
            # PostgreSQL: the messages and their check in one round trip (write_all).
            write_all(conn, [(_INSERT_MESSAGE, rows), *self._follow_up_writes(work, ())])
            return True

        accepted = await self._transact(
            accept,
            exists="A message with this job id already exists.",
            missing=f"Workspace {', '.join(owners)} not found.",
        )
        if isinstance(accepted, RecipientRateLimited):
            raise accepted
        return accepted

    async def finish_messages(
        self,
        messages: Sequence[MessageRecord],
        *,
        work: Sequence[WorkItem] = (),
        refs: Sequence[ProviderRef] = (),
        done: Sequence[str] = (),
        release: QuotaCharge | None = None,
    ) -> list[str]:
        ids = sorted(m.job_id for m in messages)
        rows = [_update_row(m) for m in messages]

        deletes = [{"b_id": item_id} for item_id in done]

        def finish(conn: sa.Connection) -> list[str]:
            if len(rows) == 1:
                # One message (every single send): its compare-and-set and everything
                # else in one statement on PostgreSQL; its work only if the set held.
                (message,) = messages
                cas = {**rows[0], "b_version": message.version - 1}
                own = [item for item in work if item.ref == message.job_id]
                others = [item for item in work if item.ref != message.job_id]
                held = compare_and_write(
                    conn, _REPLACE_MESSAGE, cas,
                    gated=self._follow_up_writes(own, ()),
                    always=[*self._follow_up_writes(others, refs), (_DELETE_ONE_WORK, deletes)],
                )  # fmt: skip
                moved = [] if held else [message.job_id]
            else:
                moved = self._update_versions(conn, messages, ids, rows)
                kept = [item for item in work if item.ref not in moved] if moved else work
                # PostgreSQL: follow-ups, refs and the check's removal in one round trip.
                write_all(conn, [*self._follow_up_writes(kept, refs), (_DELETE_ONE_WORK, deletes)])
            if release is not None:
                conn.execute(_release_statement(release))
            return moved

        return await self._transact(finish)

    @staticmethod
    def _update_versions(
        conn: sa.Connection,
        messages: Sequence[MessageRecord],
        ids: list[str],
        rows: list[dict[str, object]],
    ) -> list[str]:
        """Many messages' compare-and-set: their stored versions read and row-locked, then
        the ones still as the caller read them updated in one ``executemany``. PostgreSQL:
        all of it one statement over arrays (``Hot.compare_and_set_many``: the rows locked
        in job id order, each updated where its version is still the one the caller read)."""
        checked = [
            {**row, "b_version": m.version - 1} for m, row in zip(messages, rows, strict=True)
        ]
        updated = _REPLACE_MESSAGE.compare_and_set_many(conn, checked, "job_id")
        if updated is not None:
            return [m.job_id for m in messages if m.job_id not in updated]
        stored: dict[str, int] = {}
        if ids:
            # Locked in job id order (PostgreSQL), so two batches never wait on each other
            # in a circle; SQLite's write lock already serializes them.
            found = conn.execute(_VERSIONS_FOR_UPDATE, {"ids": ids})
            stored = {row.job_id: row.version for row in found.all()}
        moved = [m.job_id for m in messages if stored.get(m.job_id) != m.version - 1]
        _UPDATE_MESSAGE.executemany(conn, [row for row in rows if row["b_job_id"] not in moved])
        return moved

    async def update_messages(
        self,
        messages: Sequence[MessageRecord],
        *,
        work: Sequence[WorkItem] = (),
        refs: Sequence[ProviderRef] = (),
    ) -> None:
        ids = [m.job_id for m in messages]
        rows = [_update_row(m) for m in messages]

        def update(conn: sa.Connection) -> None:
            if ids:
                found = conn.execute(
                    sa.select(message_table.c.job_id).where(message_table.c.job_id.in_(ids))
                )
                missing = set(ids) - set(found.scalars().all())
                if missing:
                    raise ResourceNotFound(f"Message {min(missing)} not found.")
                _UPDATE_MESSAGE.executemany(conn, rows)
            self._follow_ups(conn, work, refs)

        if messages or work or refs:
            await self._transact(update)

    async def get_message(
        self, workspace_id: str, livemode: bool, job_id: str
    ) -> MessageRecord | None:
        params = {"job_id": job_id, "workspace_id": workspace_id, "livemode": livemode}
        rows = await self._hot_query(_MESSAGE_BY_ID, params)
        return message_from(rows[0]) if rows else None

    async def replace_message(
        self,
        record: MessageRecord,
        *,
        work: Sequence[WorkItem] = (),
        refs: Sequence[ProviderRef] = (),
        closed: Sequence[tuple[str, str]] = (),
    ) -> bool:
        row = _update_row(record)
        row["b_version"] = record.version - 1
        closing = [{"b_connection_id": c, "b_message_id": m} for c, m in closed]

        def replace(conn: sa.Connection) -> bool:
            # PostgreSQL: the compare-and-set and what follows it in one statement.
            return compare_and_write(
                conn, _REPLACE_MESSAGE, row,
                gated=[*self._follow_up_writes(work, refs), (_CLOSE_REF, closing)],
            )  # fmt: skip

        return await self._transact(replace)

    async def move_send_phase(
        self,
        workspace_id: str,
        livemode: bool,
        job_ids: Sequence[str],
        *,
        source: SendPhase,
        target: SendPhase,
    ) -> list[str]:
        if not job_ids:
            return []
        statement = (
            sa.update(message_table)
            .where(
                message_table.c.workspace_id == workspace_id,
                message_table.c.livemode == livemode,
                message_table.c.job_id.in_(list(job_ids)),
                message_table.c.phase == source,
            )
            .values(phase=target, version=message_table.c.version + 1)
            .returning(message_table.c.job_id)
        )

        def move(conn: sa.Connection) -> list[str]:
            return list(conn.execute(statement).scalars().all())

        return await self._transact(move)

    async def add_provider_refs(self, refs: Sequence[ProviderRef]) -> None:
        if refs:

            def add(conn: sa.Connection) -> None:
                self._follow_ups(conn, (), refs)

            await self._transact(add)

    async def find_provider_ref(
        self, connection_id: str, provider_message_id: str
    ) -> ProviderRef | None:
        params = {"connection_id": connection_id, "provider_message_id": provider_message_id}
        rows = await self._hot_query(_REF_BY_ID, params)
        return provider_ref_from(rows[0]) if rows else None

    async def refs_to_poll(
        self, connection_id: str, now: datetime, limit: int
    ) -> list[ProviderRef]:
        rows = await self._all(_REFS_TO_POLL, connection_id=connection_id, now=now, limit=limit)
        return [provider_ref_from(row) for row in rows]

    async def postpone_refs(
        self, connection_id: str, provider_message_ids: Sequence[str], until: datetime
    ) -> None:
        if not provider_message_ids:
            return
        ids = list(provider_message_ids)

        def postpone(conn: sa.Connection) -> None:
            for start in range(0, len(ids), _POSTPONE_CHUNK):
                conn.execute(
                    _POSTPONE_REFS,
                    {"b_connection_id": connection_id, "b_until": until,
                     "b_ids": ids[start : start + _POSTPONE_CHUNK]},
                )  # fmt: skip

        await self._transact(postpone)

    async def close_provider_refs(
        self, connection_id: str, provider_message_ids: Sequence[str]
    ) -> None:
        if not provider_message_ids:
            return
        statement = (
            sa.update(provider_refs)
            .where(
                provider_refs.c.connection_id == connection_id,
                provider_refs.c.provider_message_id.in_(list(provider_message_ids)),
            )
            .values(open=False)
        )

        def close(conn: sa.Connection) -> None:
            conn.execute(statement)

        await self._transact(close)

    # -- quota
    async def consume_quota(
        self, workspace_id: str, period: str, units: int, limit: int | None
    ) -> bool:
        charge = QuotaCharge(workspace_id, period, units, limit)

        def consume(conn: sa.Connection) -> bool:
            return self._take_quota(conn, charge)

        return await self._transact(consume)

    async def release_quota(self, workspace_id: str, period: str, units: int) -> None:
        statement = _release_statement(QuotaCharge(workspace_id, period, units))

        def release(conn: sa.Connection) -> None:
            conn.execute(statement)

        await self._transact(release)

    def _take_quota(self, conn: sa.Connection, charge: QuotaCharge) -> bool:
        if charge.limit is not None and charge.units > charge.limit:
            return False
        params: dict[str, object] = {
            "workspace_id": charge.workspace_id, "period": charge.period, "used": charge.units,
        }  # fmt: skip
        if charge.limit is None:
            return bool(self._prebuilt("quota").scalars(conn, params))
        return bool(
            self._prebuilt("quota_limited").scalars(conn, {**params, "b_limit": charge.limit})
        )

    @staticmethod
    def _bind_claim(conn: sa.Connection, claim: IdempotencyClaim, job_ids: Sequence[str]) -> None:
        """D22: the key names its jobs in the write-ahead transaction, or nothing is written."""
        bound = conn.execute(
            sa.update(idempotency)
            .where(
                idempotency.c.workspace_id == claim.workspace_id,
                idempotency.c.key_id == claim.key_id,
                idempotency.c.idem_key == claim.idem_key,
                idempotency.c.owner == claim.owner,
                idempotency.c.status_code.is_(None),
            )
            .values(job_ids=list(job_ids))
        )
        if bound.rowcount != 1:
            raise IdempotencyInProgress

    async def quota_used(self, workspace_id: str, period: str) -> int:
        used = await self._scalar(
            sa.select(quota.c.used).where(
                quota.c.workspace_id == workspace_id, quota.c.period == period
            )
        )
        return 0 if used is None else int(used)


_CLOSE_REF = Hot(
    sa.update(provider_refs)
    .where(
        provider_refs.c.connection_id == sa.bindparam("b_connection_id"),
        provider_refs.c.provider_message_id == sa.bindparam("b_message_id"),
    )
    .values(open=False)
)
# Built once: a statement made per call would cost its cache key every time (see _all).
_UPDATE_MESSAGE_SQL = sa.update(message_table).where(
    message_table.c.job_id == sa.bindparam("b_job_id")
)
_UPDATE_MESSAGE = Hot(_UPDATE_MESSAGE_SQL)
_DELETE_ONE_WORK = Hot(sa.delete(due_work).where(due_work.c.id == sa.bindparam("b_id")))
_VERSIONS_FOR_UPDATE = (
    sa.select(message_table.c.job_id, message_table.c.version)
    .where(message_table.c.job_id.in_(sa.bindparam("ids", expanding=True)))
    .order_by(message_table.c.job_id)
    .with_for_update()
)
# Live, open and due; the longest due first (never asked: NULL, first), so every round starts
# with what waited longest and no page of refs that are not asked can hold the others back.
_REFS_TO_POLL = (
    sa.select(provider_refs)
    .where(
        provider_refs.c.connection_id == sa.bindparam("connection_id"),
        provider_refs.c.open,
        provider_refs.c.livemode,
        sa.or_(
            provider_refs.c.poll_after.is_(None),
            provider_refs.c.poll_after <= sa.bindparam("now", type_=UtcDateTime()),
        ),
    )
    .order_by(
        provider_refs.c.poll_after.asc().nulls_first(),
        provider_refs.c.job_id,
        provider_refs.c.provider_message_id,
    )
    .limit(sa.bindparam("limit", type_=sa.Integer()))
)
#: Ids per UPDATE of :meth:`postpone_refs` (well under every driver's parameter limit).
_POSTPONE_CHUNK: Final = 500
_POSTPONE_REFS = (
    sa.update(provider_refs)
    .where(
        provider_refs.c.connection_id == sa.bindparam("b_connection_id"),
        provider_refs.c.provider_message_id.in_(sa.bindparam("b_ids", expanding=True)),
    )
    .values(poll_after=sa.bindparam("b_until", type_=UtcDateTime()))
)
_REF_BY_ID = Hot(
    sa.select(provider_refs).where(
        provider_refs.c.connection_id == sa.bindparam("connection_id"),
        provider_refs.c.provider_message_id == sa.bindparam("provider_message_id"),
    )
)
_REPLACE_MESSAGE = Hot(
    _UPDATE_MESSAGE_SQL.where(message_table.c.version == sa.bindparam("b_version"))
)


def _update_versions_of(
    conn: sa.Connection, messages: Sequence[MessageRecord], rows: list[dict[str, object]]
) -> list[str]:
    """The compare-and-set of ``messages`` (``rows`` their :func:`_update_row`): one
    statement for one message, else :meth:`CoreMixin._update_versions`; the job ids whose
    rows had moved on (or are gone), which were not written."""
    if not messages:
        return []
    if len(messages) == 1:
        cas = {**rows[0], "b_version": messages[0].version - 1}
        return [] if _REPLACE_MESSAGE.rowcount(conn, cas) == 1 else [messages[0].job_id]
    ids = sorted(m.job_id for m in messages)
    return CoreMixin._update_versions(conn, messages, ids, rows)


def _update_row(message: MessageRecord) -> dict[str, object]:
    row = message_row(message)
    row["b_job_id"] = row.pop("job_id")
    return row


def _release_statement(charge: QuotaCharge) -> sa.Update:
    floored = sa.case((quota.c.used > charge.units, quota.c.used - charge.units), else_=0)
    return (
        sa.update(quota)
        .where(quota.c.workspace_id == charge.workspace_id, quota.c.period == charge.period)
        .values(used=floored)
    )
