"""A smoke set against a real uvicorn on a loopback port: real sockets, the real lifespan, and
the SDK's own HTTP client as an MCP client configures it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from _mcp_support import NORMAL, Harness, code_of, data_of, rpc, serving
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from starlette.applications import Starlette
from starlette.routing import Mount

from unified_messaging.asgi import app_lifespan, create_app
from unified_messaging.testing import TestBed


@pytest.fixture
async def mcp(bed: TestBed) -> AsyncIterator[Harness]:
    # Loopback is a trusted proxy here, so X-Forwarded-For can be tested over a real socket.
    app = create_app(bed.messenger, trusted_proxies=["127.0.0.1"])
    async with serving(app) as url:
        yield Harness(bed, url)


async def test_a_whole_session_over_a_socket(mcp: Harness, bed: TestBed) -> None:
    async with mcp.session() as session:
        names = [tool.name for tool in (await session.list_tools()).tools]
        assert "send_message" in names
        sent = data_of(await session.call_tool("send_message", {"to": NORMAL, "body": "Selam"}))
        record = data_of(await session.call_tool("get_message", {"job_id": sent["job_id"]}))
        assert record["status"] == "sent"
        bad = await session.call_tool("send_message", {"to": "+905550000003", "body": "x"})
        assert code_of(bad) == "PROVIDER_UNAVAILABLE"
    assert bed.outbox.recipients() == [NORMAL]


async def test_401_over_a_socket(mcp: Harness) -> None:
    response = await mcp.post(b"{not json", key=None)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json()["error"]["code"] == "UNAUTHORIZED"


async def test_oversized_body_over_a_socket_is_413(mcp: Harness) -> None:
    response = await mcp.post(b" " * (DEFAULT_MAX_REQUEST_BODY_SIZE + 1))
    assert response.status_code == 413


async def test_forwarded_client_behind_a_trusted_proxy_over_a_socket(
    mcp: Harness, bed: TestBed
) -> None:
    await bed.messenger.allowlist.add(bed.workspace.id, "203.0.113.0/24")
    ok = await mcp.post(rpc("tools/list"), headers={"X-Forwarded-For": "203.0.113.7"})
    assert ok.status_code == 200
    refused = await mcp.post(rpc("tools/list"), headers={"X-Forwarded-For": "198.51.100.7"})
    assert refused.json()["error"]["code"] == "IP_NOT_ALLOWED"


async def test_mounted_under_a_host_over_a_socket(bed: TestBed) -> None:
    messaging = create_app(bed.messenger)
    host = Starlette(routes=[Mount("/messaging", app=messaging)], lifespan=app_lifespan(messaging))
    async with serving(host) as url:
        mcp = Harness(bed, url, path="/messaging/mcp")
        async with mcp.session() as session:
            result = await session.call_tool("list_providers", {})
    assert data_of(result)["livemode"] is False
