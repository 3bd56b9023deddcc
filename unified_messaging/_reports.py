"""``messenger.reports``: what providers push to ``/v1/dlr/{connection_id}/{token}`` (D20):
delivery reports, inbound replies, and a provider's subscription handshake. For hosts that
route provider callbacks themselves; the REST app's DLR route calls the same methods."""

from __future__ import annotations

import dataclasses
import hmac
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ._domain import Connection
from ._errors import MessagingError, RequestInvalid, ResourceNotFound
from ._text import storable
from .providers.base import (
    InboundCallback,
    ProviderAdapter,
    ProviderReport,
    ReadsInbound,
    RepliesToReports,
)
from .store.base import Store

if TYPE_CHECKING:
    from ._lifecycle.runtime import IngestResult, Lifecycle
    from ._routing.adapters import AdapterPool
    from .suppressions._service import OptOuts

__all__ = ["Reports"]


class Reports:
    """``messenger.reports.ingest(connection_id, token, callback)``."""

    def __init__(
        self, store: Store, adapters: AdapterPool, lifecycle: Lifecycle, opt_outs: OptOuts
    ) -> None:
        self._store = store
        self._adapters = adapters
        self._lifecycle = lifecycle
        self._opt_outs = opt_outs

    def __repr__(self) -> str:
        return "<messenger.reports>"

    async def ingest(
        self, connection_id: str, token: str, callback: InboundCallback
    ) -> IngestResult:
        """Apply a delivery-report request a provider sent to ``/v1/dlr/{connection_id}/{token}``
        (D20), for hosts that route provider callbacks themselves.

        An unknown connection or a wrong token is :class:`ResourceNotFound` (404, one answer
        for both, the token compared in constant time). A body the provider's format cannot
        read is :class:`RequestInvalid` (400); a ``bizchat`` body whose ``X-Hub-Signature-256``
        does not match is :class:`Unauthorized` (401). Reports for unknown message ids are
        counted in ``received`` but change nothing. A report in the simulator's push format
        (``{"provider_message_id", "status"}``) applies to test-mode messages only.
        """
        connection = await self._dlr_connection(connection_id, token)
        live, simulated = self._report_readers(connection)
        live_read: list[ProviderReport] | None = None
        if live is not None:
            try:
                live_read = live.parse_reports(callback)
            except RequestInvalid:
                if simulated is None:
                    raise
            if live_read is not None and isinstance(live, ReadsInbound):
                # Read after parse_reports, which checked the provider's signature.
                await self._opt_outs.take_inbound(
                    connection, live.parse_inbound(callback), livemode=True
                )
            if live_read:
                return _replied(
                    live, await self._lifecycle.ingest(connection, live_read, livemode=True)
                )
        assert simulated is not None
        try:
            reports = simulated.parse_reports(callback)
        except RequestInvalid:
            if live_read is None:
                raise
            # The provider's own format, read, with nothing for us in it (an inbound-message
            # webhook, another number's status): 200, or the provider retries it for days.
            return _replied(
                live, await self._lifecycle.ingest(connection, live_read, livemode=True)
            )
        return await self._lifecycle.ingest(connection, reports, livemode=False)

    async def challenge(
        self, connection_id: str, token: str, query: Mapping[str, str]
    ) -> str | None:
        """The answer to a provider's subscription handshake on the report URL (WhatsApp's
        ``hub.challenge``), or ``None`` when the connection's provider has none or refuses."""
        connection = await self._dlr_connection(connection_id, token)
        live, _ = self._report_readers(connection)
        challenge = getattr(live, "challenge", None)
        if challenge is None:
            return None
        answer = challenge(query)
        return answer if isinstance(answer, str) else None

    async def _dlr_connection(self, connection_id: str, token: str) -> Connection:
        if not (storable(connection_id) and storable(token)):
            # Neither can be the stored one; asking the store would fail instead of miss.
            raise ResourceNotFound("No delivery-report endpoint here.")
        connection = await self._store.get_connection(connection_id)
        expected = connection.dlr_token if connection is not None else ""
        # Constant time, and one answer for "no such connection" and "wrong token".
        if (
            connection is None
            or not expected
            or not hmac.compare_digest(expected.encode("utf-8"), token.encode("utf-8"))
        ):
            raise ResourceNotFound("No delivery-report endpoint here.")
        return connection

    def _report_readers(
        self, connection: Connection
    ) -> tuple[ProviderAdapter | None, ProviderAdapter | None]:
        """The live adapter (if the connection has credentials) and the simulator."""
        try:
            live: ProviderAdapter | None = self._adapters.for_connection(connection, livemode=True)
        except MessagingError:
            live = None
        return live, self._adapters.for_connection(connection, livemode=False)


def _replied(adapter: ProviderAdapter | None, result: IngestResult) -> IngestResult:
    """``result`` with the answer the provider wants for a report it pushed (D20), if any:
    the DLR endpoint sends it as is."""
    if isinstance(adapter, RepliesToReports):
        return dataclasses.replace(result, reply=adapter.report_reply)
    return result
