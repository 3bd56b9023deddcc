"""``POST /v1/test_helpers/inbound`` (a reply in test mode, over a real socket) and
``TestBed.simulate_inbound``: a simulated STOP goes through the inbound path a provider's push
takes, so it suppresses its sender and fires ``message.inbound``; a live key gets 404."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fakes._server import serve

from unified_messaging import ManualClock, Messenger, RecipientSuppressed, TargetPolicy, Vault
from unified_messaging.asgi import create_app
from unified_messaging.testing import TestBed, create_testbed

PATH = "/v1/test_helpers/inbound"


@pytest.fixture
async def bed() -> AsyncIterator[TestBed]:
    messenger = Messenger(
        clock=ManualClock(), vault=Vault.generate(), webhook_policy=TargetPolicy(allow_private=True)
    )
    bed = await create_testbed(messenger=messenger)
    yield bed
    await messenger.aclose()


async def test_a_simulated_stop_over_rest_suppresses_and_fires_the_webhook(bed: TestBed) -> None:
    endpoint = await bed.messenger.webhooks.create(bed.workspace.id, "http://127.0.0.1:9/")
    headers = {"Authorization": f"Bearer {bed.api_key}"}
    async with (
        serve(create_app(bed.messenger, worker=False)) as url,
        httpx.AsyncClient(base_url=url, headers=headers) as client,
    ):
        stop = await client.post(PATH, json={"from": "0555 100 05 01", "text": "Stop"})
        reply = await client.post(PATH, json={"from": "+905551000502", "text": "Teşekkürler"})
        refused = await client.post("/v1/messages", json={"to": "+905551000501", "body": "x"})
        unknown = await client.post(PATH, json={"from": "+905551000503", "txt": "STOP"})
    await bed.settle()

    assert stop.status_code == 201, stop.text
    assert stop.json()["sender"] == "+905551000501"
    assert (stop.json()["opt_out"], stop.json()["stop_word"]) == (True, "STOP")
    assert reply.status_code == 201 and reply.json()["opt_out"] is False
    assert (refused.status_code, refused.json()["error"]["code"]) == (422, "RECIPIENT_SUPPRESSED")
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (400, "VALIDATION_ERROR")
    deliveries = await bed.messenger.webhooks.list_deliveries(endpoint.endpoint.id)
    events = [d.event_type for d in deliveries]
    assert events.count("message.inbound") == 2


async def test_a_live_key_gets_404(bed: TestBed) -> None:
    live = await bed.messenger.keys.create(bed.workspace.id, livemode=True)
    async with serve(create_app(bed.messenger, worker=False)) as url, httpx.AsyncClient() as c:
        answer = await c.post(
            url + PATH,
            json={"from": "+905551000504", "text": "STOP"},
            headers={"Authorization": f"Bearer {live.secret}"},
        )

    assert (answer.status_code, answer.json()["error"]["code"]) == (404, "NOT_FOUND")
    page = await bed.messenger.suppressions.list(bed.principal, {})
    assert page.data == []  # nothing was suppressed


async def test_the_testbed_simulates_a_stop_and_a_bot_stop(bed: TestBed) -> None:
    record = await bed.simulate_inbound("+905551000505", "İPTAL")
    bot = await bed.simulate_inbound("12345", "/stop", channel="chatbot")

    assert (record.opt_out, bot.opt_out) == (True, True)
    with pytest.raises(RecipientSuppressed):
        await bed.messenger.send(bed.principal, {"to": "+905551000505", "body": "x"})
    with pytest.raises(RecipientSuppressed):
        await bed.messenger.send(bed.principal, {"to": "12345", "body": "x", "provider": "chatbot"})
