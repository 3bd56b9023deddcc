"""Which adapter a message goes through: the simulator for test keys (D2), else the
connection's live adapter, built once per connection from its decrypted credentials and
kept (with its pooled HTTP client) until the connection changes or the messenger closes.

When a connection changes (new credentials, another base URL, ...) its adapter is replaced.
The replaced one may still carry sends in flight, so it is closed when the last of them
returns (at once when none is), and a caller that took it before the change and calls it
afterwards reaches its replacement: no send fails for the change, and no pool is left open
until shutdown.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .._clock import Clock
from .._domain import Connection
from .._errors import InvalidCredentials
from .._observability.metrics import NO_METRICS, Metrics, timed_batch, timed_submit
from .._types import ProviderCode
from ..providers.base import (
    AdapterFactory,
    InboundCallback,
    ProviderAdapter,
    ProviderReport,
    SubmitOutcome,
    SubmitRequest,
)
from ..providers.simulator import SimulatedSubmission, Simulator, SimulatorSettings
from ..vault._core import Vault

if TYPE_CHECKING:
    from ..providers._credentials import CredentialsModel

__all__ = ["AdapterPool"]

logger = logging.getLogger("unified_messaging.adapters")

T = TypeVar("T")


class _UnreachableLiveAdapter:
    """Stands in for a live adapter this installation does not have, so routing moves on."""

    max_batch = 1

    def __init__(self, code: ProviderCode) -> None:
        self._code: ProviderCode = code

    @property
    def code(self) -> ProviderCode:
        return self._code

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        return SubmitOutcome.unavailable(f"No live adapter for {self._code} is installed.")

    async def submit_batch(self, requests: Sequence[SubmitRequest]) -> list[SubmitOutcome]:
        return [await self.submit(r) for r in requests]

    def parse_reports(self, callback: InboundCallback) -> list[ProviderReport]:
        return []

    async def poll_reports(self, provider_message_ids: Sequence[str]) -> list[ProviderReport]:
        return []

    async def aclose(self) -> None:
        return


class _LiveAdapter:
    """A connection's live adapter as the pool hands it out: counts the calls in flight.

    Retired (its connection changed), it is closed once no call is in flight; a call that
    starts after retirement goes to the adapter that replaced it.
    """

    __slots__ = ("_adapter", "_closed", "_connection_id", "_in_flight", "_pool", "_retired")

    def __init__(self, adapter: ProviderAdapter, pool: AdapterPool, connection_id: str) -> None:
        self._adapter = adapter
        self._pool = pool
        self._connection_id = connection_id
        self._in_flight = 0
        self._retired = False
        self._closed = False

    @property
    def code(self) -> ProviderCode:
        return self._adapter.code

    @property
    def max_batch(self) -> int:
        return self._adapter.max_batch

    @property
    def closed(self) -> bool:
        return self._closed

    # D30 times these calls: only live sends reach a provider (test keys go to the simulator).
    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        call = self._run(lambda adapter: adapter.submit(request))
        return await timed_submit(self._pool.metrics, self.code, call)

    async def submit_batch(self, requests: Sequence[SubmitRequest]) -> list[SubmitOutcome]:
        call = self._run(lambda adapter: adapter.submit_batch(requests))
        return await timed_batch(self._pool.metrics, self.code, call)

    async def poll_reports(self, provider_message_ids: Sequence[str]) -> list[ProviderReport]:
        return await self._run(lambda adapter: adapter.poll_reports(provider_message_ids))

    def parse_reports(self, callback: InboundCallback) -> list[ProviderReport]:
        # Reading a pushed report uses no connection of the pool.
        return self._adapter.parse_reports(callback)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self._adapter.aclose()
        except Exception as exc:  # a failed close must not fail the send that triggered it
            logger.warning("closing a %s adapter failed: %s", self.code, type(exc).__name__)

    def __getattr__(self, name: str) -> Any:
        # The rest of an adapter's own surface (check, challenge, profile, ...); its
        # coroutine methods are counted like the protocol's.
        if name.startswith("_"):
            raise AttributeError(name)
        value = getattr(self._adapter, name)
        if not inspect.iscoroutinefunction(value):
            return value

        async def counted(*args: Any, **kwargs: Any) -> Any:
            return await self._run(lambda adapter: getattr(adapter, name)(*args, **kwargs))

        return counted

    def __repr__(self) -> str:
        return f"<live {self._adapter!r}{' retired' if self._retired else ''}>"

    def retire(self) -> None:
        """Its connection changed: close it now if idle, else when its last call returns."""
        self._retired = True
        if self._in_flight == 0:
            self._pool.close_soon(self)

    async def _run(self, call: Callable[[ProviderAdapter], Awaitable[T]]) -> T:
        successor = self._successor()
        if successor is not None:
            return await successor._run(call)
        self._in_flight += 1
        try:
            return await call(self._adapter)
        finally:
            self._in_flight -= 1
            if self._retired and self._in_flight == 0:
                await self.aclose()

    def _successor(self) -> _LiveAdapter | None:
        if not self._retired:
            return None
        current = self._pool.current(self._connection_id)
        # None once the pool itself is closed: the call then fails as on any closed adapter.
        return current if current is not self else None


def _shipped() -> dict[ProviderCode, AdapterFactory]:
    # The shipped adapters import httpx, tenacity and their schemas (about 0.15 s): a pool
    # looks them up when a live adapter or a credentials schema is first needed, so a
    # process that never sends live (a one-shot admin command) never imports them.
    from ..providers.registry import LIVE_ADAPTERS

    return {code: spec.factory for code, spec in LIVE_ADAPTERS.items()}


class _CredentialSchemas(Mapping[ProviderCode, "type[CredentialsModel]"]):
    """The credentials schema of each provider whose shipped adapter the pool uses (adapters
    a caller brings check their own credentials), read from the registry when first asked."""

    __slots__ = ("_pool", "_schemas")

    def __init__(self, pool: AdapterPool) -> None:
        self._pool = pool
        self._schemas: dict[ProviderCode, type[CredentialsModel]] | None = None

    def _loaded(self) -> dict[ProviderCode, type[CredentialsModel]]:
        if self._schemas is None:
            from ..providers.registry import LIVE_ADAPTERS

            factories = self._pool.factories
            self._schemas = {
                code: spec.credentials
                for code, spec in LIVE_ADAPTERS.items()
                if factories.get(code) is spec.factory
            }
        return self._schemas

    def __getitem__(self, code: ProviderCode) -> type[CredentialsModel]:
        return self._loaded()[code]

    def __iter__(self) -> Iterator[ProviderCode]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())


class AdapterPool:
    """The adapters of one messenger. ``live_adapters=None`` means the seven shipped ones
    (imported when first needed); ``metrics`` times their live provider calls."""

    def __init__(
        self,
        *,
        vault: Vault,
        clock: Clock,
        live_adapters: Mapping[ProviderCode, AdapterFactory] | None,
        simulator_settings: SimulatorSettings,
        on_simulated: Callable[[SimulatedSubmission], None] | None,
        metrics: Metrics = NO_METRICS,
    ) -> None:
        self._vault = vault
        self._clock = clock
        self.metrics = metrics
        #: ``None`` until the shipped adapters are first needed (see _shipped).
        self._factories: dict[ProviderCode, AdapterFactory] | None = (
            dict(live_adapters) if live_adapters is not None else None
        )
        #: The credentials schema of each provider whose shipped adapter is in use; adapters
        #: a caller brings check their own credentials.
        self.credential_schemas: Mapping[ProviderCode, type[CredentialsModel]] = _CredentialSchemas(
            self
        )
        self._simulator_settings = simulator_settings
        self._on_simulated = on_simulated
        self._simulators: dict[ProviderCode, ProviderAdapter] = {}
        self._live: dict[str, tuple[Connection, _LiveAdapter]] = {}
        #: Closes of retired adapters under way (a task holds no strong reference of its own).
        self._closing: set[asyncio.Task[None]] = set()
        #: Retired adapters nobody could close yet (no running loop when they were retired).
        self._retired: list[_LiveAdapter] = []

    @property
    def factories(self) -> Mapping[ProviderCode, AdapterFactory]:
        """The live adapters' factories by provider code, resolved once."""
        if self._factories is None:
            self._factories = _shipped()
        return self._factories

    def for_connection(self, connection: Connection, *, livemode: bool) -> ProviderAdapter:
        """The adapter a send through ``connection`` uses in this mode.

        Raises :class:`InvalidCredentials` for a live send through a connection that has
        no credentials (it was added for test keys only).
        """
        if not livemode:
            return self._simulator(connection.provider)
        cached = self._live.get(connection.id)
        if cached is not None and cached[0] == connection:
            return cached[1]
        adapter = _LiveAdapter(self._build_live(connection), self, connection.id)
        self._live[connection.id] = (connection, adapter)
        if cached is not None:
            cached[1].retire()  # after the swap: its late callers reach the new adapter
        return adapter

    def current(self, connection_id: str) -> _LiveAdapter | None:
        """The live adapter now in use for ``connection_id``, if one was built."""
        cached = self._live.get(connection_id)
        return cached[1] if cached is not None else None

    def close_soon(self, adapter: _LiveAdapter) -> None:
        """Close a retired adapter that has no call in flight, without waiting for it."""
        try:
            task = asyncio.get_running_loop().create_task(adapter.aclose())
        except RuntimeError:  # no running loop: closed with the pool
            self._retired.append(adapter)
            return
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def settle(self) -> None:
        """Wait for the closes of retired adapters that are under way."""
        while self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)

    def _build_live(self, connection: Connection) -> ProviderAdapter:
        factory = self.factories.get(connection.provider)
        if factory is None:
            return _UnreachableLiveAdapter(connection.provider)
        credentials = self._vault.decrypt_json(
            connection.credentials,
            workspace_id=connection.workspace_id,
            connection_id=connection.id,
        )
        if not credentials:
            raise InvalidCredentials(
                f"The {connection.provider} connection has no credentials: "
                "it can send with test keys only."
            )
        return factory(connection, credentials)

    def _simulator(self, code: ProviderCode) -> ProviderAdapter:
        simulator = self._simulators.get(code)
        if simulator is None:
            simulator = self._simulators[code] = Simulator(
                code,
                clock=self._clock,
                settings=self._simulator_settings,
                record=self._on_simulated,
            )
        return simulator

    async def aclose(self) -> None:
        adapters: list[ProviderAdapter] = [adapter for _, adapter in self._live.values()]
        adapters += [*self._simulators.values(), *self._retired]
        self._live.clear()
        self._retired.clear()
        self._simulators.clear()
        await asyncio.gather(*(a.aclose() for a in adapters), return_exceptions=True)
        await self.settle()
