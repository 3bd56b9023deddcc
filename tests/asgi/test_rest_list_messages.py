"""``GET /v1/messages`` (D29): filters, newest first, Stripe-style pages; the same key
checks, isolation and rate limit as every endpoint; bad input is a 400 or 404, never a 500."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from _asgi_support import NORMAL, ClientFactory, bearer, code_of, error_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette

from unified_messaging import ManualClock
from unified_messaging.testing import TestBed


async def send(client: httpx.AsyncClient, **body: Any) -> str:
    response = await client.post("/v1/messages", json={"body": "x", **body})
    assert response.status_code == 201, response.text
    job_id: str = response.json()["job_id"]
    return job_id


async def listed(client: httpx.AsyncClient, **params: Any) -> dict[str, Any]:
    response = await client.get("/v1/messages", params=params)
    assert response.status_code == 200, response.text
    page: dict[str, Any] = response.json()
    return page


def job_ids(page: dict[str, Any]) -> list[str]:
    return [record["job_id"] for record in page["data"]]


def details_of(response: httpx.Response) -> list[str]:
    assert response.status_code == 400, response.text
    details = error_of(response)["details"]
    assert isinstance(details, list)
    return [detail["field"] for detail in details]


# --------------------------------------------------------------------------- listing


async def test_lists_the_callers_messages_newest_first_as_status_records(
    client: httpx.AsyncClient, bed: TestBed
) -> None:
    assert isinstance(bed.clock, ManualClock)
    sent = []
    for _ in range(3):
        sent.append(await send(client, to=NORMAL))
        bed.clock.advance(1)

    page = await listed(client)

    assert job_ids(page) == sent[::-1]
    assert page["has_more"] is False
    # Each item is exactly what GET /v1/messages/{job_id} answers.
    for record in page["data"]:
        single = await client.get(f"/v1/messages/{record['job_id']}")
        assert record == single.json()


async def test_an_empty_workspace_lists_nothing(client: httpx.AsyncClient) -> None:
    assert await listed(client) == {"data": [], "has_more": False}


async def test_pages_follow_starting_after_until_has_more_is_false(
    client: httpx.AsyncClient,
) -> None:
    # One clock instant for all: the order falls back on the job id.
    sent = [await send(client, to=NORMAL) for _ in range(5)]

    seen: list[str] = []
    page = await listed(client, limit=2)
    while True:
        seen += job_ids(page)
        if not page["has_more"]:
            break
        page = await listed(client, limit=2, starting_after=seen[-1])

    assert seen == sorted(sent, reverse=True)


async def test_the_default_page_is_twenty(client: httpx.AsyncClient) -> None:
    for i in range(21):  # 21 recipients: one would meet the flood guard (D28) after 10
        await send(client, to=f"+90532{i:07d}")

    page = await listed(client)

    assert (len(page["data"]), page["has_more"]) == (20, True)


async def test_filters_by_recipient_in_any_form_it_is_typed(client: httpx.AsyncClient) -> None:
    mine = await send(client, to="0555 123 45 67")
    await send(client, to="+905551234568")

    for typed in ("+905551234567", "0555 123 45 67", "5551234567"):
        assert job_ids(await listed(client, to=typed)) == [mine]


async def test_filters_by_status_and_provider(client: httpx.AsyncClient) -> None:
    failed = await send(client, to="+905550000001")  # the simulator refuses it at submit
    sent = await send(client, to=NORMAL, provider="sms_b")

    assert job_ids(await listed(client, status="failed")) == [failed]
    assert job_ids(await listed(client, provider="sms_b")) == [sent]
    assert job_ids(await listed(client, status="failed", provider="sms_b")) == []


async def test_filters_by_creation_time_after_inclusive_before_exclusive(
    client: httpx.AsyncClient, bed: TestBed
) -> None:
    assert isinstance(bed.clock, ManualClock)
    first = await send(client, to=NORMAL)
    created = bed.clock.now()
    bed.clock.advance(60)
    second = await send(client, to=NORMAL)
    at = created.isoformat()  # +00:00: httpx encodes the '+' as %2B

    assert job_ids(await listed(client, created_after=at)) == [second, first]
    assert job_ids(await listed(client, created_before=at)) == []
    later = (created + timedelta(seconds=60)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert job_ids(await listed(client, created_after=at, created_before=later)) == [first]


# --------------------------------------------------------------------------- isolation


async def test_a_live_key_never_sees_test_messages_nor_pages_from_one(
    app: Starlette, client: httpx.AsyncClient, bed: TestBed, make_client: ClientFactory
) -> None:
    test_job = await send(client, to=NORMAL)
    live_key = await bed.messenger.keys.create(bed.workspace.id, livemode=True)
    live = await make_client(app, headers=bearer(live_key.secret))

    assert await listed(live) == {"data": [], "has_more": False}
    response = await live.get("/v1/messages", params={"starting_after": test_job})
    assert response.status_code == 404
    assert code_of(response) == "MESSAGE_NOT_FOUND"


async def test_another_workspaces_cursor_is_not_found_and_reveals_nothing(
    app: Starlette, client: httpx.AsyncClient, bed: TestBed, make_client: ClientFactory
) -> None:
    other = await bed.messenger.workspaces.create("other")
    await bed.messenger.connections.add(other.id, "chatbot")
    other_key = await bed.messenger.keys.create(other.id, livemode=False)
    other_client = await make_client(app, headers=bearer(other_key.secret))
    theirs = await send(other_client, to="@some_channel")
    await send(client, to=NORMAL)

    for cursor in (theirs, "msg_01JNOSUCHJOB0000000000000"):
        response = await client.get("/v1/messages", params={"starting_after": cursor})
        assert response.status_code == 404
        assert code_of(response) == "MESSAGE_NOT_FOUND"
    assert job_ids(await listed(other_client)) == [theirs]


async def test_the_list_needs_a_key_and_spends_the_keys_rate_limit(
    app: Starlette, bed: TestBed, anonymous: httpx.AsyncClient, make_client: ClientFactory
) -> None:
    assert (await anonymous.get("/v1/messages")).status_code == 401
    key = await bed.messenger.keys.create(
        bed.workspace.id, livemode=False, rate_limit=0.001, rate_burst=1
    )
    limited = await make_client(app, headers=bearer(key.secret))

    first = await limited.get("/v1/messages")
    second = await limited.get("/v1/messages")

    assert first.status_code == 200
    assert first.headers["ratelimit-remaining"] == "0"
    assert second.status_code == 429
    assert code_of(second) == "RATE_LIMITED"


async def test_an_ip_outside_the_allowlist_is_refused(
    client: httpx.AsyncClient, bed: TestBed
) -> None:
    await bed.messenger.allowlist.add(bed.workspace.id, "10.0.0.0/8")

    response = await client.get("/v1/messages")

    assert response.status_code == 403
    assert code_of(response) == "IP_NOT_ALLOWED"


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("status=nope", "status"),
        ("status=", "status"),
        ("provider=sms_z", "provider"),
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("limit=100000000000000000000000000000", "limit"),
        ("limit=-1", "limit"),
        ("limit=2.5", "limit"),
        ("limit=abc", "limit"),
        ("limit=", "limit"),
        ("created_after=yesterday", "created_after"),
        ("created_after=2026-01-01", "created_after"),
        ("created_after=2026-01-01T00:00:00", "created_after"),  # no time zone
        ("created_before=2026-02-30T00:00:00Z", "created_before"),
        ("created_before=2024-01-01T12:99:00Z", "created_before"),
        ("to=", "to"),
        ("to=" + "5" * 65, "to"),
        ("to=%00", "to"),
        ("to=%1B%5B31m", "to"),
        ("starting_after=", "starting_after"),
        ("starting_after=" + "x" * 256, "starting_after"),
        ("page=2", "page"),
        ("status=sent&status=failed", "status"),
    ],
)
async def test_a_bad_parameter_is_a_400_naming_it(
    client: httpx.AsyncClient, query: str, field: str
) -> None:
    response = await client.get(f"/v1/messages?{query}")

    assert field in details_of(response)
    assert code_of(response) == "VALIDATION_ERROR"


async def test_every_bad_parameter_is_named_at_once(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/messages?status=x&limit=0&provider=y")
    assert sorted(details_of(response)) == ["limit", "provider", "status"]


async def test_a_plus_that_the_url_turned_into_a_space_is_explained(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get("/v1/messages?created_after=2026-01-01T00:00:00+03:00")
    assert details_of(response) == ["created_after"]
    assert "%2B" in str(error_of(response)["message"])


async def test_a_cursor_that_no_store_could_hold_is_not_found(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/messages?starting_after=msg_%00")
    assert response.status_code == 404
    assert code_of(response) == "MESSAGE_NOT_FOUND"


async def test_times_at_the_edges_of_the_calendar_are_bounds_not_errors(
    client: httpx.AsyncClient,
) -> None:
    await send(client, to=NORMAL)
    early = quote("0001-01-01T00:00:00+23:59")
    late = quote("9999-12-31T23:59:59-23:59")

    response = await client.get(f"/v1/messages?created_after={early}&created_before={late}")

    assert response.status_code == 200
    assert len(response.json()["data"]) == 1


@pytest.fixture
async def roomy(app: Starlette, bed: TestBed, make_client: ClientFactory) -> httpx.AsyncClient:
    """A client whose key's bucket never runs dry (the clock never moves to refill it)."""
    key = await bed.messenger.keys.create(
        bed.workspace.id, livemode=False, rate_limit=1_000_000, rate_burst=1_000_000
    )
    return await make_client(app, headers=bearer(key.secret))


