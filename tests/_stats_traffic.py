"""Known traffic for the delivery-figure tests (REST, library, Client, dashboard): a test-mode
workspace on each store, and a few days of messages whose figures are worked out by hand.

The clock starts at :data:`NOW` (09:30 in Istanbul). :func:`send_traffic` sends, through
the library, with the simulator's magic numbers (DESIGN §6) and reports 3 s after each
hand-over:

- two days ago, 10:30 UTC: two messages, delivered;
- three hours ago (03:30 UTC): three messages, delivered;
- an hour ago (05:30 UTC): one that sms_a refuses and sms_b delivers (a fallback), one
  whose report says expired, one sms_a refuses with no fallback (failed);
- now: two verifications started (their two code messages delivered), one approved.

So the last 24 hours hold 8 messages (6 delivered, 1 expired, 1 failed) and the last 7 days
10; sms_a took 7 of the 24 hours' attempts and refused 2 (one followed by sms_b).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

from _sql_apps import sql_store

from unified_messaging import ManualClock, Messenger, Vault
from unified_messaging.providers.simulator import SimulatorSettings
from unified_messaging.testing import Outbox, TestBed, create_testbed

__all__ = ["NOW", "REPORT_DELAY", "send_traffic", "stats_bed"]

NOW: Final = datetime(2026, 3, 2, 6, 30, tzinfo=UTC)
REPORT_DELAY: Final = timedelta(seconds=3)
NORMAL: Final = "+905551234567"


@asynccontextmanager
async def stats_bed(backend: str, directory: Path) -> AsyncIterator[TestBed]:
    """A test-mode workspace (no flood guard) on ``backend``: memory, sqlite or postgres."""
    outbox = Outbox()
    clock = ManualClock(NOW)

    def messenger_on(store: object) -> Messenger:
        return Messenger(
            store,  # type: ignore[arg-type]
            clock=clock,
            vault=Vault.generate(),
            simulator_settings=SimulatorSettings(report_delay=REPORT_DELAY),
            on_simulated=outbox.record,
        )

    if backend == "memory":
        messenger = messenger_on(None)
        yield await _bed(messenger, outbox)
        await messenger.aclose()
        return
    async with sql_store(backend, directory) as store:
        messenger = messenger_on(store)
        try:
            yield await _bed(messenger, outbox)
        finally:
            await messenger.aclose()


async def _bed(messenger: Messenger, outbox: Outbox) -> TestBed:
    return await create_testbed(messenger=messenger, outbox=outbox, recipient_limit=None)


async def send_traffic(bed: TestBed) -> None:
    """Send the module's traffic, each batch's reports applied, the clock back at NOW."""
    clock = bed.clock
    assert isinstance(clock, ManualClock)
    m, auth = bed.messenger, bed.principal

    async def at(moment: datetime, *sends: dict[str, object]) -> None:
        clock.set(moment)
        for send in sends:
            await m.send(auth, send)
        clock.advance(REPORT_DELAY)
        await m.worker().run_until_idle()

    normal = {"to": NORMAL, "body": "Merhaba"}
    await at(NOW - timedelta(days=2) + timedelta(hours=4), normal, normal)
    await at(NOW - timedelta(hours=3), normal, normal, normal)
    await at(
        NOW - timedelta(hours=1),
        {"to": "+905550000011", "body": "Yedek", "fallback": ["sms_b"]},
        {"to": "+905550000004", "body": "Süresi doldu"},
        {"to": "+905550000001", "body": "Reddedildi"},
    )
    clock.set(NOW)
    first = await m.verifications.start(auth, {"to": "+905557000001"})
    await m.verifications.start(auth, {"to": "+905557000002"})
    code = bed.outbox.last_code("+905557000001")
    assert code is not None
    await m.verifications.check(auth, first.id, {"code": code})
    clock.advance(REPORT_DELAY)
    await m.worker().run_until_idle()
    clock.set(NOW)
