"""The in-memory store's dashboard users and sessions (D31), as a mixin of ``MemoryStore``."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime

from .._domain import Workspace
from .._errors import AlreadyExists, ResourceNotFound
from ..users._store import DashboardSession, User, free_again

__all__ = ["MemoryUsersMixin"]


class MemoryUsersMixin:
    _lock: threading.Lock
    _workspaces: dict[str, Workspace]
    _users: dict[str, User]
    _sessions: dict[str, DashboardSession]
    _login_failures: dict[str, list[datetime]]
    _notices: dict[str, list[tuple[str, datetime, str]]]

    async def add_user(self, user: User) -> None:
        with self._lock:
            if user.workspace_id is not None and user.workspace_id not in self._workspaces:
                raise ResourceNotFound(f"Workspace {user.workspace_id} not found.")
            if user.id in self._users or any(u.email == user.email for u in self._users.values()):
                raise AlreadyExists(f"A user with the e-mail {user.email} already exists.")
            self._users[user.id] = user

    async def get_user(self, user_id: str) -> User | None:
        return self._users.get(user_id)

    async def find_user(self, email: str) -> User | None:
        return next((u for u in self._users.values() if u.email == email), None)

    async def list_users(self) -> list[User]:
        return sorted(self._users.values(), key=lambda u: (u.created_at, u.id))

    async def update_user(self, user: User) -> None:
        with self._lock:
            if user.id not in self._users:
                raise ResourceNotFound(f"User {user.id} not found.")
            self._users[user.id] = user

    async def add_session(self, session: DashboardSession) -> None:
        with self._lock:
            if session.id_hash in self._sessions:
                raise AlreadyExists("The session already exists.")
            if session.user_id not in self._users:
                raise ResourceNotFound(f"User {session.user_id} not found.")
            self._sessions[session.id_hash] = session

    async def get_session(self, id_hash: str) -> DashboardSession | None:
        return self._sessions.get(id_hash)

    async def update_session(self, session: DashboardSession) -> None:
        with self._lock:
            if session.id_hash in self._sessions:
                self._sessions[session.id_hash] = session

    async def delete_session(self, id_hash: str) -> bool:
        with self._lock:
            self._notices.pop(id_hash, None)
            return self._sessions.pop(id_hash, None) is not None

    async def purge_sessions(self, *, seen_before: datetime, created_before: datetime) -> int:
        with self._lock:
            gone = [h for h, s in self._sessions.items()
                    if s.last_seen_at < seen_before or s.created_at < created_before]  # fmt: skip
            for id_hash in gone:
                del self._sessions[id_hash]
                self._notices.pop(id_hash, None)
            return len(gone)

    async def add_notice(
        self, notice_id: str, session_hash: str, at: datetime, sealed: str
    ) -> None:
        with self._lock:
            if session_hash not in self._sessions:
                raise ResourceNotFound("The session is gone.")
            self._notices.setdefault(session_hash, []).append((notice_id, at, sealed))

    async def take_notices(self, session_hash: str) -> list[tuple[datetime, str]]:
        with self._lock:
            taken = self._notices.pop(session_hash, [])
        return [(at, sealed) for _, at, sealed in sorted(taken, key=lambda n: (n[1], n[0]))]

    async def claim_login_attempt(
        self, limits: Sequence[tuple[str, int]], at: datetime, *, since: datetime
    ) -> datetime | None:
        with self._lock:
            # Every key's old attempts go, as in the SQL store: the dict holds one window.
            for key, times in list(self._login_failures.items()):
                kept = sorted(t for t in times if t >= since)
                if kept:
                    self._login_failures[key] = kept
                else:
                    del self._login_failures[key]
            frees = free_again(limits, self._login_failures)
            if frees is None:
                for key, _ in limits:
                    self._login_failures.setdefault(key, []).append(at)
            return frees

    async def clear_login_failures(self, *keys: str) -> None:
        with self._lock:
            for key in keys:
                self._login_failures.pop(key, None)

    async def delete_user_sessions(self, user_id: str) -> int:
        with self._lock:
            ended = [h for h, s in self._sessions.items() if s.user_id == user_id]
            for id_hash in ended:
                del self._sessions[id_hash]
                self._notices.pop(id_hash, None)
            return len(ended)
