"""A messenger on a real SQL store (SQLite, PostgreSQL) connected to the loopback fake İYS
(``fakes.iys``), on a ManualClock, with its worker run by hand.

Not in ``conftest.py``: every test folder has a ``conftest`` module, so importing names from
one by that name depends on which was loaded first.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from _sql_apps import sql_store
from fakes.iys import FakeIys, serve
from fakes.netgsm import NetgsmFake

from unified_messaging import ManualClock, Messenger, Vault
from unified_messaging._access.principal import Principal
from unified_messaging.consents.models import ConsentOut
from unified_messaging.consents.rules import GMT3
from unified_messaging.iys import IysSettings
from unified_messaging.providers.netgsm import NetgsmAdapter
from unified_messaging.store.base import Store

__all__ = ["NOW", "Rig", "iys_rig", "onay"]

#: Wednesday 2 December 2026, 10:00 in Türkiye.
NOW = datetime(2026, 12, 2, 10, 0, tzinfo=GMT3)


def onay(recipient: str, **fields: Any) -> dict[str, Any]:
    return {"recipient": recipient, "status": "ONAY", "source": "HS_WEB", **fields}


@dataclass
class Rig:
    messenger: Messenger
    clock: ManualClock
    fake: FakeIys
    store: Store
    workspace_id: str
    base_url: str
    vault: Vault
    client: httpx.AsyncClient
    netgsm: NetgsmFake = field(default_factory=NetgsmFake)
    slept: list[float] = field(default_factory=list)

    async def live(self) -> Principal:
        return await self.messenger.principal(self.workspace_id, livemode=True)

    async def test(self) -> Principal:
        return await self.messenger.principal(self.workspace_id, livemode=False)

    async def connect(self, **changes: Any) -> None:
        body = {"iys_code": self.fake.iys_code, "brand_code": self.fake.brand_code,
                "username": self.fake.username, "password": self.fake.password,
                "base_url": self.base_url, **changes}  # fmt: skip
        await self.messenger.iys.connect(self.workspace_id, body)

    async def record(self, recipient: str, status: str = "ONAY", **fields: Any) -> ConsentOut:
        body = onay(recipient, status=status, **fields)
        return await self.messenger.consents.create(await self.live(), body)

    async def work(self, *, batch: int = 50) -> int:
        return await self.messenger.worker(batch=batch).run_until_idle()

    async def later(self, seconds: float) -> int:
        """Move the clock on, then run what fell due."""
        self.clock.advance(timedelta(seconds=seconds))
        return await self.work()

    async def send(self, to: str, *, live: bool = True, **request: Any) -> dict[str, Any]:
        """A commercial SMS through NetGSM (the live adapter on its fake); its record."""
        principal = await (self.live() if live else self.test())
        body = {"to": to, "body": "Kampanya: %20 indirim", "category": "commercial", **request}
        sent = await self.messenger.send(principal, body)
        return (await self.messenger.get_message(principal, sent.job_id)).to_dict()

    async def send_bulk(self, *recipients: str, live: bool = True) -> list[dict[str, Any]]:
        principal = await (self.live() if live else self.test())
        body = {"items": [{"to": to, "body": "Kampanya"} for to in recipients],
                "category": "commercial"}  # fmt: skip
        answer = await self.messenger.send_bulk(principal, body)
        return [result.to_dict() for result in answer.results]

    async def message(self, job_id: str, *, live: bool = True) -> dict[str, Any]:
        principal = await (self.live() if live else self.test())
        return (await self.messenger.get_message(principal, job_id)).to_dict()

    def netgsm_numbers(self) -> list[str]:
        return ["+90" + row.number[-10:] for row in self.netgsm.rows]

    async def state(self, consent_id: str) -> dict[str, Any]:
        detail = await self.messenger.consents.get(await self.live(), consent_id)
        return detail.to_dict()

    def other(self, **settings: Any) -> Messenger:
        """A second messenger on the same store: another process of the same deployment."""
        return Messenger(
            self.store, clock=self.clock, vault=self.vault,
            iys=IysSettings(client=self.client, sleep=self._sleep, **settings),
        )  # fmt: skip

    async def _sleep(self, seconds: float) -> None:
        # A moment of real time (another task may be fetching the token over the loopback),
        # and the whole wait on the clock.
        self.slept.append(seconds)
        await asyncio.sleep(min(seconds, 0.02))
        self.clock.advance(timedelta(seconds=seconds))


@contextlib.asynccontextmanager
async def iys_rig(
    backend: str, directory: Path, *, connect: bool = True, fake: FakeIys | None = None,
    vault: Vault | None = None, **settings: Any,
) -> AsyncIterator[Rig]:  # fmt: skip
    fake = fake or FakeIys()
    clock = ManualClock(NOW)
    vault = vault or Vault.generate()
    netgsm = NetgsmFake()
    async with (
        sql_store(backend, directory) as store,
        serve(fake.app()) as base_url,
        serve(netgsm.app) as netgsm_url,
        httpx.AsyncClient(timeout=5) as client,
    ):
        rig = Rig(None, clock, fake, store, "", base_url, vault, client, netgsm)  # type: ignore[arg-type]
        messenger = Messenger(
            store, clock=clock, vault=vault, live_adapters={"sms_a": NetgsmAdapter},
            iys=IysSettings(client=client, sleep=rig._sleep, **settings),
        )  # fmt: skip
        rig.messenger = messenger
        async with messenger:
            workspace = await messenger.workspaces.create("iys", recipient_limit=None)
            rig.workspace_id = workspace.id
            await messenger.connections.add(
                workspace.id, "sms_a", base_url=netgsm_url, default_sender="ACME",
                credentials={"usercode": netgsm.usercode, "password": netgsm.password},
            )  # fmt: skip
            if connect:
                await rig.connect()
            yield rig
