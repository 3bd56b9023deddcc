"""Where a workspace's consents go: İYS itself (live consents of a connected workspace) or
the simulated İYS (test consents, D2: a test key never reaches İYS).

:class:`IysBackend` is the seam: the registration, the pull and the gate's status lookup
talk to it only. :class:`LiveIys` is İYS's API with the shared token (a 401 renews the
token and calls once more); :class:`~.simulated.SimulatedIys` answers in the test
world; :class:`~.providers.IletimerkeziConsents` and :class:`~.providers.VerimorConsents`
register through a provider's consent API, for a
workspace connected ``via_provider``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

from .errors import IysTokenExpired, IysUnavailable
from .records import CONSENT_PROVIDERS
from .simulated import SimulatedIys
from .wire import BulkAccepted, BulkResult, ChangesPage, IysRecord, Registered, WireConsent

if TYPE_CHECKING:
    import httpx

    from ..store.base import Store
    from ..vault._core import Vault
    from .api import IysApi
    from .tokens import SharedTokens

__all__ = ["Backends", "BulkBackend", "IysBackend", "ListingBackend", "LiveIys"]

T = TypeVar("T")


class IysBackend(Protocol):
    """Protocol: İYS, as the worker and the gate ask it."""

    async def ready(self, *, wait: bool = True) -> None:
        """Make sure a call can be made now (a valid token): raises what would stop it
        before anything is sent."""
        ...

    async def add(self, consent: WireConsent) -> Registered: ...

    async def status(self, recipient: str, recipient_type: str, type_: str) -> IysRecord | None: ...

    async def changes(self, source: str, after: str | None) -> ChangesPage: ...


@runtime_checkable
class BulkBackend(IysBackend, Protocol):
    """Protocol: a backend that also takes İYS's asynchronous bulk requests (İYS itself;
    neither the simulated İYS nor a provider's consent API has them)."""

    async def add_many(self, consents: Sequence[WireConsent]) -> BulkAccepted: ...

    async def request_results(self, request_id: str) -> list[BulkResult]: ...


@runtime_checkable
class ListingBackend(IysBackend, Protocol):
    """Protocol: a backend that also takes a list of consents in one synchronous request,
    all or none (İletimerkezi's consent API, up to ``max_list``)."""

    max_list: int

    async def add_list(self, consents: Sequence[WireConsent]) -> None: ...


class LiveIys:
    """İYS's API for one connected workspace, every call with the shared token."""

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
        self, store: Store, tokens: SharedTokens, client: Callable[[], httpx.AsyncClient],
        vault: Vault,
    ) -> None:  # fmt: skip
        self._store = store
        self._tokens = tokens
        self._client = client
        self._vault = vault
        self._simulated = SimulatedIys()

    async def of(self, workspace_id: str, livemode: bool) -> IysBackend | None:
        if not livemode:
            return self._simulated
        connection = await self._store.get_iys_connection(workspace_id)
        if connection is None:
            return None
        if connection.via_connection is not None:
            return await self._through_provider(workspace_id, connection.via_connection,
                                                connection.brand_code)  # fmt: skip
        from .api import IysApi  # loads httpx: only for a connected workspace

        api = IysApi(self._client(), connection.base_url, connection.iys_code,
                     connection.brand_code)  # fmt: skip
        return LiveIys(api, self._tokens, workspace_id)

    async def _through_provider(
        self, workspace_id: str, connection_id: str, brand_code: int
    ) -> IysBackend | None:
        """The consent API of the provider connection, with its credentials; none when
        the connection is gone or holds no credentials (its consents wait, pending)."""
        from .providers import provider_backend

        provider = await self._store.get_connection(connection_id)
        if provider is None or provider.workspace_id != workspace_id:
            return None
        if provider.provider not in CONSENT_PROVIDERS:
            return None
        credentials = self._vault.decrypt_json(
            provider.credentials, workspace_id=workspace_id, connection_id=provider.id
        )
        if not credentials:
            return None
        return provider_backend(provider, credentials, brand_code, self._client())
