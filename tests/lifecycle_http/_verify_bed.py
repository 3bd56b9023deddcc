"""A served app for the Verify tests (D34): uvicorn on a loopback socket over a SQL store.

Live SMS goes to a local Verimor (``sms_c``) fake that speaks its wire format; test keys use
the simulator. A webhook receiver records every event the worker delivers.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from _sql_apps import sql_store
from _support import LOOPBACK, Receiver, bearer, running_servers, start_receiver
from fakes.verimor import FakeVerimor

from unified_messaging import ManualClock, Messenger, Vault
from unified_messaging.webhooks import verify

__all__ = ["CODE", "TO", "Bed", "verify_bed"]

TO = "+905551234567"
#: A code in a message: the only run of 4-10 digits in the default texts.
CODE = re.compile(r"(?<![0-9])[0-9]{4,10}(?![0-9])")


@dataclass
class Bed:
    messenger: Messenger
    clock: ManualClock
    http: httpx.AsyncClient
    verimor: FakeVerimor
    receiver: Receiver
    workspace_id: str
    live: str
    test: str
    other: str  # a test key of another workspace
    webhook_secret: str

    def events(self, event_type: str) -> list[dict[str, Any]]:
        """The ``event_type`` events the receiver got, each verified with its secret."""
        found = []
        for delivery in self.receiver.deliveries:
            # Signed at the worker's (manual) time: verified as of then.
            event = verify(
                delivery.body, delivery.headers, self.webhook_secret, now=self.clock.now()
            )
            if event["type"] == event_type:
                found.append(event)
        return found

    async def start(self, key: str, **payload: object) -> httpx.Response:
        body = {"to": TO, **payload}
        return await self.http.post("/v1/verifications", json=body, headers=bearer(key))

    async def check(self, key: str, verification_id: str, code: object) -> httpx.Response:
        path = f"/v1/verifications/{verification_id}/check"
        return await self.http.post(path, json={"code": code}, headers=bearer(key))

    async def get(self, key: str, path: str) -> httpx.Response:
        return await self.http.get(path, headers=bearer(key))

    async def message(self, key: str, job_id: str) -> dict[str, Any]:
        response = await self.get(key, f"/v1/messages/{job_id}")
        assert response.status_code == 200, response.text
        document: dict[str, Any] = response.json()
        return document

    async def code_of(self, key: str, started: httpx.Response) -> str:
        """The code, read as a user of test mode would: from the message's ``body``."""
        job_id = started.json()["sends"][-1]["job_id"]
        found = CODE.search((await self.message(key, job_id))["body"])
        assert found is not None
        return found[0]

    def live_code(self) -> str:
        """The code of the last live message, as the (fake) provider received it."""
        found = CODE.search(self.verimor.received[-1].json["messages"][0]["msg"])
        assert found is not None
        return found[0]

    async def deliver_events(self) -> None:
        worker = self.messenger.worker()
        while await worker.run_once():
            pass


@asynccontextmanager
async def verify_bed(backend: str, directory: Path) -> AsyncIterator[Bed]:
    async with sql_store(backend, directory) as store:
        clock = ManualClock()
        messenger = Messenger(store, clock=clock, vault=Vault.generate(), webhook_policy=LOOPBACK)
        await messenger.open()
        try:
            async with running_servers() as servers:
                verimor = FakeVerimor()
                verimor_url = await servers.start(verimor.app)
                workspace = await messenger.workspaces.create("verify")
                await messenger.connections.add(
                    workspace.id,
                    "sms_c",
                    credentials={"username": verimor.username, "password": verimor.password},
                    default_sender="UMTEST",
                    base_url=verimor_url,
                )
                receiver = await start_receiver(servers)
                endpoint = await messenger.webhooks.create(workspace.id, receiver.url)
                other = await messenger.workspaces.create("someone else")
                await messenger.connections.add(
                    other.id, "sms_c", credentials={"username": "1", "password": "2"},
                    default_sender="UMTEST",
                )  # fmt: skip
                from unified_messaging.asgi import create_app

                url = await servers.start(create_app(messenger, worker=False, mcp=False))
                # No time-out: the tests assert outcomes. httpx's default five seconds ran out
                # on a loaded machine for the last of twenty concurrent checks, which waits
                # out a compare-and-set round for each one before it (a ReadTimeout).
                async with httpx.AsyncClient(base_url=url, timeout=None) as http:  # noqa: S113
                    yield Bed(
                        messenger=messenger,
                        clock=clock,
                        http=http,
                        verimor=verimor,
                        receiver=receiver,
                        workspace_id=workspace.id,
                        live=(await messenger.keys.create(workspace.id, livemode=True)).secret,
                        test=(await messenger.keys.create(workspace.id, livemode=False)).secret,
                        other=(await messenger.keys.create(other.id, livemode=False)).secret,
                        webhook_secret=endpoint.secret,
                    )
        finally:
            await messenger.aclose()
