"""Access over HTTP (D1, D15, D16, D18): 401, the IP allowlist behind proxies, the rate limit,
and the order of the checks. Also the core's access rules called directly."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import httpx
import pytest
from _asgi_support import NORMAL, ClientFactory, bearer, code_of
from starlette.applications import Starlette

from unified_messaging import (
    IpNotAllowed,
    ManualClock,
    Messenger,
    RateLimitPolicy,
    RequestInvalid,
    ResourceNotFound,
    Unauthorized,
)
from unified_messaging._access.authorize import (
    RateLimitRefused,
    normalize_allowlist_entry,
    parse_ip,
)
from unified_messaging.asgi import create_app
from unified_messaging.testing import TestBed

SEND = {"to": NORMAL, "body": "x"}

# --------------------------------------------------------------------------- 401


async def _assert_401(response: httpx.Response) -> None:
    assert response.status_code == 401
    assert code_of(response) == "UNAUTHORIZED"
    assert response.headers["www-authenticate"] == "Bearer"
    assert "ratelimit" not in response.headers


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        "Basic dXNlcjpwYXNz",
        "Bearer not-a-key",
        "Bearer um_test_short",
        "Bearer um_prod_" + "a" * 40,
        "Bearer um_test_" + "a" * 40,  # well formed, unknown
        "Bearer um_live_" + "a" * 40,
    ],
)
async def test_missing_malformed_or_unknown_key_is_401(
    app: Starlette, make_client: ClientFactory, authorization: str | None
) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    client = await make_client(app, headers=headers)
    await _assert_401(await client.post("/v1/messages", json=SEND))
    await _assert_401(await client.get("/v1/messages/msg_1"))


async def test_revoked_key_is_401(client: httpx.AsyncClient, bed: TestBed) -> None:
    assert bed.principal.key is not None
    await bed.messenger.keys.revoke(bed.principal.key.id)
    await _assert_401(await client.post("/v1/messages", json=SEND))


async def test_expired_key_is_401(app: Starlette, bed: TestBed, make_client: ClientFactory) -> None:
    assert isinstance(bed.clock, ManualClock)
    key = await bed.messenger.keys.create(
        bed.workspace.id, expires_at=bed.clock.now() + timedelta(hours=1)
    )
    client = await make_client(app, headers=bearer(key.secret))
    assert (await client.post("/v1/messages", json=SEND)).status_code == 201
    bed.clock.advance(timedelta(hours=1))
    await _assert_401(await client.post("/v1/messages", json=SEND))


async def test_lower_case_scheme_is_accepted(
    app: Starlette, bed: TestBed, make_client: ClientFactory
) -> None:
    client = await make_client(app, headers={"Authorization": f"bearer {bed.api_key}"})
    assert (await client.post("/v1/messages", json=SEND)).status_code == 201


# --------------------------------------------------------------------------- 403


@pytest.fixture
async def allowlisted(bed: TestBed) -> TestBed:
    await bed.messenger.allowlist.add(bed.workspace.id, "203.0.113.0/24")
    await bed.messenger.allowlist.add(bed.workspace.id, "2001:db8::/32")
    return bed


@pytest.mark.parametrize(
    "peer", ["203.0.113.9", "2001:db8::1", "::ffff:203.0.113.9", "2001:db8:ffff::abcd"]
)
async def test_allowlisted_address_passes(
    app: Starlette, allowlisted: TestBed, make_client: ClientFactory, peer: str
) -> None:
    client = await make_client(app, peer=(peer, 5000), headers=bearer(allowlisted.api_key))
    assert (await client.post("/v1/messages", json=SEND)).status_code == 201


@pytest.mark.parametrize("peer", ["198.51.100.1", "2001:db9::1", "::ffff:198.51.100.1", "x"])
async def test_address_outside_the_allowlist_is_403(
    app: Starlette, allowlisted: TestBed, make_client: ClientFactory, peer: str
) -> None:
    client = await make_client(app, peer=(peer, 5000), headers=bearer(allowlisted.api_key))
    response = await client.post("/v1/messages", json=SEND)
    assert response.status_code == 403
    assert code_of(response) == "IP_NOT_ALLOWED"
    assert "ratelimit" not in response.headers
    assert (await client.get("/v1/messages/msg_1")).status_code == 403


async def test_allowlist_of_another_workspace_does_not_apply(
    app: Starlette, bed: TestBed, make_client: ClientFactory
) -> None:
    other = await bed.messenger.workspaces.create("other")
    await bed.messenger.allowlist.add(other.id, "203.0.113.0/24")
    client = await make_client(app, peer=("198.51.100.1", 1), headers=bearer(bed.api_key))
    assert (await client.post("/v1/messages", json=SEND)).status_code == 201


@pytest.fixture
def proxied_app(bed: TestBed) -> Starlette:
    return create_app(bed.messenger, trusted_proxies=["10.0.0.0/8", "fd00::/8"])


@pytest.mark.parametrize(
    ("peer", "forwarded", "status"),
    [
        # Behind a trusted proxy the right-most hop that is not ours is the client.
        ("10.0.0.2", "198.51.100.1, 203.0.113.5", 201),
        ("10.0.0.2", "203.0.113.5, 198.51.100.1", 403),
        ("10.0.0.2", "203.0.113.5, 10.0.0.7", 201),  # a chain of our own proxies
        ("fd00::1", "2001:db8::5", 201),
        ("10.0.0.2", "[2001:db8::5]:443", 201),
        ("10.0.0.2", "203.0.113.5:5555", 201),
        ("10.0.0.2", "garbage, 203.0.113.5", 201),  # left of the client: never read
        ("10.0.0.2", "203.0.113.5, garbage", 403),  # a hop we cannot read: nobody to trust
        ("10.0.0.2", "", 403),  # the proxy itself is not allowlisted
        # An untrusted peer's X-Forwarded-For is ignored: it could say anything.
        ("198.51.100.1", "203.0.113.5", 403),
        ("203.0.113.9", "198.51.100.1", 201),
    ],
)
async def test_x_forwarded_for_is_believed_only_from_trusted_proxies(
    proxied_app: Starlette,
    allowlisted: TestBed,
    make_client: ClientFactory,
    peer: str,
    forwarded: str,
    status: int,
) -> None:
    headers = {**bearer(allowlisted.api_key), "X-Forwarded-For": forwarded}
    client = await make_client(proxied_app, peer=(peer, 1), headers=headers)
    assert (await client.post("/v1/messages", json=SEND)).status_code == status


async def test_several_forwarded_for_fields_form_one_chain(
    proxied_app: Starlette, allowlisted: TestBed, make_client: ClientFactory
) -> None:
    client = await make_client(proxied_app, peer=("10.0.0.2", 1))
    headers = [
        ("Authorization", f"Bearer {allowlisted.api_key}"),
        ("X-Forwarded-For", "203.0.113.5"),
        ("X-Forwarded-For", "198.51.100.1"),
    ]
    response = await client.post("/v1/messages", json=SEND, headers=httpx.Headers(headers))
    assert response.status_code == 403


async def test_without_trusted_proxies_forwarded_for_is_ignored(
    app: Starlette, allowlisted: TestBed, make_client: ClientFactory
) -> None:
    headers = {**bearer(allowlisted.api_key), "X-Forwarded-For": "203.0.113.5"}
    client = await make_client(app, peer=("10.0.0.2", 1), headers=headers)
    assert (await client.post("/v1/messages", json=SEND)).status_code == 403


# --------------------------------------------------------------------------- 429


async def test_rate_limit_headers_on_every_authorized_answer(client: httpx.AsyncClient) -> None:
    for response in [
        await client.post("/v1/messages", json=SEND),
        await client.post("/v1/messages", json={"to": NORMAL}),
        await client.get("/v1/messages/msg_none"),
    ]:
        assert response.headers["ratelimit-limit"] == "100"
        assert response.headers["ratelimit-policy"] == '"default";q=100;w=2'
        assert response.headers["ratelimit"].startswith('"default";r=')
        assert "retry-after" not in response.headers
    assert response.headers["ratelimit-remaining"] == "97"


async def test_burst_of_concurrent_requests_is_cut_at_the_keys_burst(
    app: Starlette, bed: TestBed, make_client: ClientFactory
) -> None:
    key = await bed.messenger.keys.create(bed.workspace.id, rate_limit=1, rate_burst=5)
    client = await make_client(app, headers=bearer(key.secret))
    responses = await asyncio.gather(*(client.post("/v1/messages", json=SEND) for _ in range(12)))
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [201] * 5 + [429] * 7
    refused = next(r for r in responses if r.status_code == 429)
    assert code_of(refused) == "RATE_LIMITED"
    assert refused.headers["retry-after"] == "1"
    assert refused.headers["ratelimit-remaining"] == "0"
    assert refused.headers["ratelimit-limit"] == "5"
    assert refused.headers["ratelimit-policy"] == '"default";q=5;w=5'
    # The bucket refills with time (the testbed's clock is a manual one).
    assert isinstance(bed.clock, ManualClock)
    bed.clock.advance(1)
    assert (await client.post("/v1/messages", json=SEND)).status_code == 201


async def test_rate_limit_is_per_key(
    app: Starlette, bed: TestBed, make_client: ClientFactory
) -> None:
    tight = await bed.messenger.keys.create(bed.workspace.id, rate_limit=1, rate_burst=1)
    tight_client = await make_client(app, headers=bearer(tight.secret))
    other_client = await make_client(app, headers=bearer(bed.api_key))
    assert (await tight_client.get("/v1/messages/msg_1")).status_code == 404
    assert (await tight_client.get("/v1/messages/msg_1")).status_code == 429
    assert (await other_client.get("/v1/messages/msg_1")).status_code == 404


async def test_a_bulk_request_is_one_request(
    app: Starlette, bed: TestBed, make_client: ClientFactory
) -> None:
    key = await bed.messenger.keys.create(bed.workspace.id, rate_limit=1, rate_burst=2)
    client = await make_client(app, headers=bearer(key.secret))
    items = [{"to": NORMAL, "body": str(i)} for i in range(50)]
    response = await client.post("/v1/messages/bulk", json={"items": items})
    assert response.status_code == 201
    assert response.headers["ratelimit-remaining"] == "1"


async def test_messenger_default_rate_policy_applies_to_keys_without_their_own(
    make_client: ClientFactory,
) -> None:
    messenger = Messenger(clock=ManualClock(), default_rate_policy=RateLimitPolicy(1, 3))
    workspace = await messenger.workspaces.create("w")
    key = await messenger.keys.create(workspace.id)
    client = await make_client(create_app(messenger), headers=bearer(key.secret))
    statuses = [(await client.get("/v1/messages/m")).status_code for _ in range(4)]
    assert statuses == [404, 404, 404, 429]


# --------------------------------------------------------------------------- D15 order


async def test_bad_key_and_bad_body_is_401(anonymous: httpx.AsyncClient) -> None:
    response = await anonymous.post("/v1/messages", content=b"{nope", headers=bearer("x"))
    assert response.status_code == 401


async def test_bad_key_and_too_large_body_is_401(anonymous: httpx.AsyncClient) -> None:
    response = await anonymous.post("/v1/messages", content=b"x" * (2 << 20))
    assert response.status_code == 401


async def test_disallowed_address_and_bad_body_is_403(
    app: Starlette, allowlisted: TestBed, make_client: ClientFactory
) -> None:
    client = await make_client(app, peer=("198.51.100.1", 1), headers=bearer(allowlisted.api_key))
    response = await client.post("/v1/messages", json={"to": ""})
    assert response.status_code == 403


async def test_refused_address_takes_no_token(
    app: Starlette, bed: TestBed, make_client: ClientFactory
) -> None:
    await bed.messenger.allowlist.add(bed.workspace.id, "203.0.113.0/24")
    key = await bed.messenger.keys.create(bed.workspace.id, rate_limit=1, rate_burst=1)
    outside = await make_client(app, peer=("198.51.100.1", 1), headers=bearer(key.secret))
    inside = await make_client(app, peer=("203.0.113.1", 1), headers=bearer(key.secret))
    for _ in range(3):
        assert (await outside.get("/v1/messages/m")).status_code == 403
    assert (await inside.get("/v1/messages/m")).status_code == 404


async def test_rate_limited_and_bad_body_is_429(
    app: Starlette, bed: TestBed, make_client: ClientFactory
) -> None:
    key = await bed.messenger.keys.create(bed.workspace.id, rate_limit=1, rate_burst=1)
    client = await make_client(app, headers=bearer(key.secret))
    assert (await client.post("/v1/messages", json=SEND)).status_code == 201
    response = await client.post("/v1/messages", json={"to": ""})
    assert response.status_code == 429


async def test_bad_body_and_unknown_provider_is_400(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/messages", json={"to": "", "body": "x", "provider": "x"})
    assert response.status_code == 400


# --------------------------------------------------------------------------- the core's rules


async def test_authorize_runs_the_three_checks_in_order(bed: TestBed) -> None:
    with pytest.raises(Unauthorized):
        await bed.messenger.access.authorize(None, "203.0.113.1")
    principal, decision = await bed.messenger.access.authorize(bed.api_key, None)
    assert principal.workspace_id == bed.workspace.id
    assert decision.allowed
    await bed.messenger.allowlist.add(bed.workspace.id, "203.0.113.1")
    with pytest.raises(IpNotAllowed):
        await bed.messenger.access.authorize(bed.api_key, None)
    key = await bed.messenger.keys.create(bed.workspace.id, rate_limit=1, rate_burst=1)
    await bed.messenger.access.authorize(key.secret, "203.0.113.1")
    with pytest.raises(RateLimitRefused) as refused:
        await bed.messenger.access.authorize(key.secret, "203.0.113.1")
    assert refused.value.code == "RATE_LIMITED"
    assert refused.value.retry_after == pytest.approx(1.0)
    assert refused.value.decision.headers()["Retry-After"] == "1"


@pytest.mark.parametrize(
    ("entry", "stored"),
    [
        ("10.0.0.0/8", "10.0.0.0/8"),
        (" 198.51.100.7 ", "198.51.100.7"),
        ("198.51.100.7/32", "198.51.100.7"),
        ("2001:DB8::/32", "2001:db8::/32"),
        ("2001:db8::1/128", "2001:db8::1"),
        ("::ffff:10.0.0.0/104", "10.0.0.0/8"),
        ("::ffff:198.51.100.7", "198.51.100.7"),
    ],
)
def test_allowlist_entries_are_stored_canonically(entry: str, stored: str) -> None:
    assert normalize_allowlist_entry(entry) == stored


@pytest.mark.parametrize("entry", ["", "10.0.0.0/33", "example.com", "10.0.0.1/8", "::g"])
def test_bad_allowlist_entries_are_refused(entry: str) -> None:
    with pytest.raises(RequestInvalid) as refused:
        normalize_allowlist_entry(entry)
    assert refused.value.details[0].field == "cidr"


async def test_allowlist_admin_round_trip(bed: TestBed) -> None:
    ws = bed.workspace.id
    assert await bed.messenger.allowlist.add(ws, "198.51.100.7/32") == "198.51.100.7"
    await bed.messenger.allowlist.add(ws, "2001:db8::/32")
    assert await bed.messenger.allowlist.list(ws) == ["198.51.100.7", "2001:db8::/32"]
    await bed.messenger.allowlist.remove(ws, "198.51.100.7")
    assert await bed.messenger.allowlist.list(ws) == ["2001:db8::/32"]
    with pytest.raises(ResourceNotFound):
        await bed.messenger.allowlist.remove(ws, "198.51.100.7")
    with pytest.raises(ResourceNotFound):
        await bed.messenger.allowlist.add("ws_missing", "10.0.0.0/8")


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("203.0.113.1", "203.0.113.1"),
        ("::ffff:203.0.113.1", "203.0.113.1"),
        ("fe80::1%eth0", "fe80::1"),
        ("testclient", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_ip(text: str | None, parsed: str | None) -> None:
    address = parse_ip(text)
    assert (None if address is None else str(address)) == parsed
