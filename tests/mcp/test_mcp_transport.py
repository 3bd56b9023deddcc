"""The HTTP side of /mcp: JSON-RPC mistakes, sizes, methods, paths and Host/Origin checks.

Past our key check every answer is the SDK's own; these tests pin what a client gets, and
that none of it is a 500.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest
from _mcp_support import ACCEPT, NORMAL, Harness, bearer, rpc, started
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE

from unified_messaging.asgi import create_app
from unified_messaging.asgi._mcp import transport_security
from unified_messaging.testing import TestBed

# --------------------------------------------------------------------------- JSON-RPC


async def test_malformed_json_is_a_parse_error(mcp: Harness) -> None:
    response = await mcp.post(b"{not json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700
    assert "ratelimit-remaining" in response.headers


@pytest.mark.parametrize("body", [{"foo": 1}, [], "text", {"jsonrpc": "1.0", "id": 1}])
async def test_json_that_is_no_json_rpc_message_is_refused(mcp: Harness, body: object) -> None:
    response = await mcp.post(json.dumps(body).encode())
    assert response.status_code == 400
    assert response.json()["error"]["code"] in (-32600, -32602)


async def test_unknown_method_is_method_not_found(mcp: Harness) -> None:
    response = await mcp.post(rpc("messages/delete"))
    assert response.status_code == 200
    assert response.json()["error"] == {
        "code": -32601,
        "message": "Method not found",
        "data": "messages/delete",
    }


async def test_tool_arguments_that_are_no_object_are_invalid_params(mcp: Harness) -> None:
    response = await mcp.post(rpc("tools/call", {"name": "send_message", "arguments": [NORMAL]}))
    assert response.json()["error"]["code"] == -32602


async def test_a_raw_tools_call_answers_with_the_tool_result(mcp: Harness) -> None:
    arguments = {"to": "+12025550100", "body": "x"}
    response = await mcp.post(rpc("tools/call", {"name": "send_message", "arguments": arguments}))
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["code"] == "INVALID_RECIPIENT"
    assert result["content"][0]["text"].startswith("INVALID_RECIPIENT: ")


async def test_a_notification_is_accepted_without_an_answer(mcp: Harness) -> None:
    response = await mcp.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert response.status_code == 202


async def test_wrong_content_type_is_refused_by_the_sdk(mcp: Harness) -> None:
    response = await mcp.post(rpc("tools/list"), headers={"Content-Type": "text/plain"})
    assert response.status_code == 400


async def test_a_client_that_does_not_accept_json_is_406(mcp: Harness) -> None:
    response = await mcp.post(rpc("tools/list"), headers={"Accept": "text/html"})
    assert response.status_code == 406


# --------------------------------------------------------------------------- sizes


async def test_the_rest_1_mib_cap_does_not_apply_to_mcp(mcp: Harness) -> None:
    arguments = {"to": NORMAL, "body": "x" * (2 << 20)}
    response = await mcp.post(rpc("tools/call", {"name": "send_message", "arguments": arguments}))
    assert response.status_code == 200
    error = response.json()["result"]["structuredContent"]["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert error["details"][0]["field"] == "body"


async def test_over_4_mib_is_the_sdks_413(mcp: Harness) -> None:
    response = await mcp.post(b" " * (DEFAULT_MAX_REQUEST_BODY_SIZE + 1))
    assert response.status_code == 413
    assert "ratelimit-remaining" in response.headers


async def test_an_oversized_chunked_body_is_413_too(mcp: Harness) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(80):
            yield b" " * 65536

    assert mcp.app is not None
    transport = httpx.ASGITransport(app=mcp.app)
    async with httpx.AsyncClient(transport=transport, base_url=mcp.base_url) as client:
        response = await client.post(
            "/mcp",
            content=chunks(),
            headers={"Content-Type": "application/json", **ACCEPT, **bearer(mcp.bed.api_key)},
        )
    assert response.status_code == 413


# --------------------------------------------------------------------------- path and methods


async def test_mcp_is_answered_where_it_is_without_a_redirect(mcp: Harness) -> None:
    response = await mcp.post(rpc("tools/list"))
    assert response.status_code == 200
    assert response.headers["x-request-id"]


async def test_trailing_slash_redirects_to_mcp_and_the_sdk_client_follows(mcp: Harness) -> None:
    response = await mcp.post(rpc("tools/list"), path="/mcp/")
    assert response.status_code == 307
    assert response.headers["location"] == "http://testserver/mcp"
    async with mcp.session(path="/mcp/") as session:
        result = await session.call_tool("send_message", {"to": NORMAL, "body": "x"})
    assert not result.is_error


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
async def test_only_post_is_served(mcp: Harness, method: str) -> None:
    assert mcp.app is not None
    transport = httpx.ASGITransport(app=mcp.app)
    async with httpx.AsyncClient(transport=transport, base_url=mcp.base_url) as client:
        response = await client.request(
            method, "/mcp", headers={**ACCEPT, **bearer(mcp.bed.api_key)}
        )
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert response.json()["error"]["code"] == "METHOD_NOT_ALLOWED"


# --------------------------------------------------------------------------- Host and Origin


async def test_by_default_any_host_name_is_answered(mcp: Harness) -> None:
    response = await mcp.post(rpc("tools/list"), headers={"Host": "messaging.example.com"})
    assert response.status_code == 200


async def test_named_hosts_are_the_only_ones_answered(bed: TestBed) -> None:
    app = create_app(bed.messenger, mcp_allowed_hosts=["api.example.com"])
    async with started(app):
        mcp = Harness(bed, "http://api.example.com", app)
        assert (await mcp.post(rpc("tools/list"))).status_code == 200
        port = await mcp.post(rpc("tools/list"), headers={"Host": "api.example.com:8443"})
        assert port.status_code == 200
        other = await mcp.post(rpc("tools/list"), headers={"Host": "evil.example"})
        assert other.status_code == 421
        origin = await mcp.post(rpc("tools/list"), headers={"Origin": "https://evil.example"})
        assert origin.status_code == 403


async def test_named_origins_are_admitted(bed: TestBed) -> None:
    app = create_app(
        bed.messenger,
        mcp_allowed_hosts=["api.example.com"],
        mcp_allowed_origins=["https://app.example.com"],
    )
    async with started(app):
        mcp = Harness(bed, "http://api.example.com", app)
        async with mcp.session() as session:
            assert (await session.list_tools()).tools
        response = await mcp.post(rpc("tools/list"), headers={"Origin": "https://app.example.com"})
        assert response.status_code == 200


def test_transport_security_settings() -> None:
    assert not transport_security(None).enable_dns_rebinding_protection
    named = transport_security(["api.example.com", "10.0.0.1:8000", "[::1]"])
    assert named.enable_dns_rebinding_protection
    assert named.allowed_hosts == [
        "api.example.com", "api.example.com:*", "10.0.0.1:8000", "[::1]", "[::1]:*",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="at least one host"):
        transport_security([])
