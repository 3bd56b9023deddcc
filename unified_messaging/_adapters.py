"""Which adapter a message goes through: the simulator for test keys (D2), else the
connection's live adapter, built once per connection from its decrypted credentials and
kept (with its pooled HTTP client) until the connection changes or the messenger closes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence

from ._clock import Clock
from ._domain import Connection
from ._errors import InvalidCredentials
from ._types import ProviderCode
from ._vault import Vault
from .providers._http import CredentialsModel
from .providers.base import (
    AdapterFactory,
    InboundCallback,
    ProviderAdapter,
    ProviderReport,
    SubmitOutcome,
    SubmitRequest,
)
from .providers.simulator import SimulatedSubmission, Simulator, SimulatorSettings

__all__ = ["AdapterPool"]


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


class AdapterPool:
    """The adapters of one messenger. ``live_adapters=None`` means the seven shipped ones."""

    def __init__(
        self,
        *,
        vault: Vault,
        clock: Clock,
        live_adapters: Mapping[ProviderCode, AdapterFactory] | None,
        simulator_settings: SimulatorSettings,
        on_simulated: Callable[[SimulatedSubmission], None] | None,
    ) -> None:
        from .providers.registry import LIVE_ADAPTERS  # the adapters import httpx & co.

        self._vault = vault
        self._clock = clock
        self._factories: dict[ProviderCode, AdapterFactory] = (
            dict(live_adapters)
            if live_adapters is not None
            else {code: spec.factory for code, spec in LIVE_ADAPTERS.items()}
        )
        #: The credentials schema of each provider whose shipped adapter is in use; adapters
        #: a caller brings check their own credentials.
        self.credential_schemas: Mapping[ProviderCode, type[CredentialsModel]] = {
            code: spec.credentials
            for code, spec in LIVE_ADAPTERS.items()
            if self._factories.get(code) is spec.factory
        }
        self._simulator_settings = simulator_settings
        self._on_simulated = on_simulated
        self._simulators: dict[ProviderCode, ProviderAdapter] = {}
        self._live: dict[str, tuple[Connection, ProviderAdapter]] = {}
        self._retired: list[ProviderAdapter] = []

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
        adapter = self._build_live(connection)
        if cached is not None:
            self._retired.append(cached[1])  # may still be in use by a send in flight
        self._live[connection.id] = (connection, adapter)
        return adapter

    def _build_live(self, connection: Connection) -> ProviderAdapter:
        factory = self._factories.get(connection.provider)
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
        adapters = [adapter for _, adapter in self._live.values()]
        adapters += [*self._simulators.values(), *self._retired]
        self._live.clear()
        self._retired.clear()
        self._simulators.clear()
        await asyncio.gather(*(a.aclose() for a in adapters), return_exceptions=True)
