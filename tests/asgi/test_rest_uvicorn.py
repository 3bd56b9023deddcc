"""A smoke set against a real uvicorn on a loopback port: real sockets, real lifespan."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
import uvicorn
from _asgi_support import NORMAL, bearer, code_of
from starlette.applications import Starlette
from starlette.routing import Mount

from unified_messaging.asgi import create_app, messenger_lifespan
from unified_messaging.testing import TestBed


@asynccontextmanager
async def serving(app: Starlette) -> AsyncIterator[str]:
    """Run ``app`` on a free loopback port; the base URL while it runs."""
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, lifespan="on", ws="none", log_config=None, access_log=False
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()  # startup failed: raise why
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


@pytest.fixture
async def base_url(bed: TestBed) -> AsyncIterator[str]:
    # Loopback is a trusted proxy here, so X-Forwarded-For can be tested over a real socket.
    app = create_app(bed.messenger, trusted_proxies=["127.0.0.1"])
    async with serving(app) as url:
        yield url


@pytest.fixture
async def http(base_url: str, bed: TestBed) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base_url, headers=bearer(bed.api_key)) as client:
        yield client


async def test_health_over_a_socket(http: httpx.AsyncClient) -> None:
    response = await http.get("/v1/health")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"
    assert response.headers["x-request-id"]


async def test_send_and_read_back_over_a_socket(http: httpx.AsyncClient) -> None:
    sent = await http.post("/v1/messages", json={"to": NORMAL, "body": "Selam"})
    assert sent.status_code == 201
    assert sent.headers["ratelimit-limit"] == "100"
    record = await http.get(f"/v1/messages/{sent.json()['job_id']}")
    assert record.status_code == 200


async def test_401_over_a_socket(base_url: str) -> None:
    async with httpx.AsyncClient(base_url=base_url) as client:
        response = await client.post("/v1/messages", json={"to": NORMAL, "body": "x"})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"


async def test_oversized_body_over_a_socket_is_413(http: httpx.AsyncClient) -> None:
    response = await http.post("/v1/messages", json={"to": NORMAL, "body": "x" * (2 << 20)})
    assert response.status_code == 413
    assert code_of(response) == "PAYLOAD_TOO_LARGE"


async def test_oversized_chunked_body_over_a_socket_is_413(http: httpx.AsyncClient) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"to": "+905551234567", "body": "'
        for _ in range(40):
            yield b"x" * 65536
        yield b'"}'

    response = await http.post(
        "/v1/messages", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 413


async def test_forwarded_client_behind_a_trusted_proxy_over_a_socket(
    http: httpx.AsyncClient, bed: TestBed
) -> None:
    await bed.messenger.allowlist.add(bed.workspace.id, "203.0.113.0/24")
    ok = await http.get("/v1/messages/m", headers={"X-Forwarded-For": "203.0.113.7"})
    assert code_of(ok) == "MESSAGE_NOT_FOUND"
    refused = await http.get("/v1/messages/m", headers={"X-Forwarded-For": "198.51.100.7"})
    assert code_of(refused) == "IP_NOT_ALLOWED"


async def test_mounted_under_a_host_over_a_socket(bed: TestBed) -> None:
    host = Starlette(
        routes=[Mount("/messaging", app=create_app(bed.messenger))],
        lifespan=messenger_lifespan(bed.messenger),
    )
    async with (
        serving(host) as url,
        httpx.AsyncClient(base_url=url, headers=bearer(bed.api_key)) as client,
    ):
        sent = await client.post("/messaging/v1/messages", json={"to": NORMAL, "body": "x"})
        assert sent.status_code == 201
        missing = await client.get("/messaging/v1/nope")
        assert code_of(missing) == "NOT_FOUND"
