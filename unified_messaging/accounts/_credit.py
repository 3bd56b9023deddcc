"""After a send refused for credit, read that account again soon: a wrapper of the circuit
breakers routing consults, since they hear every live outcome of every connection."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from ._service import refresh_item

if TYPE_CHECKING:
    from .._clock import Clock
    from .._domain import Connection
    from .._routing.breaker import Admission, Breakers
    from ..providers.base import SubmitOutcome
    from ..store.base import Store

__all__ = ["NO_CREDIT", "CreditWatch"]

#: The code every adapter gives a refusal for want of credit (NetGSM 14, İletimerkezi 402,
#: Verimor ``INSUFFICIENT_CREDITS``, Mutlucell 22, Jasmin ``Cannot charge submit_sm``).
NO_CREDIT: Final = "INSUFFICIENT_CREDIT"


class CreditWatch:
    """:class:`~.._routing.breaker.Breakers` that queue a one-off account reading of a
    connection whose provider refused a send for credit, then do what ``breakers`` do."""

    def __init__(self, breakers: Breakers, store: Store, clock: Clock) -> None:
        self._breakers = breakers
        self._store = store
        self._clock = clock

    async def allow(self, connection: Connection) -> Admission:
        return await self._breakers.allow(connection)

    async def record(
        self, connection: Connection, outcomes: Sequence[SubmitOutcome], admission: Admission
    ) -> None:
        await self._breakers.record(connection, outcomes, admission)
        if any(o.error is not None and o.error.code == NO_CREDIT for o in outcomes):
            item = refresh_item(connection.id, now=self._clock.now(), once=True)
            await self._store.enqueue_work_many([item])
