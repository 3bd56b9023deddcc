"""``messenger.webhooks``: endpoints (create, read, events, enable/disable, secret rotation,
remove) and their deliveries (test event, log, redeliver, a message's timeline), posted
through an injected httpx client (no socket); refusals and audit rows."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import httpx
import pytest

from namespaces._audit import audit_rows
from unified_messaging import ManualClock, Messenger, RequestInvalid, ResourceNotFound
from unified_messaging.testing import TestBed, create_testbed

URL = "https://hooks.example.com/um"


@pytest.fixture
def received() -> list[httpx.Request]:
    """What the receiver was posted, in order."""
    return []


@pytest.fixture
async def bed(received: list[httpx.Request]) -> AsyncIterator[TestBed]:
    def answer(request: httpx.Request) -> httpx.Response:
        received.append(request)
        return httpx.Response(204)

    client = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    messenger = Messenger(clock=ManualClock(), webhook_client=client)
    yield await create_testbed(messenger=messenger)
    await messenger.aclose()
    await client.aclose()


async def test_create_and_read_an_endpoint_its_secret_shown_once(bed: TestBed) -> None:
    webhooks = bed.messenger.webhooks
    created = await webhooks.create(bed.workspace.id, URL, events=["message.delivered"])

    endpoint = created.endpoint
    assert (endpoint.url, endpoint.events, endpoint.enabled) == (
        URL, ("message.delivered",), True,
    )  # fmt: skip
    assert created.secret.startswith("whsec_") and created.secret not in repr(endpoint)
    assert await webhooks.get(endpoint.id) == endpoint
    assert await webhooks.of(bed.workspace.id, endpoint.id) == endpoint
    assert await webhooks.list(bed.workspace.id) == [endpoint]
    assert (await audit_rows(bed.messenger))[0] == (
        "webhook_endpoint.create", bed.workspace.id, endpoint.id,
    )  # fmt: skip


async def test_events_enable_disable_rotate_and_remove_each_audited(bed: TestBed) -> None:
    webhooks = bed.messenger.webhooks
    created = await webhooks.create(bed.workspace.id, URL)
    endpoint_id = created.endpoint.id

    assert (await webhooks.set_events(endpoint_id, ["message.failed"])).events == (
        "message.failed",
    )  # fmt: skip
    assert not (await webhooks.disable(endpoint_id)).enabled
    assert (await webhooks.enable(endpoint_id)).enabled
    rotated = await webhooks.rotate_secret(endpoint_id, overlap=timedelta(hours=1))
    assert rotated.secret != created.secret
    assert rotated.endpoint.previous_secret_ciphertext == created.endpoint.secret_ciphertext
    assert (await webhooks.remove(endpoint_id)).id == endpoint_id

    assert await webhooks.list(bed.workspace.id) == []
    assert [row[0] for row in await audit_rows(bed.messenger)][:5] == [
        "webhook_endpoint.remove", "webhook_endpoint.rotate_secret", "webhook_endpoint.enable",
        "webhook_endpoint.disable", "webhook_endpoint.events",
    ]  # fmt: skip


async def test_a_test_event_is_delivered_logged_and_redelivered(
    bed: TestBed, received: list[httpx.Request]
) -> None:
    webhooks = bed.messenger.webhooks
    endpoint = (await webhooks.create(bed.workspace.id, URL)).endpoint

    queued = await webhooks.send_test(endpoint.id)
    assert queued.status == "pending"
    await bed.settle()

    [delivered] = await webhooks.list_deliveries(endpoint.id)
    assert (delivered.id, delivered.status) == (queued.id, "delivered")
    assert await webhooks.delivery_of(bed.workspace.id, queued.id) == delivered
    again = await webhooks.redeliver(queued.id)
    assert again.id == queued.id
    await bed.settle()
    assert len(received) == 2
    assert received[0].headers["webhook-id"] == received[1].headers["webhook-id"]


async def test_deliveries_about_a_message_are_its_timeline(bed: TestBed) -> None:
    await bed.messenger.webhooks.create(bed.workspace.id, URL)
    sent = await bed.messenger.send(bed.principal, {"to": "+905321234567", "body": "x"})
    other = await bed.messenger.send(bed.principal, {"to": "+905339876543", "body": "y"})
    await bed.settle()

    about = await bed.messenger.webhooks.deliveries_about(bed.workspace.id, sent.job_id)

    assert about and all(sent.job_id in str(d.payload) for d in about)
    assert not any(other.job_id in str(d.payload) for d in about)


async def test_refusals_bad_url_unknown_event_disabled_endpoint_other_workspace(
    bed: TestBed,
) -> None:
    webhooks = bed.messenger.webhooks
    for url, events in (("ftp://hooks.example.com/um", None), ("https://127.0.0.1/x", None),
                        (URL, ["message.exploded"])):  # fmt: skip
        with pytest.raises(RequestInvalid) as refused:
            await webhooks.create(bed.workspace.id, url, events=events)
        assert refused.value.code == "VALIDATION_ERROR"
    endpoint = (await webhooks.create(bed.workspace.id, URL)).endpoint
    await webhooks.disable(endpoint.id)
    with pytest.raises(RequestInvalid):
        await webhooks.send_test(endpoint.id)
    other = await bed.messenger.workspaces.create("other")
    with pytest.raises(ResourceNotFound) as elsewhere:
        await webhooks.of(other.id, endpoint.id)
    assert elsewhere.value.code == "NOT_FOUND"
    with pytest.raises(ResourceNotFound):
        await webhooks.redeliver("whd_nope")
