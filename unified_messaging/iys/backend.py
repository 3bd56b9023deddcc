"""Where a workspace's consents go: İYS itself (live consents of a connected workspace) or
the simulated İYS (test consents, D2: a test key never reaches İYS).

:class:`IysBackend` is the seam: the registration, the pull and the gate's status lookup
talk to it only. :class:`LiveIys` is İYS's API with the shared token (a 401 renews the
token and calls once more); :class:`~.simulated.SimulatedIys` answers in the test world.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

from .errors import IysTokenExpired, IysUnavailable
from .simulated import SimulatedIys
from .wire import BulkAccepted, BulkResult, ChangesPage, IysRecord, Registered, WireConsent

if TYPE_CHECKING:
    import httpx

    from .api import IysApi
    from .store import IysStore
    from .tokens import SharedTokens

__all__ = ["Backends", "IysBackend", "LiveIys"]

T = TypeVar("T")


class IysBackend(Protocol):
    """Protocol: İYS, as the worker and the gate ask it."""

    #: Whether it takes asynchronous bulk requests (the simulated İYS does not).
    bulk: bool

    async def ready(self, *, wait: bool = True) -> None:
        """Make sure a call can be made now (a valid token): raises what would stop it
        before anything is sent."""
        ...

    async def add(self, consent: WireConsent) -> Registered: ...

    async def status(self, recipient: str, recipient_type: str, type_: str) -> IysRecord | None: ...

    async def add_many(self, consents: Sequence[WireConsent]) -> BulkAccepted: ...

    async def request_results(self, request_id: str) -> list[BulkResult]: ...

    async def changes(self, source: str, after: str | None) -> ChangesPage: ...


class LiveIys:
    """İYS's API for one connected workspace, every call with the shared token."""

    bulk = True

    def __init__(self, api: IysApi, tokens: SharedTokens, workspace_id: str) -> None:
        self._api = api
        self._tokens = tokens
        self._workspace_id = workspace_id

    def __repr__(self) -> str:
        return f"LiveIys({self._workspace_id!r}, {self._api!r})"

    async def ready(self, *, wait: bool = True) -> None:
        await self._tokens.access(self._workspace_id, self._api, wait=wait)

    async def add(self, consent: WireConsent) -> Registered:
        return await self._call(lambda token: self._api.add(token, consent))

    async def status(self, recipient: str, recipient_type: str, type_: str) -> IysRecord | None:
        return await self._call(
            lambda token: self._api.status(token, recipient, recipient_type, type_), wait=False
        )

    async def add_many(self, consents: Sequence[WireConsent]) -> BulkAccepted:
        return await self._call(lambda token: self._api.add_many(token, consents))

    async def request_results(self, request_id: str) -> list[BulkResult]:
        return await self._call(lambda token: self._api.request_results(token, request_id))

    async def changes(self, source: str, after: str | None) -> ChangesPage:
        return await self._call(lambda token: self._api.changes(token, source, after))

    async def _call(self, call: Callable[[str], Awaitable[T]], *, wait: bool = True) -> T:
        """``call`` with a valid token; on İYS's 401, once more with a new one."""
        access = await self._tokens.access(self._workspace_id, self._api, wait=wait)
        try:
            return await call(access.token)
        except IysTokenExpired:
            await self._tokens.spent(self._workspace_id, access.version)
        access = await self._tokens.access(self._workspace_id, self._api, wait=wait)
        try:
            return await call(access.token)
        except IysTokenExpired:
            await self._tokens.spent(self._workspace_id, access.version)
            raise IysUnavailable("İYS refused a new token (401).", retry_after=60) from None


class Backends:
    """The backend of a workspace and mode: the simulated İYS for test consents, İYS for
    live ones of a connected workspace, none for live ones of a workspace without."""

    def __init__(
        self, store: IysStore, tokens: SharedTokens, client: Callable[[], httpx.AsyncClient]
    ) -> None:
        self._store = store
        self._tokens = tokens
        self._client = client
        self._simulated = SimulatedIys()

    async def of(self, workspace_id: str, livemode: bool) -> IysBackend | None:
        if not livemode:
            return self._simulated
        connection = await self._store.get_iys_connection(workspace_id)
        if connection is None:
            return None
        from .api import IysApi  # loads httpx: only for a connected workspace

        api = IysApi(self._client(), connection.base_url, connection.iys_code,
                     connection.brand_code)  # fmt: skip
        return LiveIys(api, self._tokens, workspace_id)
