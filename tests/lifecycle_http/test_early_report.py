"""A delivery report that arrives before our own answer from the provider.

A push provider may report on a message before it has answered the submit (or before the
send's transaction storing that answer has committed). The report used to be answered
``matched: 0`` and dropped; the message then waited for its DLR time-out and, with
fallback, went out a second time through the next provider. Here a Verimor fake pushes the
report to the real app over HTTP, and only then answers the submit.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from _support import bearer, dlr_path, running_servers
from fakes.iletimerkezi import IletimerkeziFake
from fakes.verimor import FakeVerimor
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from unified_messaging import ManualClock, Messenger, Vault, generate_key_spec
from unified_messaging._domain import Connection
from unified_messaging.asgi import create_app
from unified_messaging.store.base import Store
from unified_messaging.store.memory import MemoryStore
from unified_messaging.store.sql import SqlStore

TO = "+905321234567"


@dataclass
class EagerVerimor:
    """Verimor, whose report of a campaign reaches the report URL before its send answer."""

    fake: FakeVerimor = field(default_factory=FakeVerimor)
    report_url: str = ""
    #: What the app answered to each early push.
    pushed: list[dict[str, Any]] = field(default_factory=list)

    @property
    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v2/send.json", self._send, methods=["POST"])])

    async def _send(self, request: Request) -> Response:
        answer = await self.fake._send(request)
        if answer.status_code == 200:
            campaign = int(bytes(answer.body).decode())
            async with httpx.AsyncClient() as http:
                pushed = await http.post(
                    self.report_url,
                    content=self.fake.report_push(campaign),
                    headers={"content-type": "application/json"},
                )
            assert pushed.status_code == 200, pushed.text
            self.pushed.append(pushed.json())
        return answer


@dataclass
class World:
    clock: ManualClock
    messenger: Messenger
    http: httpx.AsyncClient
    verimor: EagerVerimor
    iletimerkezi: IletimerkeziFake
    api_key: str

    async def send(self, **extra: object) -> dict[str, Any]:
        response = await self.http.post(
            "/v1/messages",
            json={"to": TO, "body": "Merhaba", "provider": "sms_c", **extra},
            headers=bearer(self.api_key),
        )
        assert response.status_code == 201, response.text
        document: dict[str, Any] = response.json()
        return document

    async def get(self, job_id: str) -> dict[str, Any]:
        response = await self.http.get(f"/v1/messages/{job_id}", headers=bearer(self.api_key))
        assert response.status_code == 200, response.text
        document: dict[str, Any] = response.json()
        return document

    async def work(self, advance: timedelta) -> None:
        self.clock.advance(advance)
        await self.messenger.worker().run_until_idle()


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "memory":
        return MemoryStore()
    return SqlStore(f"sqlite+aiosqlite:///{tmp_path / 'early.db'}")


@pytest.fixture
async def world(store: Store) -> AsyncIterator[World]:
    clock = ManualClock()
    messenger = Messenger(store, clock=clock, vault=Vault.from_spec(generate_key_spec()))
    verimor, iletimerkezi = EagerVerimor(), IletimerkeziFake(senders=("ACME",))
    try:
        async with running_servers() as servers:
            verimor_url = await servers.start(verimor.app)
            iletimerkezi_url = await servers.start(iletimerkezi.app)
            app_url = await servers.start(create_app(messenger, worker=False, mcp=False),
                                          lifespan=True)  # fmt: skip
            workspace = await messenger.workspaces.create("Acme")
            sms_c: Connection = await messenger.connections.add(
                workspace.id, "sms_c", default_sender="UMTEST", base_url=verimor_url,
                credentials={"username": verimor.fake.username,
                             "password": verimor.fake.password},
                dlr_timeout=timedelta(minutes=30),
            )  # fmt: skip
            await messenger.connections.add(
                workspace.id, "sms_b", default_sender="ACME", base_url=iletimerkezi_url,
                credentials={"api_key": iletimerkezi.key, "api_hash": iletimerkezi.hash},
            )  # fmt: skip
            verimor.report_url = app_url + dlr_path(sms_c)
            key = await messenger.keys.create(workspace.id, livemode=True)
            async with httpx.AsyncClient(base_url=app_url) as http:
                yield World(clock, messenger, http, verimor, iletimerkezi, key.secret)
    finally:
        await messenger.aclose()


async def test_a_report_pushed_before_the_submit_answer_ends_the_message(world: World) -> None:
    sent = await world.send(fallback=["sms_b"])

    # The report came first: nothing to match yet, so the app kept it for later.
    assert world.verimor.pushed == [{"received": 1, "matched": 0, "changed": 0}]
    assert (await world.get(sent["job_id"]))["status"] == "sent"

    await world.work(timedelta(seconds=1))

    record = await world.get(sent["job_id"])
    assert record["status"] == "delivered"
    assert record["dlr"]["provider_status"] == "DELIVERED"
    assert [(a["provider"], a["status"]) for a in record["attempts"]] == [("sms_c", "delivered")]


async def test_an_early_report_means_no_second_send_at_the_dlr_timeout(world: World) -> None:
    sent = await world.send(fallback=["sms_b"])

    for _ in range(4):  # past the 30-minute DLR time-out and the early report's 10 minutes
        await world.work(timedelta(minutes=15))

    assert (await world.get(sent["job_id"]))["status"] == "delivered"
    assert world.iletimerkezi.orders == []  # never handed to the fallback provider
    assert len(world.verimor.fake.sends()) == 1


async def test_a_repeated_early_report_is_kept_once_and_dropped_when_its_time_is_up(
    world: World,
) -> None:
    stranger = json.dumps(
        [{"type": "outbound", "campaign_id": 999, "message_id": "1", "dest": "905320000000",
          "status": "DELIVERED", "gsm_error": "0", "sent_at": None, "done_at": None}]
    ).encode()  # fmt: skip
    for _ in range(3):  # the provider retries until it hears a 200, then maybe once more
        response = await world.http.post(world.verimor.report_url, content=stranger,
                                         headers={"content-type": "application/json"})  # fmt: skip
        assert response.json() == {"received": 1, "matched": 0, "changed": 0}

    looks = 0
    while await world.messenger.worker().run_until_idle():
        looks += 1
        world.clock.advance(timedelta(seconds=30))
    assert looks == 0  # not due before its first second
    world.clock.advance(timedelta(seconds=1))
    for _ in range(40):  # ten minutes and more, in 30 s steps
        looks += await world.messenger.worker().run_until_idle()
        world.clock.advance(timedelta(seconds=30))

    assert 1 < looks <= 20  # one kept report, looked for with backoff, not every second
    world.clock.advance(timedelta(days=1))
    assert await world.messenger.worker().run_until_idle() == 0  # and then gone
