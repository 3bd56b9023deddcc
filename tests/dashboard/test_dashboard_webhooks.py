"""Webhooks over real HTTP, with a receiver of the test's own on loopback: an endpoint added
in the dashboard (its secret shown once), a test event, the deliveries with their answer code,
redelivery under the same ``webhook-id``, events, disable and enable, rotation, and another
workspace's endpoint out of reach."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from _dash_support import Console
from fakes._server import serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from unified_messaging.testing import TestBed
from unified_messaging.webhooks import Webhook


@dataclass
class Receiver:
    url: str
    answer: int = 200
    body: bytes = b""
    seen: list[tuple[dict[str, str], bytes]] = field(default_factory=list)


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    box = Receiver("")

    async def hook(request: Request) -> Response:
        box.seen.append((dict(request.headers), await request.body()))
        return Response(box.body, status_code=box.answer)

    async with serve(Starlette(routes=[Route("/hook", hook, methods=["POST"])])) as base:
        box.url = base + "/hook"
        yield box


def _secret(page: str, element: str) -> str:
    found = re.search(rf'<code id="{element}">([^<]+)</code>', page)
    assert found, "no secret shown"
    return found.group(1)


async def test_an_endpoint_gets_a_test_event_signed_with_the_secret_shown_once(
    signed_in: Console, bed: TestBed, receiver: Receiver
) -> None:
    added = await signed_in.post("/webhooks", {"url": receiver.url})
    assert added.status_code == 303 and added.headers["location"] == "/dashboard/webhooks"
    shown = await signed_in.follow(added)
    assert "cannot be shown again" in shown.text
    secret = _secret(shown.text, "new-webhook-secret")
    endpoint = (await bed.messenger.webhooks.list(bed.workspace.id))[0]
    assert secret not in (await signed_in.get("/webhooks")).text  # a refresh shows it no more
    assert secret not in (await signed_in.get(f"/webhooks/{endpoint.id}")).text
    sent = await signed_in.follow(await signed_in.post(f"/webhooks/{endpoint.id}/test"))
    assert "test event is on its way" in sent.text
    await bed.settle()
    headers, body = receiver.seen[0]
    event = Webhook(secret).verify(body, headers, now=bed.clock.now())
    assert event["type"] == "message.delivered" and event["data"]["livemode"] is False
    page = await signed_in.get(f"/webhooks/{endpoint.id}")
    assert ">delivered<" in page.text and "HTTP 200" in page.text
    # The body the receiver got, indented to be read.
    assert "Payload sent" in page.text
    assert "  &#34;type&#34;: &#34;message.delivered&#34;," in page.text


async def test_a_payload_is_shown_as_text_however_hostile_the_message(
    signed_in: Console, bed: TestBed, receiver: Receiver
) -> None:
    created = await bed.messenger.webhooks.create(bed.workspace.id, receiver.url)
    hostile = '<script>alert("x")</script>'
    receiver.body = b"<b>thanks</b> " + "ü".encode() * 3000  # longer than what is kept
    await bed.messenger.send(bed.principal, {"to": "+905551234567", "body": hostile})
    await bed.settle()
    page = await signed_in.get(f"/webhooks/{created.endpoint.id}")
    assert "Payload sent" in page.text
    assert "<script>alert" not in page.text
    # The JSON string's own escapes (\") inside, the page's escapes around them.
    assert "&lt;script&gt;alert(\\&#34;x\\&#34;)&lt;/script&gt;" in page.text
    # The receiver's answer: its status and the start of its body, as text.
    assert "Answer body" in page.text and "&lt;b&gt;thanks&lt;/b&gt; üü" in page.text
    [delivery, *_] = await bed.messenger.webhooks.list_deliveries(created.endpoint.id)
    assert delivery.last_answer is not None
    assert delivery.last_answer.startswith("<b>thanks</b> üü")
    assert len(delivery.last_answer) < 1100  # about 2 KiB of the 6 KiB it sent


async def test_a_failed_delivery_is_redelivered_with_the_same_webhook_id(
    signed_in: Console, bed: TestBed, receiver: Receiver
) -> None:
    created = await bed.messenger.webhooks.create(bed.workspace.id, receiver.url)
    receiver.answer = 410  # Gone: the delivery fails and the endpoint is disabled (D19)
    await signed_in.post(f"/webhooks/{created.endpoint.id}/test")
    await bed.settle()
    page = await signed_in.get(f"/webhooks/{created.endpoint.id}")
    assert ">failed<" in page.text and "HTTP 410" in page.text and ">disabled<" in page.text
    delivery = (await bed.messenger.webhooks.list_deliveries(created.endpoint.id))[0]
    refused = await signed_in.follow(
        await signed_in.post(f"/webhooks/deliveries/{delivery.id}/redeliver")
    )
    assert 'class="error" role="alert"' in refused.text and "enable it first" in refused.text
    await signed_in.post(f"/webhooks/{created.endpoint.id}/enable")
    receiver.answer = 204
    again = await signed_in.follow(
        await signed_in.post(f"/webhooks/deliveries/{delivery.id}/redeliver")
    )
    assert "Sent again" in again.text
    await bed.settle()
    first, second = receiver.seen
    assert first[0]["webhook-id"] == second[0]["webhook-id"] == delivery.event_id
    page = await signed_in.get(f"/webhooks/{created.endpoint.id}")
    assert ">delivered<" in page.text and "HTTP 204" in page.text


async def test_events_disable_and_rotation(
    signed_in: Console, bed: TestBed, receiver: Receiver
) -> None:
    created = await bed.messenger.webhooks.create(bed.workspace.id, receiver.url)
    endpoint_id = created.endpoint.id
    await signed_in.post(f"/webhooks/{endpoint_id}/events", {"events": "message.failed"})
    assert (await bed.messenger.webhooks.get(endpoint_id)).events == ("message.failed",)
    await signed_in.post(f"/webhooks/{endpoint_id}/disable")
    assert not (await bed.messenger.webhooks.get(endpoint_id)).enabled
    await signed_in.post(f"/webhooks/{endpoint_id}/enable")
    rotated = await signed_in.follow(await signed_in.post(f"/webhooks/{endpoint_id}/rotate"))
    secret = _secret(rotated.text, "rotated-secret")
    assert secret.startswith("whsec_")
    assert secret not in (await signed_in.get(f"/webhooks/{endpoint_id}")).text
    bad = await signed_in.post("/webhooks", {"url": "ftp://example.com/x"})
    assert bad.status_code == 400 and "The URL " in bad.text


async def test_another_workspaces_endpoint_is_out_of_reach(
    signed_in: Console, bed: TestBed, receiver: Receiver
) -> None:
    other = await bed.messenger.workspaces.create("Other Ltd")
    created = await bed.messenger.webhooks.create(other.id, receiver.url)
    for path in ("test", "disable", "rotate", "remove"):
        answer = await signed_in.post(f"/webhooks/{created.endpoint.id}/{path}")
        assert answer.status_code == 404, path
    assert (await signed_in.get(f"/webhooks/{created.endpoint.id}")).status_code == 404
    assert (await bed.messenger.webhooks.get(created.endpoint.id)).enabled


async def test_a_messages_timeline_lists_the_webhook_deliveries_it_caused(
    signed_in: Console, bed: TestBed, receiver: Receiver
) -> None:
    created = await bed.messenger.webhooks.create(bed.workspace.id, receiver.url)
    sent = await bed.messenger.send(bed.principal, {"to": "+905551234567", "body": "x"})
    other = await bed.messenger.send(bed.principal, {"to": "+905551234568", "body": "y"})
    await bed.settle()
    page = await signed_in.get(f"/messages/{sent.job_id}")
    assert "Webhook deliveries it caused" in page.text
    assert page.text.count("message.delivered</td>") == 1  # its own event, not the other's
    assert "message.sent</td>" in page.text and "HTTP 200" in page.text
    assert receiver.url in page.text
    ids = [d.id for d in await bed.messenger.webhooks.deliveries_about(bed.workspace.id,
                                                                       other.job_id)]  # fmt: skip
    assert ids and all(i not in page.text for i in ids)
    assert created.endpoint.id in page.text
