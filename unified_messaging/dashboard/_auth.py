"""Who is signed in to the dashboard (D31): sessions, one-time login links, the login throttle
and the one rule of which workspace a user may look at.

A session id is 256 random bits in a cookie; the store keeps only its SHA-256, so a copy of
the database signs nobody in. A session ends 12 hours after its last use or 7 days after it
began, whichever comes first; signing in always starts a new one (the id is rotated) and
signing out deletes it. A login link is a session of kind ``link``, traded once for a real
one: the first trade deletes it, so a second finds nothing.
"""

from __future__ import annotations

import hashlib
import ipaddress
import secrets
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Final, NamedTuple

from .._clock import Clock
from .._domain import Workspace
from .._messenger import Messenger
from ..users._store import DashboardSession, User

__all__ = [
    "ABSOLUTE_LIFETIME",
    "IDLE_LIFETIME",
    "LINK_LIFETIME",
    "LINK_TOKEN_PARAMETER",
    "LoginThrottle",
    "Sessions",
    "SignedIn",
    "client_block",
    "visible_workspace",
]

IDLE_LIFETIME: Final = timedelta(hours=12)
ABSOLUTE_LIFETIME: Final = timedelta(days=7)
#: How long a one-time login link (``serve --demo``'s) may wait to be used.
LINK_LIFETIME: Final = timedelta(hours=24)
#: The query parameter a login link's token travels in. Its name ends in
#: "token", so the access log masks its value (``logsafe``: credential-named parameters);
#: in the path it would be logged whole.
LINK_TOKEN_PARAMETER: Final = "token"  # noqa: S105 - a parameter's name
#: A session's last use is written at most this often: a page view is a read, not a write.
_TOUCH_EVERY: Final = timedelta(minutes=1)
_ID_BYTES: Final = 32  # 256 bits


