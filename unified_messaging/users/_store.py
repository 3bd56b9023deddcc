"""Dashboard users and their sessions (D31): the records and the store's part of the protocol.

A user is an e-mail with an argon2id hash, either an ``operator`` (every workspace) or a
``member`` of one workspace; the role and the workspace are one field pair whose rule lives in
:class:`User` itself, so a record can never be an operator of one workspace. A session is kept
by the SHA-256 of its id: a copy of the database lets nobody sign in. A one-time login link
is a session of kind ``link`` that is traded for a real one once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol, TypeAlias

__all__ = ["DashboardSession", "SessionKind", "User", "UserRole", "UserStore", "free_again"]

UserRole: TypeAlias = Literal["operator", "member"]
SessionKind: TypeAlias = Literal["session", "link"]


@dataclass(frozen=True, slots=True)
class User:
    """A dashboard user. ``workspace_id`` is set exactly when the role is ``member``."""

    id: str
    email: str
    password_hash: str = field(repr=False)
    role: UserRole
    created_at: datetime
    workspace_id: str | None = None
    disabled_at: datetime | None = None

    def __post_init__(self) -> None:
        if (self.role == "member") != (self.workspace_id is not None):
            raise ValueError("a member has exactly one workspace; an operator has none")

    @property
    def is_operator(self) -> bool:
        return self.role == "operator"

    @property
    def enabled(self) -> bool:
        return self.disabled_at is None


@dataclass(frozen=True, slots=True)
class DashboardSession:
    """A signed-in browser (or a one-time login link, ``kind="link"``).

    ``id_hash`` is the SHA-256 of the cookie's value. ``csrf_token`` guards its state
    changes. ``workspace_id`` and ``livemode`` are what the user is looking at (the
    workspace picker and the test/live switch), kept server-side so no URL can widen them.
    """

    id_hash: str
    user_id: str
    created_at: datetime
    last_seen_at: datetime
    csrf_token: str = field(repr=False)
    kind: SessionKind = "session"
    workspace_id: str | None = None
    livemode: bool = False


class UserStore(Protocol):
    """Protocol: the users and sessions part of the :class:`~unified_messaging.store.base.Store`."""

    async def add_user(self, user: User) -> None:
        """Insert; :class:`AlreadyExists` if the e-mail is taken, :class:`ResourceNotFound`
        if a member's workspace does not exist."""
        ...

    async def get_user(self, user_id: str) -> User | None: ...

    async def find_user(self, email: str) -> User | None:
        """By e-mail, exactly as stored (the caller normalizes it)."""
        ...

    async def list_users(self) -> list[User]:
        """Oldest first."""
        ...

    async def update_user(self, user: User) -> None: ...

    async def add_session(self, session: DashboardSession) -> None: ...

    async def get_session(self, id_hash: str) -> DashboardSession | None: ...

    async def update_session(self, session: DashboardSession) -> None:
        """Replace by ``id_hash``; a session that is gone (signed out meanwhile) stays gone."""
        ...

    async def delete_session(self, id_hash: str) -> bool: ...

    async def delete_user_sessions(self, user_id: str) -> int:
        """Sign a user out everywhere; returns how many sessions (and links) ended."""
        ...

    async def purge_sessions(self, *, seen_before: datetime, created_before: datetime) -> int:
        """Delete the sessions and links last used before ``seen_before`` or made before
        ``created_before`` (those that can no longer sign anyone in); returns how many."""
        ...

    async def add_notice(
        self, notice_id: str, session_hash: str, at: datetime, sealed: str
    ) -> None:
        """Leave a sealed one-time notice for the session (it goes when the session goes)."""
        ...

    async def take_notices(self, session_hash: str) -> list[tuple[datetime, str]]:
        """The session's notices ``(at, sealed)``, oldest first, deleted as they are read:
        each is given to one caller only, however many ask at once."""
        ...

    async def claim_login_attempt(
        self, limits: Sequence[tuple[str, int]], at: datetime, *, since: datetime
    ) -> datetime | None:
        """D31's sign-in throttle, in one transaction: forget every attempt before
        ``since`` (whatever its key); then, if any key of ``limits`` (``(key, limit)``
        pairs) already holds its limit of attempts, record nothing and return the time of
        the attempt whose leaving the window frees them all; else record one attempt at
        ``at`` under every key and return ``None``. However many claims race, no key
        records more than its limit. Shared by every process on the store."""
        ...

    async def clear_login_failures(self, *keys: str) -> None:
        """Forget every attempt recorded under these keys."""
        ...


def free_again(
    limits: Sequence[tuple[str, int]], attempts: Mapping[str, Sequence[datetime]]
) -> datetime | None:
    """For :meth:`UserStore.claim_login_attempt`: ``None`` if no key holds its limit of
    ``attempts`` (each key's, oldest first, all inside the window); else the time of the
    attempt whose leaving the window frees every full key."""
    frees = [
        attempts[key][len(attempts[key]) - limit]
        for key, limit in limits
        if len(attempts.get(key, ())) >= limit
    ]
    return max(frees) if frees else None
