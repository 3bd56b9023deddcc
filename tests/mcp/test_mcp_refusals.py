"""What /mcp refuses, in the contract's shape: D13 for the HTTP request, codes for tool calls.

A refusal of the HTTP request itself (its Content-Type, Accept, size, Host or Origin) is the
D13 body with ``X-Request-ID`` and the RateLimit fields, like every REST refusal; a refusal of
the JSON-RPC message stays the JSON-RPC error an MCP client reads. A tool never answers
without a code, whatever its arguments hold and whichever store is behind it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from _mcp_support import ACCEPT, Harness, bearer, code_of, rpc, started
from _sql_apps import BACKENDS, sql_testbed
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE

from unified_messaging import ManualClock, Messenger, Principal, StatusRecord
from unified_messaging.asgi import create_app
from unified_messaging.testing import TestBed, create_testbed


def assert_d13(response: httpx.Response, status: int, code: str) -> dict[str, object]:
    """The D13 body with ``code`` at ``status``, with the headers every answer carries."""
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    assert response.headers["x-request-id"]
    assert "ratelimit-remaining" in response.headers
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    assert ("details" in body["error"]) == (status == 400)
    return body["error"]  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- the HTTP request


async def test_a_missing_content_type_is_a_400_naming_it(mcp: Harness) -> None:
    assert mcp.app is not None
    transport = httpx.ASGITransport(app=mcp.app)
    async with httpx.AsyncClient(transport=transport, base_url=mcp.base_url) as client:
        headers = {**ACCEPT, **bearer(mcp.bed.api_key)}
        response = await client.post("/mcp", content=b"{}", headers=headers)
    error = assert_d13(response, 400, "VALIDATION_ERROR")
    assert error["details"] == [{"field": "Content-Type", "message": "must be application/json"}]


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/json-patch+json", "application/jsonx"]
)
async def test_a_content_type_other_than_json_is_a_400_naming_it(
    mcp: Harness, content_type: str
) -> None:
    # application/json-patch+json was the SDK's 415; the contract says 400, as for REST.
    response = await mcp.post(rpc("tools/list"), headers={"Content-Type": content_type})
    error = assert_d13(response, 400, "VALIDATION_ERROR")
    assert error["details"] == [{"field": "Content-Type", "message": "must be application/json"}]


async def test_json_in_another_charset_is_refused_as_rest_refuses_it(mcp: Harness) -> None:
    headers = {"Content-Type": "application/json; charset=latin-1"}
    response = await mcp.post(rpc("tools/list"), headers=headers)
    assert_d13(response, 400, "VALIDATION_ERROR")


async def test_a_client_that_does_not_accept_json_gets_a_coded_406(mcp: Harness) -> None:
    response = await mcp.post(rpc("tools/list"), headers={"Accept": "text/html"})
    assert_d13(response, 406, "NOT_ACCEPTABLE")


async def test_the_newer_protocol_revision_refuses_accept_in_the_same_shape(
    mcp: Harness,
) -> None:
    headers = {"Accept": "text/html", "MCP-Protocol-Version": "2099-01-01"}
    response = await mcp.post(rpc("tools/list"), headers=headers)
    assert_d13(response, 406, "NOT_ACCEPTABLE")


async def test_over_4_mib_is_payload_too_large(mcp: Harness) -> None:
    response = await mcp.post(b" " * (DEFAULT_MAX_REQUEST_BODY_SIZE + 1))
    error = assert_d13(response, 413, "PAYLOAD_TOO_LARGE")
    # REST's wording (PayloadTooLarge.over), with the SDK's cap.
    limit = DEFAULT_MAX_REQUEST_BODY_SIZE
    assert error["message"] == f"The request body is larger than {limit} bytes."


async def test_another_host_and_another_origin_are_coded_refusals(bed: TestBed) -> None:
    app = create_app(bed.messenger, mcp_allowed_hosts=["api.example.com"])
    async with started(app):
        mcp = Harness(bed, "http://api.example.com", app)
        host = await mcp.post(rpc("tools/list"), headers={"Host": "evil.example"})
        assert_d13(host, 421, "MISDIRECTED_REQUEST")
        origin = await mcp.post(rpc("tools/list"), headers={"Origin": "https://evil.example"})
        assert_d13(origin, 403, "FORBIDDEN")


# --------------------------------------------------------------------------- the JSON-RPC message


@pytest.mark.parametrize(("body", "rpc_code"), [(b"{not json", -32700), (b'{"foo": 1}', -32602)])
async def test_a_message_that_is_no_json_rpc_stays_a_json_rpc_error(
    mcp: Harness, body: bytes, rpc_code: int
) -> None:
    response = await mcp.post(body)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == rpc_code
    assert response.headers["x-request-id"]


# --------------------------------------------------------------------------- tool calls


@pytest.fixture(params=BACKENDS)
async def sql_mcp(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Harness]:
    async with sql_testbed(request.param, tmp_path) as bed:
        app = create_app(bed.messenger, worker=False)
        async with started(app):
            yield Harness(bed, "http://testserver", app)


@pytest.mark.parametrize("job_id", ["msg_\x00x", "\x00"])
async def test_get_message_with_nul_is_message_not_found_on_every_store(
    sql_mcp: Harness, job_id: str
) -> None:
    result = await sql_mcp.call("get_message", {"job_id": job_id})
    assert code_of(result) == "MESSAGE_NOT_FOUND"


@pytest.mark.parametrize(
    "arguments",
    [
        {"to": "+905551234567", "body": "a\x00b"},
        {"to": "+905551234567\x00", "body": "x"},
        {"to": "+905551234567", "body": "x", "sender": "\x00"},
    ],
)
async def test_send_message_with_nul_is_a_validation_error_on_every_store(
    sql_mcp: Harness, arguments: dict[str, object]
) -> None:
    result = await sql_mcp.call("send_message", arguments)
    assert code_of(result) == "VALIDATION_ERROR"


class _BrokenReads(Messenger):
    async def get_message(self, auth: Principal, job_id: str) -> StatusRecord:
        raise RuntimeError("a bug, with internals: /var/lib/db")


async def test_a_tool_that_fails_unexpectedly_answers_internal_error() -> None:
    bed = await create_testbed(messenger=_BrokenReads(clock=ManualClock()))
    app = create_app(bed.messenger, worker=False)
    async with started(app):
        result = await Harness(bed, "http://testserver", app).call("get_message", {"job_id": "m"})
    await bed.messenger.aclose()
    assert code_of(result) == "INTERNAL_ERROR"
    assert "/var/lib" not in str(result.content)
