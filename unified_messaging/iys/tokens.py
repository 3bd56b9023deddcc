"""İYS's token, one for every process of a workspace (D33).

İYS hands out an access token for 7,200 s and a refresh token for 14,400 s
(``POST /oauth2/token``), and allows few token requests an hour. So the token is kept in the
store, sealed by the vault, and every process (servers, workers, the CLI) uses the one
there. When it is about to run out (:data:`REFRESH_MARGIN` before), one process takes a
short lease on it by compare-and-set (:meth:`IysStore.swap_iys_token`), asks İYS for a new
one (a refresh grant while the refresh token lasts, else the password), and stores it; the
others wait for it, or, on the send path, do not wait (:class:`IysUnavailable`: the message
is held and asked again). A 401 to a call made with a token marks that token spent
(:meth:`SharedTokens.spent`); the next call asks for a new one.

No more than ``per_hour`` token requests are made for a workspace in any hour, across every
process (the requests are counted in the store): past it, :class:`IysTokenLimit`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Final

from .errors import IysCredentialsRefused, IysNotConnected, IysTokenLimit, IysUnavailable
from .records import IysConnection, IysToken

if TYPE_CHECKING:
    from .._clock import Clock
    from ..vault._core import Vault
    from .api import IysApi
    from .store import IysStore
    from .wire import TokenGrant

__all__ = [
    "DEFAULT_TOKEN_REQUESTS_PER_HOUR",
    "REFRESH_MARGIN",
    "Access",
    "SharedTokens",
    "open_password",
    "seal_password",
]

logger = logging.getLogger("unified_messaging.iys")

#: A token this close to its end is renewed before it is used.
REFRESH_MARGIN: Final = timedelta(minutes=5)
#: How long one process may take to fetch a token before another may try.
FETCH_LEASE: Final = timedelta(seconds=30)
#: Our cap on token requests per workspace and hour (İYS allows "a few" an hour).
DEFAULT_TOKEN_REQUESTS_PER_HOUR: Final = 5
_HOUR: Final = timedelta(hours=1)
#: Where the vault binds what it seals for İYS (its AAD's "connection id").
_PASSWORD_SLOT: Final = "iys"  # noqa: S105 - a slot name, not a password
_TOKEN_SLOT: Final = "iys-token"  # noqa: S105 - a slot name, not a token
_WAIT_STEP: Final = 0.05
_WAIT_STEPS: Final = 200  # 10 s in all: a token request takes well under that

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Access:
    """An access token and the version of the stored token it came from."""

    token: str
    version: int

    def __repr__(self) -> str:
        return f"Access(version={self.version})"


def seal_password(vault: Vault, workspace_id: str, password: str) -> str:
    return vault.encrypt_json(
        {"password": password}, workspace_id=workspace_id, connection_id=_PASSWORD_SLOT
    )


def open_password(vault: Vault, connection: IysConnection) -> str:
    opened = vault.decrypt_json(
        connection.password, workspace_id=connection.workspace_id, connection_id=_PASSWORD_SLOT
    )
    return opened["password"]


class SharedTokens:
    """The workspace's token, shared through the store (see the module docstring)."""

    def __init__(
        self,
        store: IysStore,
        vault: Vault,
        clock: Clock,
        *,
        holder: str,
        per_hour: int = DEFAULT_TOKEN_REQUESTS_PER_HOUR,
        sleep: Sleep | None = None,
    ) -> None:
        self._store = store
        self._vault = vault
        self._clock = clock
        self._holder = holder
        self._per_hour = per_hour
        self._sleep = sleep or asyncio.sleep

    def __repr__(self) -> str:
        return f"SharedTokens(holder={self._holder!r})"

    async def access(self, workspace_id: str, api: IysApi, *, wait: bool = True) -> Access:
        """A valid access token, fetching one if the stored one is spent or about to be.
        ``wait=False``: raise :class:`IysUnavailable` rather than wait for another process
        that is fetching one."""
        for _ in range(_WAIT_STEPS):
            connection = await self._store.get_iys_connection(workspace_id)
            if connection is None:
                raise IysNotConnected(f"Workspace {workspace_id} has no İYS connection.")
            token, now = connection.token, self._clock.now()
            if _valid(token, now):
                return Access(self._open(connection)["access"], token.version)
            if _fetching(token, now):
                if not wait:
                    raise IysUnavailable("Another process is fetching İYS's token.", retry_after=1)
                await self._sleep(_WAIT_STEP)
                continue
            access = await self._fetch(connection, api, now)
            if access is not None:
                return access
        raise IysUnavailable("İYS's token was not fetched in time.", retry_after=5)

    async def spent(self, workspace_id: str, version: int) -> None:
        """İYS answered 401 to the access token of ``version``: the next caller renews it
        (its refresh token, if it still lasts, is kept for that)."""
        connection = await self._store.get_iys_connection(workspace_id)
        if connection is None or connection.token.version != version:
            return  # renewed already, by another call or process
        token = connection.token
        await self._store.swap_iys_token(
            workspace_id, version, replace(token, version=version + 1, access_expires_at=None)
        )

    async def _fetch(self, connection: IysConnection, api: IysApi, now: datetime) -> Access | None:
        """Take the fetch lease and fetch; ``None`` when another process took it first."""
        token = connection.token
        recent = tuple(moment for moment in token.grants if moment > now - _HOUR)
        if len(recent) >= self._per_hour:
            wait = (min(recent) + _HOUR - now).total_seconds()
            raise IysTokenLimit(
                f"{len(recent)} İYS token requests within the last hour; the next in {wait:.0f} s.",
                retry_after=max(wait, 1.0),
            )
        leased = replace(
            token,
            version=token.version + 1,
            lease_by=self._holder,
            lease_until=now + FETCH_LEASE,
            grants=recent,
        )
        if not await self._store.swap_iys_token(connection.workspace_id, token.version, leased):
            return None
        counted = (*recent, now)
        try:
            grant = await self._grant(connection, api, now)
        except BaseException:
            unleased = replace(
                leased, version=leased.version + 1, lease_by=None, lease_until=None,
                grants=counted,
            )  # fmt: skip
            await self._store.swap_iys_token(connection.workspace_id, leased.version, unleased)
            raise
        fresh = IysToken(
            version=leased.version + 1,
            sealed=self._seal(connection.workspace_id, grant),
            access_expires_at=now + timedelta(seconds=grant.expires_in),
            refresh_expires_at=(
                None
                if grant.refresh_token is None or grant.refresh_expires_in is None
                else now + timedelta(seconds=grant.refresh_expires_in)
            ),
            grants=counted,
        )
        if not await self._store.swap_iys_token(connection.workspace_id, leased.version, fresh):
            logger.warning("İYS's new token could not be stored: another process took over")
        return Access(grant.access_token, fresh.version)

    async def _grant(self, connection: IysConnection, api: IysApi, now: datetime) -> TokenGrant:
        token = connection.token
        if (
            token.sealed is not None
            and token.refresh_expires_at is not None
            and now < token.refresh_expires_at - REFRESH_MARGIN
        ):
            refresh = self._open(connection).get("refresh")
            if refresh:
                try:
                    return await api.refresh_grant(refresh)
                except IysCredentialsRefused:
                    logger.info("İYS refused the refresh token; asking with the password")
        return await api.password_grant(connection.username, open_password(self._vault, connection))

    def _seal(self, workspace_id: str, grant: TokenGrant) -> str:
        tokens = {"access": grant.access_token}
        if grant.refresh_token is not None:
            tokens["refresh"] = grant.refresh_token
        return self._vault.encrypt_json(
            tokens, workspace_id=workspace_id, connection_id=_TOKEN_SLOT
        )

    def _open(self, connection: IysConnection) -> dict[str, str]:
        sealed = connection.token.sealed
        if sealed is None:
            return {}
        return self._vault.decrypt_json(
            sealed, workspace_id=connection.workspace_id, connection_id=_TOKEN_SLOT
        )


def _valid(token: IysToken, now: datetime) -> bool:
    return (
        token.sealed is not None
        and token.access_expires_at is not None
        and now < token.access_expires_at - REFRESH_MARGIN
    )


def _fetching(token: IysToken, now: datetime) -> bool:
    """Is a token being fetched (by another process, or another task of this one)?"""
    return token.lease_until is not None and token.lease_until > now


def grant_token(grant: TokenGrant, workspace_id: str, vault: Vault, now: datetime) -> IysToken:
    """The stored token of a grant made outside :class:`SharedTokens` (``connect`` checks the
    credentials with a first grant and keeps it)."""
    tokens = {"access": grant.access_token}
    if grant.refresh_token is not None:
        tokens["refresh"] = grant.refresh_token
    return IysToken(
        version=0,
        sealed=vault.encrypt_json(tokens, workspace_id=workspace_id, connection_id=_TOKEN_SLOT),
        access_expires_at=now + timedelta(seconds=grant.expires_in),
        refresh_expires_at=(
            None
            if grant.refresh_token is None or grant.refresh_expires_in is None
            else now + timedelta(seconds=grant.refresh_expires_in)
        ),
        grants=(now,),
    )