def _hash(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


def new_token() -> str:
    """256 random bits, URL-safe: session ids, link tokens and CSRF tokens."""
    return secrets.token_urlsafe(_ID_BYTES)


@dataclass(frozen=True, slots=True)
class SignedIn:
    """A live session and its user, as :meth:`Sessions.resume` found them."""

    session_id: str
    session: DashboardSession
    user: User


class Sessions:
    """The dashboard's sessions, kept in the messenger's store."""

    def __init__(self, messenger: Messenger) -> None:
        self._store = messenger.store
        self._clock: Clock = messenger.clock

    async def start(self, user: User, *, replacing: str | None = None) -> str:
        """A new session for ``user``; returns its id (the cookie's value). The session the
        browser held before, if any, ends: an id known before sign-in never works after."""
        if replacing:
            await self._store.delete_session(_hash(replacing))
        # Sessions nobody signed out of would stay forever: each sign-in sweeps the ones
        # that can no longer be used (a link lives at most LINK_LIFETIME, under the idle one).
        now = self._clock.now()
        await self._store.purge_sessions(
            seen_before=now - IDLE_LIFETIME, created_before=now - ABSOLUTE_LIFETIME
        )
        return await self._add(user, "session")

    async def issue_link(self, user: User) -> str:
        """A one-time login link's token for ``user``, valid for :data:`LINK_LIFETIME`."""
        return await self._add(user, "link")

    async def _add(self, user: User, kind: str) -> str:
        session_id = new_token()
        now = self._clock.now()
        await self._store.add_session(
            DashboardSession(
                id_hash=_hash(session_id),
                user_id=user.id,
                created_at=now,
                last_seen_at=now,
                csrf_token=new_token(),
                kind="link" if kind == "link" else "session",
                workspace_id=user.workspace_id,
            )
        )
        return session_id

    async def resume(self, session_id: str | None) -> SignedIn | None:
        """The live session with this id and its enabled user, else ``None`` (an expired
        one is deleted on the way)."""
        if not session_id:
            return None
        session = await self._store.get_session(_hash(session_id))
        if session is None or session.kind != "session":
            return None
        now = self._clock.now()
        if _expired(session, now):
            await self._store.delete_session(session.id_hash)
            return None
        user = await self._store.get_user(session.user_id)
        if user is None or not user.enabled:
            return None
        if now - session.last_seen_at >= _TOUCH_EVERY:
            session = replace(session, last_seen_at=now)
            await self._store.update_session(session)
        return SignedIn(session_id, session, user)

    async def redeem_link(self, token: str) -> User | None:
        """The user a login link signs in, once: the link is gone after this call."""
        if not token:
            return None
        id_hash = _hash(token)
        link = await self._store.get_session(id_hash)
        if link is None or link.kind != "link":
            return None
        # Deleting first makes the link single-use even when two requests race for it.
        if not await self._store.delete_session(id_hash):
            return None
        if self._clock.now() - link.created_at > LINK_LIFETIME:
            return None
        user = await self._store.get_user(link.user_id)
        return user if user is not None and user.enabled else None

    async def end(self, session_id: str | None) -> None:
        if session_id:
            await self._store.delete_session(_hash(session_id))

    async def change_view(
        self, signed_in: SignedIn, *, workspace_id: str | None = None, livemode: bool | None = None
    ) -> None:
        """Remember what the user looks at: the workspace picker and the test/live switch."""
        session = signed_in.session
        changed = replace(
            session,
            workspace_id=session.workspace_id if workspace_id is None else workspace_id,
            livemode=session.livemode if livemode is None else livemode,
        )
        await self._store.update_session(changed)


def _expired(session: DashboardSession, now: datetime) -> bool:
    return (
        now - session.last_seen_at > IDLE_LIFETIME or now - session.created_at > ABSOLUTE_LIFETIME
    )


def visible_workspace(
    user: User, chosen: str | None, workspaces: list[Workspace]
) -> Workspace | None:
    """D31: the workspace a user looks at. A member sees their own and nothing else, whatever
    the session or a URL says; an operator the one they chose, else the oldest."""
    if not user.is_operator:
        return next((w for w in workspaces if w.id == user.workspace_id), None)
    return next((w for w in workspaces if w.id == chosen), workspaces[0] if workspaces else None)


class LoginThrottle:
    """D31's sign-in throttle, kept in the store so every process serving the dashboard
    counts the same attempts. In any 15 minutes:

    - :data:`PER_ACCOUNT_AND_CLIENT` attempts for one account from one client address;
    - :data:`PER_ACCOUNT` attempts for one account, from anywhere (a guesser with many
      addresses);
    - :data:`PER_CLIENT` attempts from one client address, whatever the account, successful
      ones included (one client cannot queue unbounded password checks by naming a new
      e-mail each time).

    An IPv6 client counts by its /64, the block one subscriber is given. Each attempt is
    claimed before its password is checked, atomically in the store, so concurrent
    attempts cannot race past a limit; a claim refused for a limit records nothing, so
    waiting it out always works. A successful sign-in forgets the account's attempts (the
    two per-account counts); the client's count keeps them. The keys are hashes: the table
    holds no e-mail or address.
    """

    WINDOW: Final = timedelta(minutes=15)
    PER_ACCOUNT_AND_CLIENT: Final = 5
    PER_ACCOUNT: Final = 20
    PER_CLIENT: Final = 30

    def __init__(self, messenger: Messenger) -> None:
        self._store = messenger.store
        self._clock: Clock = messenger.clock

    async def claim(self, email: str, client: str | None) -> timedelta | None:
        """Count one sign-in attempt, before its password is checked: ``None`` if it may go
        on, else how long until it may (and nothing was counted)."""
        now = self._clock.now()
        keys = _keys(email, client)
        limits = (
            (keys.pair, self.PER_ACCOUNT_AND_CLIENT),
            (keys.account, self.PER_ACCOUNT),
            (keys.client, self.PER_CLIENT),
        )
        frees = await self._store.claim_login_attempt(limits, now, since=now - self.WINDOW)
        if frees is None:
            return None
        # Free again when that attempt leaves the window (never "wait 0 seconds").
        return max(frees + self.WINDOW - now, timedelta(seconds=1))

    async def succeeded(self, email: str, client: str | None) -> None:
        keys = _keys(email, client)
        await self._store.clear_login_failures(keys.pair, keys.account)


class _Keys(NamedTuple):
    """The throttle's three keys for one attempt, each a SHA-256 naming its kind."""

    pair: str
    account: str
    client: str


def _keys(email: str, client: str | None) -> _Keys:
    # The account as typed, normalized the way sign-in reads it: Ops@X and ops@x are one.
    account = email.strip().lower()
    address = client_block(client)
    return _Keys(
        pair=_hash(f"pair\n{account}\n{address}"),
        account=_hash(f"account\n{account}"),
        client=_hash(f"client\n{address}"),
    )


def client_block(client: str | None) -> str:
    """The address the throttle counts a client by: an IPv4 address as it is, an IPv6
    address by its /64 (an IPv4-mapped one as the IPv4 address), ``-`` when unknown."""
    if client is None:
        return "-"
    try:
        address = ipaddress.ip_address(client)
    except ValueError:
        return client
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)
