"""``bizchat`` delivery reports over real sockets: a live send through the WhatsApp fake, the
``hub.challenge`` handshake, and signed status webhooks posted to ``/v1/dlr/…``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from _support import bearer, dlr_path, error_code, running_servers
from fakes import whatsapp
from fakes.whatsapp import WhatsAppFake, graph_error, status

from unified_messaging import Connection, ManualClock, Messenger
from unified_messaging.asgi import create_app
from unified_messaging.providers.whatsapp import signature_header

VERIFY_TOKEN = "verify-token-4f9c"
IN_WINDOW = "+905551112233"  # the fake's recipient who wrote within 24 hours


@dataclass
class Live:
    messenger: Messenger
    fake: WhatsAppFake
    http: httpx.AsyncClient
    connection: Connection
    key: str
    clock: ManualClock

    async def send(self) -> dict[str, Any]:
        response = await self.post_message()
        assert response.status_code == 201, response.text
        document: dict[str, Any] = response.json()
        return document

    async def post_message(self) -> httpx.Response:
        return await self.http.post(
            "/v1/messages", json={"to": IN_WINDOW, "body": "Selam"}, headers=bearer(self.key)
        )

    async def breaker(self) -> str:
        [health] = await self.messenger.connections.health(self.connection.workspace_id)
        return health.state

    @property
    def sends(self) -> int:
        return sum(1 for r in self.fake.received if r.path.endswith("/messages"))

    async def get(self, job_id: str) -> dict[str, Any]:
        response = await self.http.get(f"/v1/messages/{job_id}", headers=bearer(self.key))
        assert response.status_code == 200, response.text
        document: dict[str, Any] = response.json()
        return document

    async def post(self, body: bytes, headers: dict[str, str]) -> httpx.Response:
        return await self.http.post(dlr_path(self.connection), content=body, headers=headers)

    def challenge(self, **query: str) -> dict[str, str]:
        return {"hub.mode": "subscribe", "hub.challenge": "1158201444", **query}


@pytest.fixture
async def live() -> AsyncIterator[Live]:
    fake = WhatsAppFake()
    clock = ManualClock()
    messenger = Messenger(clock=clock)
    await messenger.open()
    try:
        async with running_servers() as servers:
            fake_url = await servers.start(fake.app)
            workspace = await messenger.workspaces.create("bizchat live")
            connection = await messenger.connections.add(
                workspace.id,
                "bizchat",
                credentials={
                    "access_token": whatsapp.ACCESS_TOKEN,
                    "phone_number_id": whatsapp.PHONE_NUMBER_ID,
                    "app_secret": whatsapp.APP_SECRET,
                    "verify_token": VERIFY_TOKEN,
                },
                base_url=fake_url,
            )
            key = (await messenger.keys.create(workspace.id, livemode=True)).secret
            base_url = await servers.start(create_app(messenger, worker=False, mcp=False))
            async with httpx.AsyncClient(base_url=base_url) as http:
                yield Live(messenger, fake, http, connection, key, clock)
    finally:
        await messenger.aclose()


def wamid_of(record: dict[str, Any]) -> str:
    value = record["attempts"][-1]["provider_message_id"]
    assert isinstance(value, str) and value.startswith("wamid.")
    return value


# --------------------------------------------------------------------------- the live send


async def test_a_live_send_goes_through_the_fake(live: Live) -> None:
    sent = await live.send()

    record = await live.get(sent["job_id"])
    assert record["status"] == "sent"
    assert record["livemode"] is True
    [message] = [r for r in live.fake.received if r.path.endswith("/messages")]
    assert message.json == {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": "905551112233",
        "type": "text",
        "text": {"body": "Selam", "preview_url": False},
    }
    assert message.headers["authorization"] == f"Bearer {whatsapp.ACCESS_TOKEN}"
    assert wamid_of(record)


# --------------------------------------------------------------------------- Meta's error codes


async def test_a_user_who_stopped_marketing_messages_is_a_recipient_failure(live: Live) -> None:
    live.fake.script(graph_error(400, 131050, "Unable to deliver message", "User opted out"))

    response = await live.post_message()

    assert response.status_code == 201, response.text
    sent = response.json()
    assert (sent["status"], sent["error"]["code"]) == ("failed", "RECIPIENT_OPTED_OUT")
    assert "131050" in sent["error"]["message"]
    assert await live.breaker() == "closed"


@pytest.mark.parametrize(("code", "pause"), [(133016, 60), (131048, 3600), (130429, 5)])
async def test_a_throttling_code_pauses_the_connection(live: Live, code: int, pause: int) -> None:
    live.fake.script(graph_error(400, code, "Rate limit hit"))

    first = await live.post_message()

    assert (first.status_code, error_code(first)) == (502, "PROVIDER_UNAVAILABLE")
    assert await live.breaker() == "paused"
    second = await live.post_message()
    assert second.status_code == 502
    assert live.sends == 1  # the paused connection is not called
    live.clock.advance(pause - 1)
    assert (await live.post_message()).status_code == 502
    live.clock.advance(1)
    assert (await live.post_message()).status_code == 201
    assert live.sends == 2


async def test_a_pair_rate_limit_does_not_pause_the_connection(live: Live) -> None:
    live.fake.script(graph_error(400, 131056, "(Business Account, Consumer Account) pair rate"))

    first = await live.post_message()

    assert first.status_code == 502
    assert await live.breaker() == "closed"
    assert (await live.post_message()).status_code == 201
    assert live.sends == 2


# --------------------------------------------------------------------------- the handshake


async def test_the_handshake_with_the_verify_token_echoes_the_challenge(live: Live) -> None:
    query = live.challenge(**{"hub.verify_token": VERIFY_TOKEN})

    response = await live.http.get(dlr_path(live.connection), params=query)

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert response.text == "1158201444"


async def test_the_handshake_without_the_verify_token_is_403(live: Live) -> None:
    refused: list[dict[str, str]] = [
        {"hub.verify_token": VERIFY_TOKEN[:-1] + "X"},  # differs in the last character
        {"hub.verify_token": ""},
        {},
        {"hub.verify_token": VERIFY_TOKEN, "hub.mode": "unsubscribe"},
    ]
    for query in refused:
        response = await live.http.get(dlr_path(live.connection), params=live.challenge(**query))

        assert response.status_code == 403, query
        assert "1158201444" not in response.text


async def test_the_handshake_on_a_wrong_path_token_is_404(live: Live) -> None:
    query = live.challenge(**{"hub.verify_token": VERIFY_TOKEN})

    response = await live.http.get(dlr_path(live.connection, "wrong-token"), params=query)

    assert response.status_code == 404
    assert error_code(response) == "NOT_FOUND"


# --------------------------------------------------------------------------- status webhooks


async def test_a_signed_delivered_status_makes_the_message_delivered(live: Live) -> None:
    sent = await live.send()
    wamid = wamid_of(await live.get(sent["job_id"]))
    body, headers = live.fake.status_webhook([status(wamid, "delivered")])

    response = await live.post(body, headers)

    assert response.status_code == 200, response.text
    assert response.json() == {"received": 1, "matched": 1, "changed": 1}
    record = await live.get(sent["job_id"])
    assert record["status"] == "delivered"
    assert record["dlr"]["status"] == "delivered"
    assert record["dlr"]["provider_status"] == "delivered"
    assert record["attempts"][-1]["status"] == "delivered"


async def test_sent_then_delivered_then_read_moves_once(live: Live) -> None:
    sent = await live.send()
    wamid = wamid_of(await live.get(sent["job_id"]))
    changed = []
    for word in ("sent", "delivered", "read", "delivered"):
        body, headers = live.fake.status_webhook([status(wamid, word)])
        response = await live.post(body, headers)
        assert response.status_code == 200
        changed.append(response.json()["changed"])

    assert changed == [0, 1, 0, 0]
    assert (await live.get(sent["job_id"]))["status"] == "delivered"


async def test_a_signed_failed_status_carries_whatsapps_error(live: Live) -> None:
    sent = await live.send()
    wamid = wamid_of(await live.get(sent["job_id"]))
    errors: list[dict[str, object]] = [
        {"code": 131026, "title": "Message undeliverable", "message": "Message undeliverable"}
    ]
    body, headers = live.fake.status_webhook([status(wamid, "failed", errors=errors)])

    response = await live.post(body, headers)

    assert response.json()["changed"] == 1
    record = await live.get(sent["job_id"])
    assert record["status"] == "failed"
    assert record["error"]["code"] == "RECIPIENT_UNREACHABLE"
    assert "131026" in record["error"]["message"]


async def test_a_failed_status_with_a_user_level_code_maps_as_a_send_answer_would(
    live: Live,
) -> None:
    sent = await live.send()
    wamid = wamid_of(await live.get(sent["job_id"]))
    errors: list[dict[str, object]] = [{"code": 131050, "title": "User opted out of marketing"}]
    body, headers = live.fake.status_webhook([status(wamid, "failed", errors=errors)])

    response = await live.post(body, headers)

    assert response.json()["changed"] == 1
    record = await live.get(sent["job_id"])
    assert (record["status"], record["error"]["code"]) == ("failed", "RECIPIENT_OPTED_OUT")


async def test_a_status_for_another_phone_number_is_200_and_ignored(live: Live) -> None:
    sent = await live.send()
    wamid = wamid_of(await live.get(sent["job_id"]))
    body, headers = live.fake.status_webhook(
        [status(wamid, "delivered")], phone_number_id="999999999999"
    )

    response = await live.post(body, headers)

    assert (await live.get(sent["job_id"]))["status"] == "sent"
    assert response.status_code == 200, response.text
    assert response.json()["changed"] == 0


async def test_an_inbound_message_webhook_is_200_and_changes_nothing(live: Live) -> None:
    # Meta posts a user's incoming messages to the same callback URL as statuses.
    document = {
        "object": "whatsapp_business_account",
        "entry": [
            {
                "id": "102290129340398",
                "changes": [
                    {
                        "field": "messages",
                        "value": {
                            "messaging_product": "whatsapp",
                            "metadata": {
                                "display_phone_number": "905550000000",
                                "phone_number_id": whatsapp.PHONE_NUMBER_ID,
                            },
                            "contacts": [{"profile": {"name": "Ayşe"}, "wa_id": "905551112233"}],
                            "messages": [
                                {
                                    "from": "905551112233",
                                    "id": "wamid.HBgMOTA1NTUxMTEyMjMzFQIAEhgg",
                                    "timestamp": "1767225600",
                                    "type": "text",
                                    "text": {"body": "Merhaba"},
                                }
                            ],
                        },
                    }
                ],
            }
        ],
    }
    body = json.dumps(document).encode()
    headers = {"x-hub-signature-256": signature_header(body, whatsapp.APP_SECRET)}

    response = await live.post(body, headers)

    assert response.status_code == 200, response.text
    assert response.json() == {"received": 0, "matched": 0, "changed": 0}


async def test_a_status_without_a_valid_signature_is_401_and_changes_nothing(
    live: Live,
) -> None:
    sent = await live.send()
    wamid = wamid_of(await live.get(sent["job_id"]))
    body, headers = live.fake.status_webhook([status(wamid, "delivered")])
    _, foreign = live.fake.status_webhook([status(wamid, "delivered")], secret="not-it")
    unsigned = {k: v for k, v in headers.items() if k != "x-hub-signature-256"}
    wrong: list[dict[str, str]] = [
        foreign,  # signed with another app's secret
        {**unsigned, "x-hub-signature-256": "sha256=" + "0" * 64},
        {**unsigned, "x-hub-signature-256": "sha1=deadbeef"},
        {**unsigned, "x-hub-signature-256": ""},
        unsigned,  # no signature at all
    ]
    before = await live.get(sent["job_id"])

    for attempt in wrong:
        response = await live.post(body, attempt)

        assert response.status_code == 401, attempt
        assert error_code(response) == "UNAUTHORIZED"
        assert whatsapp.APP_SECRET not in response.text

    assert await live.get(sent["job_id"]) == before


async def test_a_signed_body_changed_in_transit_is_401(live: Live) -> None:
    sent = await live.send()
    wamid = wamid_of(await live.get(sent["job_id"]))
    body, headers = live.fake.status_webhook([status(wamid, "delivered")])
    tampered = body.replace(b'"delivered"', b'"failed"   ')

    response = await live.post(tampered, headers)

    assert response.status_code == 401
    assert (await live.get(sent["job_id"]))["status"] == "sent"


async def test_a_signed_body_that_is_not_json_is_400(live: Live) -> None:
    body = b"not json at all"
    headers = {"x-hub-signature-256": signature_header(body, whatsapp.APP_SECRET)}

    response = await live.post(body, headers)

    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"
