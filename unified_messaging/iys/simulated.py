"""The simulated İYS of test mode (D2, D33): test keys never reach İYS.

Test consents are registered with it (each change at once, with a transaction id of its
own), and the hand-over gate asks it about a test recipient with no consent on record, as it
asks İYS about a live one. It knows three magic recipients (docs/testing.md, beside the
provider simulator's):

| number | İYS's record (MESAJ, BIREYSEL and TACIR) |
|---|---|
| ``+90 555 000 00 21`` | ``ONAY`` |
| ``+90 555 000 00 22`` | ``RET`` |
| ``+90 555 000 00 23`` | none (as every other number without a test consent) |

It keeps nothing of its own and lists no changes: what a test consent says is kept by the
consents store, which the gate reads first.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Final

from .wire import ChangesPage, IysRecord, Registered, WireConsent

__all__ = ["MAGIC_NONE", "MAGIC_ONAY", "MAGIC_RET", "SimulatedIys"]

MAGIC_ONAY: Final = "+905550000021"
MAGIC_RET: Final = "+905550000022"
MAGIC_NONE: Final = "+905550000023"
_RECORDS: Final[Mapping[str, str]] = {MAGIC_ONAY: "ONAY", MAGIC_RET: "RET"}
#: The date the magic records carry (İYS's first moment).
_SINCE: Final = "2015-05-01 00:00:00"


class SimulatedIys:
    """:class:`~.backend.IysBackend` of the test world (one consent at a time: no bulk)."""

    def __repr__(self) -> str:
        return "SimulatedIys()"

    async def ready(self, *, wait: bool = True) -> None:
        return None

    async def add(self, consent: WireConsent) -> Registered:
        seed = "|".join(str(v) for v in consent.body().values()).encode("utf-8")
        return Registered(f"sim-{hashlib.sha256(seed).hexdigest()[:32]}", None)

    async def status(self, recipient: str, recipient_type: str, type_: str) -> IysRecord | None:
        status = _RECORDS.get(recipient) if type_ == "MESAJ" else None
        return None if status is None else IysRecord(status, _SINCE, "HS_2015")

    async def changes(self, source: str, after: str | None) -> ChangesPage:
        return ChangesPage(after, ())
