"""``sms_e`` through a Jasmin gateway, over real sockets: REST sends reach the Jasmin fake's
``/send``, and the fake's DLR thrower posts its reports to ``/v1/dlr/…``, where they must be
acknowledged with ``ACK/Jasmin`` (else Jasmin throws them again)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from _support import bearer, dlr_path, error_code, running_servers
from fakes import jasmin
from fakes.jasmin import JasminFake

from unified_messaging import Connection, InvalidCredentials, ManualClock, Messenger
from unified_messaging.asgi import create_app

TO = "+905321234567"


@dataclass
class Rig:
    messenger: Messenger
    clock: ManualClock
    fake: JasminFake
    http: httpx.AsyncClient
    connection: Connection
    key: str
    app_url: str

    async def send(self, body: str = "Kodunuz 1234") -> httpx.Response:
        return await self.http.post(
            "/v1/messages", json={"to": TO, "body": body}, headers=bearer(self.key)
        )

    async def get(self, job_id: str) -> dict[str, Any]:
        response = await self.http.get(f"/v1/messages/{job_id}", headers=bearer(self.key))
        assert response.status_code == 200, response.text
        document: dict[str, Any] = response.json()
        return document

    async def breaker(self) -> str:
        [health] = await self.messenger.connections.health(self.connection.workspace_id)
        return health.state


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    fake, clock = JasminFake(), ManualClock()
    messenger = Messenger(clock=clock)
    await messenger.open()
    try:
        async with running_servers() as servers:
            fake_url = await servers.start(fake.app)
            app_url = await servers.start(create_app(messenger, worker=False, mcp=False))
            workspace = await messenger.workspaces.create("jasmin live")
            connection = await messenger.connections.add(
                workspace.id,
                "sms_e",
                credentials={
                    "username": jasmin.USERNAME,
                    "password": jasmin.PASSWORD,
                    "gateway": "jasmin",
                    "dlr_url": app_url,
                },
                base_url=fake_url,
                default_sender="ACME",
            )
            key = (await messenger.keys.create(workspace.id, livemode=True)).secret
            async with httpx.AsyncClient(base_url=app_url) as http:
                yield Rig(messenger, clock, fake, http, connection, key, app_url)
    finally:
        await messenger.aclose()


async def test_a_send_goes_to_jasmins_send_with_its_report_url(rig: Rig) -> None:
    response = await rig.send()

    assert response.status_code == 201, response.text
    assert (response.json()["status"], response.json()["provider"]) == ("sent", "sms_e")
    [sent] = rig.fake.sent
    assert (sent.to, sent.sender, sent.text) == (TO.removeprefix("+"), "ACME", "Kodunuz 1234")
    assert sent.dlr_url == rig.app_url + dlr_path(rig.connection)
    assert (sent.dlr_level, sent.dlr_method) == (3, "POST")
    record = await rig.get(response.json()["job_id"])
    assert record["attempts"][-1]["provider_message_id"] == sent.id


async def test_thrown_reports_are_acknowledged_and_move_the_message(rig: Rig) -> None:
    job_id = (await rig.send()).json()["job_id"]
    [sent] = rig.fake.sent

    smsc = await rig.fake.throw(rig.http, sent, "ESME_ROK", level=1)
    assert smsc.acknowledged, smsc
    assert (await rig.get(job_id))["status"] == "sent"

    terminal = await rig.fake.throw(rig.http, sent, "DELIVRD")

    assert terminal.acknowledged, terminal
    record = await rig.get(job_id)
    assert record["status"] == "delivered"
    assert record["dlr"]["provider_status"] == "2:DELIVRD"


async def test_an_undelivered_report_fails_the_message_with_the_smsc_error(rig: Rig) -> None:
    job_id = (await rig.send()).json()["job_id"]

    thrown = await rig.fake.throw(rig.http, rig.fake.sent[0], "UNDELIV", err="001")

    assert thrown.acknowledged
    record = await rig.get(job_id)
    assert (record["status"], record["error"]["code"]) == ("failed", "RECIPIENT_UNREACHABLE")
    assert "UNDELIV" in record["error"]["message"]


async def test_a_report_for_a_message_sent_elsewhere_is_still_acknowledged(rig: Rig) -> None:
    await rig.send()
    other = jasmin.Sent("not-ours", TO, None, 0, "x", 1, rig.fake.sent[0].dlr_url, 2, "GET")

    thrown = await rig.fake.throw(rig.http, other, "DELIVRD")

    assert thrown.acknowledged  # or Jasmin throws it again and again


async def test_a_report_that_is_not_jasmins_is_400(rig: Rig) -> None:
    response = await rig.http.post(
        dlr_path(rig.connection),
        content=b"id=abc&message_status=NOT_A_STATUS",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )

    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"


async def test_jasmins_throughput_refusal_pauses_the_connection_for_a_second(rig: Rig) -> None:
    rig.fake.throughput_exceeded = True

    first = await rig.send()

    assert (first.status_code, error_code(first)) == (502, "PROVIDER_UNAVAILABLE")
    assert await rig.breaker() == "paused"
    rig.fake.throughput_exceeded = False
    assert (await rig.send()).status_code == 502  # paused: Jasmin is not called
    assert len(rig.fake.received) == 1
    rig.clock.advance(1)
    assert (await rig.send()).status_code == 201


async def test_a_text_jasmin_would_cut_fails_instead_of_going_out_short(rig: Rig) -> None:
    response = await rig.send("x" * 800)  # six parts; Jasmin's default is five

    # A single send over a part limit is a 422 naming the job it left failed.
    assert response.status_code == 422, response.text
    assert error_code(response) == "BODY_TOO_LONG"
    assert response.json()["error"]["job_id"].startswith("msg_")
    assert rig.fake.received == []


async def test_wrong_gateway_settings_are_refused_when_the_connection_is_added(rig: Rig) -> None:
    with pytest.raises(InvalidCredentials) as caught:
        await rig.messenger.connections.add(
            rig.connection.workspace_id,
            "sms_e",
            credentials={"username": "u", "password": "p", "gateway": "jasmin", "smsc": "r1"},
            base_url="http://jasmin.example:1401",
        )

    assert "smsc" in caught.value.message
