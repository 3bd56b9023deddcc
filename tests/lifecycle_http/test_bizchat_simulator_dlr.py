"""A ``bizchat`` connection with real WhatsApp credentials also serves test keys (D2): their
messages go to the simulator. Reports for them may be pushed to the connection's report URL in
the simulator's format, unsigned, as on every other connection; such a report only ever touches
test-mode messages. WhatsApp's own format, the only one that reaches live messages, still needs
a valid ``X-Hub-Signature-256``, and a body that carries a signature must be signed right.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from _support import bearer, dlr_path, error_code, running_servers, sim_report
from fakes import whatsapp
from fakes.whatsapp import WhatsAppFake, status

from unified_messaging import Connection, ManualClock, Messenger
from unified_messaging.asgi import create_app

TO = "+905551112233"  # the fake's recipient who wrote within 24 hours


@dataclass
class World:
    http: httpx.AsyncClient
    fake: WhatsAppFake
    connection: Connection
    test_key: str
    live_key: str

    async def send(self, key: str) -> dict[str, Any]:
        response = await self.http.post(
            "/v1/messages", json={"to": TO, "body": "Selam"}, headers=bearer(key)
        )
        assert response.status_code == 201, response.text
        return await self.get(key, response.json()["job_id"])  # the record, with its attempts

    async def get(self, key: str, job_id: str) -> dict[str, Any]:
        response = await self.http.get(f"/v1/messages/{job_id}", headers=bearer(key))
        assert response.status_code == 200, response.text
        record: dict[str, Any] = response.json()
        return record

    async def post(self, body: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
        return await self.http.post(
            dlr_path(self.connection),
            content=body,
            headers={"content-type": "application/json", **(headers or {})},
        )


@pytest.fixture
async def world() -> AsyncIterator[World]:
    fake = WhatsAppFake()
    messenger = Messenger(clock=ManualClock())  # no worker: nothing reports by itself
    async with messenger, running_servers() as servers:
        fake_url = await servers.start(fake.app)
        workspace = await messenger.workspaces.create("bizchat with credentials")
        connection = await messenger.connections.add(
            workspace.id,
            "bizchat",
            credentials={
                "access_token": whatsapp.ACCESS_TOKEN,
                "phone_number_id": whatsapp.PHONE_NUMBER_ID,
                "app_secret": whatsapp.APP_SECRET,
                "verify_token": "verify-me",
            },
            base_url=fake_url,
        )
        test_key = (await messenger.keys.create(workspace.id, livemode=False)).secret
        live_key = (await messenger.keys.create(workspace.id, livemode=True)).secret
        base_url = await servers.start(create_app(messenger, worker=False, mcp=False))
        async with httpx.AsyncClient(base_url=base_url) as http:
            yield World(http, fake, connection, test_key, live_key)


def provider_message_id(record: dict[str, Any]) -> str:
    value = record["attempts"][-1]["provider_message_id"]
    assert isinstance(value, str)
    return value


async def test_an_unsigned_simulator_report_reaches_the_test_mode_message(world: World) -> None:
    sent = await world.send(world.test_key)
    assert sent["livemode"] is False
    simulated = provider_message_id(sent)

    response = await world.post(sim_report(simulated, "delivered"))

    assert response.status_code == 200, response.text
    assert response.json() == {"received": 1, "matched": 1, "changed": 1}
    assert (await world.get(world.test_key, sent["job_id"]))["status"] == "delivered"
    assert not [r for r in world.fake.received if r.path.endswith("/messages")]  # no live send


async def test_an_unsigned_simulator_report_never_touches_a_live_message(world: World) -> None:
    sent = await world.send(world.live_key)
    wamid = provider_message_id(sent)
    before = await world.get(world.live_key, sent["job_id"])

    response = await world.post(sim_report(wamid, "failed"))

    assert response.status_code == 200, response.text
    assert response.json() == {"received": 1, "matched": 0, "changed": 0}
    assert await world.get(world.live_key, sent["job_id"]) == before


async def test_whatsapps_format_unsigned_is_still_401_for_live_and_test_messages(
    world: World,
) -> None:
    live = await world.send(world.live_key)
    test = await world.send(world.test_key)
    body, headers = world.fake.status_webhook([status(provider_message_id(live), "delivered")])
    unsigned = {k: v for k, v in headers.items() if k != "x-hub-signature-256"}
    # The simulator's fields dressed up as a WhatsApp webhook are WhatsApp's shape: unsigned,
    # they are refused, not read as the simulator's format.
    disguised = json.dumps(
        {
            "object": "whatsapp_business_account",
            "provider_message_id": provider_message_id(test),
            "status": "delivered",
        }
    ).encode()

    for attempt, extra in ((body, unsigned), (disguised, {})):
        response = await world.post(attempt, extra)

        assert response.status_code == 401, response.text
        assert error_code(response) == "UNAUTHORIZED"

    assert (await world.get(world.live_key, live["job_id"]))["status"] == "sent"
    assert (await world.get(world.test_key, test["job_id"]))["status"] == "sent"


@pytest.mark.parametrize("signature", ["sha256=" + "0" * 64, "sha1=abc", ""])
async def test_a_simulator_report_with_a_wrong_signature_is_401(
    world: World, signature: str
) -> None:
    sent = await world.send(world.test_key)
    body = sim_report(provider_message_id(sent), "delivered")

    response = await world.post(body, {"x-hub-signature-256": signature})

    assert response.status_code == 401, response.text
    assert whatsapp.APP_SECRET not in response.text
    assert (await world.get(world.test_key, sent["job_id"]))["status"] == "sent"


async def test_an_unsigned_body_in_neither_format_is_400(world: World) -> None:
    for body in (b"not json", b'{"provider_message_id": "x"}', b"[1, 2]"):
        response = await world.post(body)

        assert response.status_code == 400, (body, response.text)
        assert error_code(response) == "VALIDATION_ERROR"
