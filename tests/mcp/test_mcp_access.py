"""Who may call /mcp (D1, D2, D15, D16, D18): the REST key, checked before any JSON-RPC is read."""

from __future__ import annotations

import httpx
import pytest
from _mcp_support import NORMAL, Harness, code_of, data_of, rpc
from mcp.shared.exceptions import MCPError

from unified_messaging.testing import TestBed

LIST = rpc("tools/list")


def _assert_refused(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert set(error) == {"code", "message"}
    assert error["code"] == code
    assert response.headers["x-request-id"]


# --------------------------------------------------------------------------- 401


@pytest.mark.parametrize(
    "key", [None, "", "not-a-key", "um_test_short", "um_test_" + "a" * 40, "um_live_" + "a" * 40]
)
async def test_missing_or_bad_key_is_401_with_a_challenge(mcp: Harness, key: str | None) -> None:
    response = await mcp.post(LIST, key=key)
    _assert_refused(response, 401, "UNAUTHORIZED")
    assert response.headers["www-authenticate"] == "Bearer"
    assert "ratelimit" not in response.headers


async def test_401_comes_before_the_body_is_read(mcp: Harness) -> None:
    # Neither JSON-RPC nor within the SDK's size cap: an unauthenticated caller learns nothing.
    for body in (b"{not json", b"x" * (5 << 20)):
        response = await mcp.post(body, key=None)
        _assert_refused(response, 401, "UNAUTHORIZED")


async def test_basic_auth_is_no_key(mcp: Harness) -> None:
    response = await mcp.post(LIST, key=None, headers={"Authorization": "Basic dXNlcjpwYXNz"})
    assert response.status_code == 401


async def test_revoked_key_is_401(mcp: Harness, bed: TestBed) -> None:
    assert bed.principal.key is not None
    await bed.messenger.keys.revoke(bed.principal.key.id)
    assert (await mcp.post(LIST)).status_code == 401


async def test_the_sdk_client_with_a_bad_key_fails_to_initialize(mcp: Harness) -> None:
    with pytest.RaisesGroup(pytest.RaisesExc(MCPError), flatten_subgroups=True):
        async with mcp.session("um_test_" + "b" * 40):
            pass


# --------------------------------------------------------------------------- 403


async def test_caller_outside_the_allowlist_is_403(mcp: Harness, bed: TestBed) -> None:
    await bed.messenger.allowlist.add(bed.workspace.id, "203.0.113.0/24")
    refused = await mcp.post(LIST, peer=("198.51.100.7", 5000))
    _assert_refused(refused, 403, "IP_NOT_ALLOWED")
    assert "ratelimit" not in refused.headers
    async with mcp.session(peer=("203.0.113.9", 5000)) as session:
        assert (await session.list_tools()).tools


async def test_bad_key_from_outside_the_allowlist_is_still_401(mcp: Harness, bed: TestBed) -> None:
    await bed.messenger.allowlist.add(bed.workspace.id, "203.0.113.0/24")
    response = await mcp.post(LIST, key="nope", peer=("198.51.100.7", 5000))
    assert response.status_code == 401


# --------------------------------------------------------------------------- 429 and RateLimit


async def test_every_answer_carries_the_rate_limit_fields(mcp: Harness) -> None:
    response = await mcp.post(LIST)
    assert response.status_code == 200
    assert response.headers["ratelimit-limit"] == "100"
    assert response.headers["ratelimit-remaining"] == "99"
    assert response.headers["ratelimit-policy"] == '"default";q=100;w=2'
    assert response.headers["x-request-id"]


async def test_an_empty_bucket_is_429_before_the_body_is_read(mcp: Harness, bed: TestBed) -> None:
    key = await bed.messenger.keys.create(bed.workspace.id, rate_limit=0.001, rate_burst=1)
    assert (await mcp.post(LIST, key=key.secret)).status_code == 200
    refused = await mcp.post(b"{not json", key=key.secret)
    _assert_refused(refused, 429, "RATE_LIMITED")
    assert refused.headers["ratelimit-remaining"] == "0"
    assert int(refused.headers["retry-after"]) >= 1


async def test_mcp_and_rest_share_the_key_bucket(mcp: Harness, bed: TestBed) -> None:
    key = await bed.messenger.keys.create(bed.workspace.id, rate_limit=0.001, rate_burst=2)
    assert (await mcp.post(LIST, key=key.secret)).status_code == 200
    assert mcp.app is not None
    transport = httpx.ASGITransport(app=mcp.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as rest:
        headers = {"Authorization": f"Bearer {key.secret}"}
        assert (await rest.get("/v1/messages/m", headers=headers)).status_code == 404
        assert (await rest.get("/v1/messages/m", headers=headers)).status_code == 429
    assert (await mcp.post(LIST, key=key.secret)).status_code == 429


# --------------------------------------------------------------------------- test and live worlds


async def test_a_test_job_is_not_found_with_a_live_key(mcp: Harness, bed: TestBed) -> None:
    live = await bed.messenger.keys.create(bed.workspace.id, livemode=True)
    sent = data_of(await mcp.call("send_message", {"to": NORMAL, "body": "x"}))
    arguments = {"job_id": sent["job_id"]}
    assert code_of(await mcp.call("get_message", arguments, key=live.secret)) == "MESSAGE_NOT_FOUND"
    assert data_of(await mcp.call("get_message", arguments))["livemode"] is False


async def test_another_workspace_cannot_read_the_job(mcp: Harness, bed: TestBed) -> None:
    other = await bed.messenger.workspaces.create("other")
    key = await bed.messenger.keys.create(other.id)
    sent = data_of(await mcp.call("send_message", {"to": NORMAL, "body": "x"}))
    result = await mcp.call("get_message", {"job_id": sent["job_id"]}, key=key.secret)
    assert code_of(result) == "MESSAGE_NOT_FOUND"


async def test_list_providers_tells_a_live_key_it_is_live(mcp: Harness, bed: TestBed) -> None:
    live = await bed.messenger.keys.create(bed.workspace.id, livemode=True)
    assert data_of(await mcp.call("list_providers", {}, key=live.secret))["livemode"] is True
