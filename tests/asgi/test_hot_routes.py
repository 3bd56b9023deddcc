"""The hot routes are dispatched before Starlette's router (``_hot_routes``): the
requests they leave to the router, and the near misses, are answered as the router answers
them. Every expectation here is what the app answered before the dispatcher existed."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from unified_messaging.asgi import app_lifespan, create_app
from unified_messaging.testing import create_testbed


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    bed = await create_testbed()
    app = create_app(bed.messenger, mcp=False, worker=False)
    headers = {"Authorization": f"Bearer {bed.api_key}"}
    transport = httpx.ASGITransport(app=app)
    async with (
        app_lifespan(app)(app),
        httpx.AsyncClient(transport=transport, base_url="http://t", headers=headers) as c,
    ):
        yield c


async def test_get_of_the_bulk_path_is_the_job_id_route_s_404(client: httpx.AsyncClient) -> None:
    answer = await client.get("/v1/messages/bulk")
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "MESSAGE_NOT_FOUND"
    assert "RateLimit" in answer.headers  # authorized first, as every message route


async def test_head_is_left_to_the_router(client: httpx.AsyncClient) -> None:
    health = await client.head("/v1/health")
    assert (health.status_code, health.content) == (200, b"")
    missing = await client.head("/v1/messages/msg_x")
    assert (missing.status_code, missing.content) == (404, b"")
    assert "X-Request-ID" in missing.headers


@pytest.mark.parametrize("path", ["/v1/health/", "/v1/messages/"])
async def test_a_trailing_slash_is_redirected(client: httpx.AsyncClient, path: str) -> None:
    answer = await client.get(path)
    assert answer.status_code == 307
    assert answer.headers["location"] == "http://t" + path.rstrip("/")


async def test_two_segments_after_messages_is_no_endpoint(client: httpx.AsyncClient) -> None:
    answer = await client.get("/v1/messages/a/b")
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "NOT_FOUND"


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/v1/messages", {"GET", "HEAD", "POST"}),
        ("DELETE", "/v1/messages/msg_x", {"GET", "HEAD"}),
        ("GET", "/v1/messages/bulk/", None),  # not a route at all once the slash is dropped
    ],
)
async def test_other_methods_are_the_router_s_405(
    client: httpx.AsyncClient, method: str, path: str, allowed: set[str] | None
) -> None:
    answer = await client.request(method, path)
    if allowed is None:
        assert answer.status_code == 307
        return
    assert answer.status_code == 405
    assert answer.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
    assert {m.strip() for m in answer.headers["allow"].split(",")} == allowed


async def test_the_job_id_route_takes_the_id_as_a_path_parameter(
    client: httpx.AsyncClient,
) -> None:
    sent = await client.post("/v1/messages", json={"to": "+905551234567", "body": "Merhaba"})
    assert sent.status_code == 201
    job_id = sent.json()["job_id"]
    got = await client.get(f"/v1/messages/{job_id}")
    assert got.status_code == 200
    assert got.json()["job_id"] == job_id
    assert got.headers["content-type"] == "application/json"
    assert {"ratelimit", "ratelimit-policy", "x-request-id"} <= set(got.headers)