PARAMETERS = [
    "to", "status", "provider", "created_after", "created_before", "limit", "starting_after"
]  # fmt: skip
_UGLY = st.one_of(
    st.text(st.characters(codec=None, exclude_categories=()), max_size=30),
    st.sampled_from(["", "\x00", "%00", "%ZZ", "'; DROP TABLE um_messages; --", "9" * 400]),
)


@settings(
    max_examples=150,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(params=st.lists(st.tuples(st.sampled_from([*PARAMETERS, "other"]), _UGLY), max_size=4))
async def test_no_query_gets_a_5xx_or_an_answer_outside_the_contract(
    roomy: httpx.AsyncClient, params: list[tuple[str, str]]
) -> None:
    query = "&".join(
        f"{quote(name)}={quote(value.encode('utf-8', 'surrogatepass'), safe='%')}"
        for name, value in params
    )
    response = await roomy.get(f"/v1/messages?{query}")

    assert response.status_code in (200, 400, 404), response.text
    if response.status_code != 200:
        assert code_of(response) in ("VALIDATION_ERROR", "MESSAGE_NOT_FOUND")


async def test_the_openapi_document_describes_the_list(anonymous: httpx.AsyncClient) -> None:
    document = (await anonymous.get("/v1/openapi.json")).json()
    operation = document["paths"]["/v1/messages"]["get"]

    names = [p["name"] for p in operation["parameters"] if p["in"] == "query"]
    assert names == PARAMETERS
    limit = next(p for p in operation["parameters"] if p["name"] == "limit")["schema"]
    assert (limit["minimum"], limit["maximum"], limit["default"]) == (1, 100, 20)
    assert set(operation["responses"]) >= {"200", "400", "401", "403", "404", "429"}
    page = document["components"]["schemas"]["MessagePage"]
    assert set(page["required"]) == {"data", "has_more"}
