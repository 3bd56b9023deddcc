"""SQL store methods for the dashboard's users and sessions (D31).

Users change rarely (administration: :meth:`SqlBase._write`). A session is read on every
dashboard request and touched now and then; those touches go through the group commit
(:meth:`SqlBase._transact`) and leave the record cache alone, so a busy dashboard never
empties the cache the REST hot path reads keys and connections from.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import RowMapping

from .._errors import ResourceNotFound
from ..users._store import DashboardSession, User, free_again
from ._sql_base import SqlBase
from ._tables import login_failures, notices, sessions, users

__all__ = ["UsersMixin"]

_SESSION = sa.select(sessions).where(sessions.c.id_hash == sa.bindparam("id_hash"))
_HAS_NOTICE = sa.select(notices.c.id).where(notices.c.session_hash == sa.bindparam("hash")).limit(1)


def _user_row(user: User) -> dict[str, object]:
    return {
        "id": user.id,
        "email": user.email,
        "password_hash": user.password_hash,
        "role": user.role,
        "workspace_id": user.workspace_id,
        "created_at": user.created_at,
        "disabled_at": user.disabled_at,
    }


def _user_from(row: RowMapping) -> User:
    return User(
        id=row["id"],
        email=row["email"],
        password_hash=row["password_hash"],
        role=row["role"],
        workspace_id=row["workspace_id"],
        created_at=row["created_at"],
        disabled_at=row["disabled_at"],
    )


def _session_row(session: DashboardSession) -> dict[str, object]:
    return {
        "id_hash": session.id_hash,
        "user_id": session.user_id,
        "kind": session.kind,
        "csrf_token": session.csrf_token,
        "workspace_id": session.workspace_id,
        "livemode": session.livemode,
        "created_at": session.created_at,
        "last_seen_at": session.last_seen_at,
    }


def _session_from(row: RowMapping) -> DashboardSession:
    return DashboardSession(
        id_hash=row["id_hash"],
        user_id=row["user_id"],
        kind=row["kind"],
        csrf_token=row["csrf_token"],
        workspace_id=row["workspace_id"],
        livemode=bool(row["livemode"]),
        created_at=row["created_at"],
        last_seen_at=row["last_seen_at"],
    )


class UsersMixin(SqlBase):
    async def add_user(self, user: User) -> None:
        async with self._write(
            exists=f"A user with the e-mail {user.email} already exists.",
            missing=f"Workspace {user.workspace_id} not found.",
        ) as conn:
            await conn.execute(sa.insert(users).values(_user_row(user)))

    async def get_user(self, user_id: str) -> User | None:
        row = await self._first(sa.select(users).where(users.c.id == user_id))
        return None if row is None else _user_from(row)

    async def find_user(self, email: str) -> User | None:
        row = await self._first(sa.select(users).where(users.c.email == email))
        return None if row is None else _user_from(row)

    async def list_users(self) -> list[User]:
        rows = await self._all(sa.select(users).order_by(users.c.created_at, users.c.id))
        return [_user_from(r) for r in rows]

    async def update_user(self, user: User) -> None:
        async with self._write(
            exists=f"A user with the e-mail {user.email} already exists.",
            missing=f"Workspace {user.workspace_id} not found.",
        ) as conn:
            result = await conn.execute(
                sa.update(users).where(users.c.id == user.id).values(_user_row(user))
            )
            if result.rowcount == 0:
                raise ResourceNotFound(f"User {user.id} not found.")

    async def add_session(self, session: DashboardSession) -> None:
        statement = sa.insert(sessions).values(_session_row(session))

        def insert(conn: sa.Connection) -> None:
            conn.execute(statement)

        missing = f"User {session.user_id} not found."
        await self._transact(insert, exists="The session already exists.", missing=missing)

    async def get_session(self, id_hash: str) -> DashboardSession | None:
        row = await self._first(_SESSION, id_hash=id_hash)
        return None if row is None else _session_from(row)

    async def update_session(self, session: DashboardSession) -> None:
        statement = (
            sa.update(sessions)
            .where(sessions.c.id_hash == session.id_hash)
            .values(_session_row(session))
        )

        def update(conn: sa.Connection) -> None:
            conn.execute(statement)

        await self._transact(update)

    async def delete_session(self, id_hash: str) -> bool:
        statement = sa.delete(sessions).where(sessions.c.id_hash == id_hash)

        def delete(conn: sa.Connection) -> bool:
            return conn.execute(statement).rowcount == 1

        return await self._transact(delete)

    async def purge_sessions(self, *, seen_before: datetime, created_before: datetime) -> int:
        statement = sa.delete(sessions).where(
            sa.or_(sessions.c.last_seen_at < seen_before, sessions.c.created_at < created_before)
        )

        def purge(conn: sa.Connection) -> int:
            return int(conn.execute(statement).rowcount)

        return await self._transact(purge)

    async def add_notice(
        self, notice_id: str, session_hash: str, at: datetime, sealed: str
    ) -> None:
        statement = sa.insert(notices).values(
            id=notice_id, session_hash=session_hash, created_at=at, sealed=sealed
        )

        def insert(conn: sa.Connection) -> None:
            conn.execute(statement)

        await self._transact(insert, missing="The session is gone.")

    async def take_notices(self, session_hash: str) -> list[tuple[datetime, str]]:
        # Most page views have none: a read answers them without a write transaction.
        if await self._first(_HAS_NOTICE, hash=session_hash) is None:
            return []
        # DELETE ... RETURNING: the rows this transaction deleted are its own, so a notice
        # read by two requests at once goes to one of them.
        statement = (
            sa.delete(notices)
            .where(notices.c.session_hash == session_hash)
            .returning(notices.c.id, notices.c.created_at, notices.c.sealed)
        )

        def take(conn: sa.Connection) -> list[tuple[datetime, str]]:
            rows = conn.execute(statement).all()
            return [(at, sealed) for _, at, sealed in sorted(rows, key=lambda r: (r[1], r[0]))]

        return await self._transact(take)

    async def claim_login_attempt(
        self, limits: Sequence[tuple[str, int]], at: datetime, *, since: datetime
    ) -> datetime | None:
        keys = [key for key, _ in limits]
        # Every key's old rows, not only these keys': an account or address tried once
        # would otherwise keep its row forever. The table holds one window's attempts.
        forget = sa.delete(login_failures).where(login_failures.c.at < since)
        held = sa.select(login_failures.c.key, login_failures.c.at).where(
            login_failures.c.key.in_(keys)
        )
        add = sa.insert(login_failures)
        # PostgreSQL runs several transactions at once: without the lock, two claims could
        # both count four and both add a fifth. The mode conflicts with itself only, so
        # claims queue while readers and the rest of the store go on. SQLite has one writer
        # at a time, which the DELETE above makes this transaction before it counts.
        lock = sa.text(f"LOCK TABLE {login_failures.name} IN SHARE ROW EXCLUSIVE MODE")
        postgres = self._dialect == "postgresql"

        def claim(conn: sa.Connection) -> datetime | None:
            if postgres:
                conn.execute(lock)
            conn.execute(forget)
            attempts: dict[str, list[datetime]] = {key: [] for key in keys}
            for key, when in conn.execute(held):
                attempts[key].append(when)
            for times in attempts.values():
                times.sort()
            frees = free_again(limits, attempts)
            if frees is None:
                conn.execute(add, [{"key": key, "at": at} for key in keys])
            return frees

        return await self._transact(claim)

    async def clear_login_failures(self, *keys: str) -> None:
        statement = sa.delete(login_failures).where(login_failures.c.key.in_(keys))

        def clear(conn: sa.Connection) -> None:
            conn.execute(statement)

        await self._transact(clear)

    async def delete_user_sessions(self, user_id: str) -> int:
        statement = sa.delete(sessions).where(sessions.c.user_id == user_id)

        def delete(conn: sa.Connection) -> int:
            return int(conn.execute(statement).rowcount)

        return await self._transact(delete)
