"""The app as a whole: its endpoints, its error body for what it does not serve, request ids,
mounting under a prefix, and its lifespan."""

from __future__ import annotations

import logging

import httpx
import pytest
from _asgi_support import NORMAL, ClientFactory, bearer, code_of, error_of
from starlette.applications import Starlette
from starlette.routing import Mount

from unified_messaging import Messenger, __version__
from unified_messaging.asgi import create_app, messenger_lifespan
from unified_messaging.store.memory import MemoryStore
from unified_messaging.testing import TestBed

# --------------------------------------------------------------------------- endpoints


async def test_health_needs_no_key(anonymous: httpx.AsyncClient) -> None:
    response = await anonymous.get("/v1/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "version": __version__}
    assert "ratelimit" not in response.headers


async def test_health_ignores_a_bad_key(app: Starlette, make_client: ClientFactory) -> None:
    client = await make_client(app, headers=bearer("um_test_nope"))
    assert (await client.get("/v1/health")).status_code == 200


async def test_send_answers_201_with_the_send_response(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/messages", json={"to": "0555 123 45 67", "body": "Selam"})
    assert response.status_code == 201
    body = response.json()
    assert body["to"] == NORMAL
    assert body["status"] == "sent"
    assert body["provider"] == "sms_a"
    assert body["job_id"].startswith("msg_")
    assert response.headers["content-type"] == "application/json"


async def test_bulk_answers_201_and_fails_only_the_bad_item(client: httpx.AsyncClient) -> None:
    items = [{"to": NORMAL, "body": "a"}, {"to": "not a number", "body": "b"}]
    response = await client.post("/v1/messages/bulk", json={"items": items})
    assert response.status_code == 201
    body = response.json()
    assert (body["total"], body["sent"], body["failed"]) == (2, 1, 1)
    assert body["results"][1]["error"]["code"] == "INVALID_RECIPIENT"
    assert body["results"][1]["job_id"]


async def test_get_message_answers_the_status_record(client: httpx.AsyncClient) -> None:
    sent = (await client.post("/v1/messages", json={"to": NORMAL, "body": "x"})).json()
    response = await client.get(f"/v1/messages/{sent['job_id']}")
    assert response.status_code == 200
    record = response.json()
    assert record["job_id"] == sent["job_id"]
    assert record["livemode"] is False
    assert "dlr" in record  # every field is present, null or not (D11)


async def test_template_send_over_http(client: httpx.AsyncClient, bed: TestBed) -> None:
    await bed.messenger.templates.set(bed.workspace.id, "otp", "Kod: {{ code }}")
    response = await client.post(
        "/v1/messages", json={"to": NORMAL, "template": "otp", "variables": {"code": 42}}
    )
    assert response.status_code == 201
    assert response.json()["template_key"] == "otp"
    assert bed.outbox[-1].text == "Kod: 42"


async def test_openapi_document_is_served_without_a_key(anonymous: httpx.AsyncClient) -> None:
    response = await anonymous.get("/v1/openapi.json")
    assert response.status_code == 200
    document = response.json()
    assert document["openapi"].startswith("3.1")
    assert set(document["paths"]) >= {
        "/v1/messages",
        "/v1/messages/bulk",
        "/v1/messages/{job_id}",
        "/v1/health",
    }
    assert document["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    assert "servers" not in document


# --------------------------------------------------------------------------- not served


async def test_unknown_path_is_404_in_the_contract_body(anonymous: httpx.AsyncClient) -> None:
    response = await anonymous.get("/v2/messages")
    assert response.status_code == 404
    assert code_of(response) == "NOT_FOUND"


async def test_wrong_method_is_405_with_allow(client: httpx.AsyncClient) -> None:
    response = await client.delete("/v1/messages")
    assert response.status_code == 405
    assert code_of(response) == "METHOD_NOT_ALLOWED"
    assert set(response.headers["allow"].split(", ")) == {"GET", "HEAD", "POST"}


# --------------------------------------------------------------------------- request ids


async def test_a_sane_request_id_is_echoed(anonymous: httpx.AsyncClient) -> None:
    response = await anonymous.get("/v1/health", headers={"X-Request-ID": "abc-123.XYZ"})
    assert response.headers["x-request-id"] == "abc-123.XYZ"


@pytest.mark.parametrize("incoming", ["", "   ", "a" * 129, "bad id", "<script>", "-leading"])
async def test_an_odd_request_id_is_replaced(anonymous: httpx.AsyncClient, incoming: str) -> None:
    response = await anonymous.get("/v1/health", headers={"X-Request-ID": incoming})
    assert response.headers["x-request-id"].startswith("req_")


async def test_every_response_has_a_request_id(
    client: httpx.AsyncClient, anonymous: httpx.AsyncClient
) -> None:
    responses = [
        await client.post("/v1/messages", json={"to": NORMAL, "body": "x"}),
        await client.post("/v1/messages", json={"to": NORMAL}),
        await anonymous.post("/v1/messages", json={"to": NORMAL, "body": "x"}),
        await client.get("/v1/messages/msg_unknown"),
        await client.get("/nowhere"),
        await client.put("/v1/health"),
    ]
    ids = [r.headers["x-request-id"] for r in responses]
    assert len(set(ids)) == len(ids)


async def test_unexpected_error_is_500_with_request_id_and_is_logged(
    make_client: ClientFactory, caplog: pytest.LogCaptureFixture
) -> None:
    class BrokenStore(MemoryStore):
        async def get_message(self, workspace_id: str, livemode: bool, job_id: str) -> None:
            raise RuntimeError("postgres://admin:hunter2@db.internal/prod exploded")

    messenger = Messenger(BrokenStore())
    workspace = await messenger.workspaces.create("w")
    key = await messenger.keys.create(workspace.id)
    client = await make_client(create_app(messenger), headers=bearer(key.secret))
    with caplog.at_level(logging.ERROR, logger="unified_messaging.asgi"):
        response = await client.get("/v1/messages/msg_1", headers={"X-Request-ID": "trace-1"})
    assert response.status_code == 500
    assert error_of(response) == {"code": "INTERNAL_ERROR", "message": "Internal error."}
    assert response.headers["x-request-id"] == "trace-1"
    assert "hunter2" not in response.text
    (record,) = caplog.records
    assert "trace-1" in record.getMessage()
    assert record.exc_info is not None


# --------------------------------------------------------------------------- mounting


@pytest.fixture
async def host(bed: TestBed, make_client: ClientFactory) -> httpx.AsyncClient:
    host = Starlette(
        routes=[Mount("/messaging", app=create_app(bed.messenger))],
        lifespan=messenger_lifespan(bed.messenger),
    )
    return await make_client(host, headers=bearer(bed.api_key))


async def test_mounted_app_serves_under_its_prefix(host: httpx.AsyncClient) -> None:
    assert (await host.get("/messaging/v1/health")).status_code == 200
    sent = await host.post("/messaging/v1/messages", json={"to": NORMAL, "body": "x"})
    assert sent.status_code == 201
    job_id = sent.json()["job_id"]
    assert (await host.get(f"/messaging/v1/messages/{job_id}")).status_code == 200


async def test_mounted_app_names_its_prefix_in_the_document(host: httpx.AsyncClient) -> None:
    document = (await host.get("/messaging/v1/openapi.json")).json()
    assert document["servers"] == [{"url": "/messaging"}]


async def test_mounted_app_answers_its_own_404_in_the_contract_body(
    host: httpx.AsyncClient,
) -> None:
    response = await host.get("/messaging/v1/nothing")
    assert response.status_code == 404
    assert code_of(response) == "NOT_FOUND"


# --------------------------------------------------------------------------- lifespan


class CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.opened = self.closed = 0

    async def open(self) -> None:
        self.opened += 1

    async def close(self) -> None:
        self.closed += 1


async def _run_lifespan(app: Starlette) -> None:
    # The two lifespan events a server sends to its outermost app.
    events = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
    sent: list[str] = []

    async def receive() -> dict[str, str]:
        return next(events)

    async def send(message: dict[str, str]) -> None:
        sent.append(message["type"])

    await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send)
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


async def test_app_lifespan_opens_and_closes_the_messenger() -> None:
    store = CountingStore()
    await _run_lifespan(create_app(Messenger(store)))
    assert (store.opened, store.closed) == (1, 1)


async def test_host_runs_the_messenger_lifespan_for_a_mounted_app() -> None:
    store = CountingStore()
    messenger = Messenger(store)
    host = Starlette(
        routes=[Mount("/messaging", app=create_app(messenger))],
        lifespan=messenger_lifespan(messenger),
    )
    await _run_lifespan(host)
    assert (store.opened, store.closed) == (1, 1)


def test_create_app_refuses_a_bad_setting(bed: TestBed) -> None:
    with pytest.raises(ValueError, match="max_body_bytes"):
        create_app(bed.messenger, max_body_bytes=0)
    with pytest.raises(ValueError, match="trusted proxy"):
        create_app(bed.messenger, trusted_proxies=["not-an-ip"])
