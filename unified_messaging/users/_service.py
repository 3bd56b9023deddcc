"""Dashboard users (D31), on the façade: the one place of their rules.

The command line (``unified-messaging users ...``) and the dashboard call these methods;
the password rules are in :mod:`._passwords`, the records in :mod:`.store.users`.
"""

from __future__ import annotations

import builtins
import re
from dataclasses import replace
from typing import Final

from .._clock import Clock
from .._errors import RequestInvalid, ResourceNotFound
from .._ids import new_id
from ..audit._actions import audited, of_record
from ..store.base import Store
from ..users._store import User
from ._passwords import UNUSABLE_PASSWORD, check_new_password, hash_password, verify_password

__all__ = ["Users", "normalize_email"]

# A deliberately plain check: one @, something on each side, a dot in the domain, no spaces.
# The address is a sign-in name, never mailed, so RFC 5322's corners buy nothing here.
_EMAIL: Final = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_MAX_EMAIL: Final = 254


def normalize_email(email: str) -> str:
    """D31: a user's sign-in name, trimmed and lower-cased; :class:`RequestInvalid` if it is
    not an e-mail address."""
    normalized = email.strip().lower()
    if len(normalized) > _MAX_EMAIL or not _EMAIL.fullmatch(normalized):
        raise RequestInvalid.for_field("email", "must be an e-mail address, e.g. ops@example.com")
    return normalized


class Users:
    """Dashboard users: ``messenger.users.create(email, password=...)``."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    def __repr__(self) -> str:
        return "<messenger.users>"

    @audited("user.create", of_record)
    async def create(
        self,
        email: str,
        password: str | None,
        *,
        operator: bool = False,
        workspace_id: str | None = None,
    ) -> User:
        """A dashboard user (D31): an ``operator`` (every workspace) or, with
        ``workspace_id``, a ``member`` of that workspace; exactly one of the two.
        ``password=None``: a user who can sign in only with a one-time login link."""
        email = normalize_email(email)
        if operator == (workspace_id is not None):
            raise RequestInvalid.for_field(
                "role", "give either operator or a workspace (a member has exactly one)"
            )
        if password is not None:
            check_new_password(password)
        if workspace_id is not None and await self._store.get_workspace(workspace_id) is None:
            raise ResourceNotFound(f"Workspace {workspace_id} not found.")
        password_hash = UNUSABLE_PASSWORD if password is None else await hash_password(password)
        user = User(
            id=new_id("usr"),
            email=email,
            password_hash=password_hash,
            role="operator" if operator else "member",
            workspace_id=workspace_id,
            created_at=self._clock.now(),
        )
        await self._store.add_user(user)
        return user

    async def list(self) -> builtins.list[User]:
        return await self._store.list_users()

    async def get(self, user_id: str) -> User:
        user = await self._store.get_user(user_id)
        if user is None:
            raise ResourceNotFound(f"User {user_id} not found.")
        return user

    async def find(self, email: str) -> User:
        user = await self._store.find_user(normalize_email(email))
        if user is None:
            raise ResourceNotFound(f"No user with the e-mail {email.strip()}.")
        return user

    @audited("user.disable", of_record)
    async def disable(self, email: str) -> User:
        """Stop a user signing in, and end every session they have (and any login link).
        Their record stays, so an audit row naming them still names someone."""
        user = await self.find(email)
        if user.disabled_at is None:
            user = replace(user, disabled_at=self._clock.now())
            await self._store.update_user(user)
        await self._store.delete_user_sessions(user.id)
        return user

    async def check_password(self, email: str, password: str) -> User | None:
        """The enabled user with this e-mail and password, else ``None`` (no hint which part
        was wrong; an unknown e-mail costs the time of a real check)."""
        try:
            user = await self._store.find_user(normalize_email(email))
        except RequestInvalid:
            user = None
        stored = UNUSABLE_PASSWORD if user is None else user.password_hash
        matched = await verify_password(stored, password)
        if user is None or not matched or not user.enabled:
            return None
        return user
