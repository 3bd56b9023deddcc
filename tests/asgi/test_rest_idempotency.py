"""``Idempotency-Key`` over HTTP (D22): replays, conflicts, requests in flight, what is kept."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import httpx
import pytest
from _asgi_support import NORMAL, ClientFactory, LiveSetup, bearer, code_of, error_of
from starlette.applications import Starlette

from unified_messaging import ManualClock
from unified_messaging._access.idempotency import (
    IdempotencyKeys,
    check_idempotency_key,
    request_fingerprint,
)
from unified_messaging.asgi import create_app
from unified_messaging.store.base import IdempotencyClaim
from unified_messaging.testing import TestBed

SEND = {"to": NORMAL, "body": "Selam"}


def keyed(key: str) -> dict[str, str]:
    return {"Idempotency-Key": key}


async def claim_key(live: LiveSetup, idem_key: str) -> IdempotencyClaim:
    """Take ``idem_key`` for ``SEND`` the way a request does, as a process that then dies."""
    principal = await live.messenger.authenticate(live.api_key)
    fingerprint = request_fingerprint("POST", "/v1/messages", SEND)
    claim = await IdempotencyKeys(live.messenger.store, live.clock).begin(
        principal, idem_key, fingerprint
    )
    assert isinstance(claim, IdempotencyClaim)
    return claim


async def test_same_key_and_body_replays_the_first_answer(
    client: httpx.AsyncClient, bed: TestBed
) -> None:
    first = await client.post("/v1/messages", json=SEND, headers=keyed("order-1"))
    again = await client.post("/v1/messages", json=SEND, headers=keyed("order-1"))
    assert first.status_code == again.status_code == 201
    assert again.content == first.content
    assert again.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    assert again.headers["x-request-id"] != first.headers["x-request-id"]
    assert again.headers["ratelimit-remaining"] == "98"
    assert len(bed.outbox) == 1


async def test_whitespace_and_key_order_do_not_make_another_request(
    client: httpx.AsyncClient, bed: TestBed
) -> None:
    headers = {"Content-Type": "application/json", **keyed("k")}
    one = b'{"to": "+905551234567", "body": "Selam"}'
    two = b'{\n  "body":"Selam",\n  "to":"+905551234567"\n}'
    first = await client.post("/v1/messages", content=one, headers=headers)
    again = await client.post("/v1/messages", content=two, headers=headers)
    assert again.headers["idempotent-replayed"] == "true"
    assert again.json() == first.json()
    assert len(bed.outbox) == 1


async def test_same_key_with_another_body_is_409_conflict(client: httpx.AsyncClient) -> None:
    await client.post("/v1/messages", json=SEND, headers=keyed("k"))
    response = await client.post("/v1/messages", json={**SEND, "body": "other"}, headers=keyed("k"))
    assert response.status_code == 409
    assert code_of(response) == "IDEMPOTENCY_CONFLICT"


async def test_same_key_on_another_path_is_409_conflict(client: httpx.AsyncClient) -> None:
    await client.post("/v1/messages", json=SEND, headers=keyed("k"))
    bulk = {"items": [SEND]}
    response = await client.post("/v1/messages/bulk", json=bulk, headers=keyed("k"))
    assert code_of(response) == "IDEMPOTENCY_CONFLICT"


async def test_bulk_replays_too(client: httpx.AsyncClient, bed: TestBed) -> None:
    bulk = {"items": [SEND, {"to": "bad", "body": "x"}]}
    first = await client.post("/v1/messages/bulk", json=bulk, headers=keyed("b"))
    again = await client.post("/v1/messages/bulk", json=bulk, headers=keyed("b"))
    assert again.content == first.content
    assert again.headers["idempotent-replayed"] == "true"
    assert len(bed.outbox) == 1


async def test_keys_are_scoped_per_api_key(
    app: Starlette, client: httpx.AsyncClient, bed: TestBed, make_client: ClientFactory
) -> None:
    other_key = await bed.messenger.keys.create(bed.workspace.id)
    other = await make_client(app, headers=bearer(other_key.secret))
    first = await client.post("/v1/messages", json=SEND, headers=keyed("k"))
    second = await other.post("/v1/messages", json=SEND, headers=keyed("k"))
    assert second.status_code == 201
    assert "idempotent-replayed" not in second.headers
    assert second.json()["job_id"] != first.json()["job_id"]


async def test_keys_are_scoped_per_workspace(
    app: Starlette, client: httpx.AsyncClient, bed: TestBed, make_client: ClientFactory
) -> None:
    other_bed_workspace = await bed.messenger.workspaces.create("other")
    await bed.messenger.connections.add(other_bed_workspace.id, "sms_a", default_sender="X")
    other_key = await bed.messenger.keys.create(other_bed_workspace.id)
    other = await make_client(app, headers=bearer(other_key.secret))
    await client.post("/v1/messages", json=SEND, headers=keyed("k"))
    response = await other.post("/v1/messages", json={**SEND, "body": "x"}, headers=keyed("k"))
    assert response.status_code == 201


async def test_an_answer_is_replayed_for_24_hours(client: httpx.AsyncClient, bed: TestBed) -> None:
    assert isinstance(bed.clock, ManualClock)
    first = await client.post("/v1/messages", json=SEND, headers=keyed("k"))
    bed.clock.advance(timedelta(hours=24) - timedelta(seconds=1))
    assert (await client.post("/v1/messages", json=SEND, headers=keyed("k"))).content == (
        first.content
    )
    bed.clock.advance(timedelta(seconds=1))
    fresh = await client.post("/v1/messages", json=SEND, headers=keyed("k"))
    assert fresh.status_code == 201
    assert "idempotent-replayed" not in fresh.headers
    assert fresh.json()["job_id"] != first.json()["job_id"]


@pytest.mark.parametrize(
    ("failing", "code"),
    [
        ({"to": NORMAL}, "VALIDATION_ERROR"),
        ({"to": "+1 202 555 0100", "body": "x"}, "INVALID_RECIPIENT"),
        ({"to": NORMAL, "template": "missing"}, "TEMPLATE_NOT_FOUND"),
    ],
)
async def test_a_request_that_failed_before_a_job_stores_nothing(
    client: httpx.AsyncClient, failing: dict[str, object], code: str
) -> None:
    refused = await client.post("/v1/messages", json=failing, headers=keyed("k"))
    assert code_of(refused) == code
    # Neither a replay of the refusal nor a conflict: the key is free for the fixed request.
    fixed = await client.post("/v1/messages", json=SEND, headers=keyed("k"))
    assert fixed.status_code == 201
    assert "idempotent-replayed" not in fixed.headers


async def test_a_malformed_body_is_400_even_with_a_used_key(client: httpx.AsyncClient) -> None:
    await client.post("/v1/messages", json=SEND, headers=keyed("k"))
    response = await client.post("/v1/messages", json={"to": ""}, headers=keyed("k"))
    assert code_of(response) == "VALIDATION_ERROR"


async def test_a_502_that_kept_a_job_is_replayed(client: httpx.AsyncClient, bed: TestBed) -> None:
    down = {"to": "+905550000003", "body": "x"}
    first = await client.post("/v1/messages", json=down, headers=keyed("k"))
    again = await client.post("/v1/messages", json=down, headers=keyed("k"))
    assert first.status_code == again.status_code == 502
    assert again.headers["idempotent-replayed"] == "true"
    assert error_of(again)["job_id"] == error_of(first)["job_id"]
    assert len(bed.outbox) == 1


async def test_quota_refusal_stores_nothing(live: LiveSetup, make_client: ClientFactory) -> None:
    await live.messenger.workspaces.set_monthly_quota(live.workspace.id, 0)
    client = await make_client(create_app(live.messenger), headers=bearer(live.api_key))
    assert code_of(await client.post("/v1/messages", json=SEND, headers=keyed("k"))) == (
        "QUOTA_EXCEEDED"
    )
    await live.messenger.workspaces.set_monthly_quota(live.workspace.id, 1)
    assert (await client.post("/v1/messages", json=SEND, headers=keyed("k"))).status_code == 201


@pytest.mark.parametrize("key", ["", " ", " lead", "trail ", "tab\tkey", "ü", "x" * 256])
async def test_a_malformed_key_is_400(client: httpx.AsyncClient, key: str) -> None:
    response = await client.post(
        "/v1/messages", json=SEND, headers={"Idempotency-Key": key.encode("latin-1")}
    )
    assert response.status_code == 400
    assert error_of(response)["details"] == [
        {
            "field": "Idempotency-Key",
            "message": "must be 1-255 printable ASCII characters, no space at the ends",
        }
    ]


@pytest.mark.parametrize("key", ["a", "x" * 255, "a b", "~!@#$%^&*()_+{}|:<>?"])
def test_well_formed_keys(key: str) -> None:
    assert check_idempotency_key(key) == key


def test_fingerprint_ignores_spacing_and_order_not_values() -> None:
    a = request_fingerprint("POST", "/v1/messages", {"a": 1, "b": [1, 2]})
    assert a == request_fingerprint("post", "/v1/messages", {"b": [1, 2], "a": 1})
    assert a != request_fingerprint("POST", "/v1/messages", {"a": 1, "b": [2, 1]})
    assert a != request_fingerprint("POST", "/v1/messages/bulk", {"a": 1, "b": [1, 2]})


# --------------------------------------------------------------------------- concurrency


async def test_of_concurrent_identical_requests_exactly_one_runs(
    live: LiveSetup, make_client: ClientFactory
) -> None:
    live.adapter.gate = asyncio.Event()
    client = await make_client(create_app(live.messenger), headers=bearer(live.api_key))
    first = asyncio.create_task(client.post("/v1/messages", json=SEND, headers=keyed("k")))
    await live.adapter.entered.wait()  # the first request is at the provider
    others = await asyncio.gather(
        *(client.post("/v1/messages", json=SEND, headers=keyed("k")) for _ in range(9))
    )
    assert {code_of(r) for r in others} == {"IDEMPOTENCY_IN_PROGRESS"}
    assert all(r.status_code == 409 for r in others)
    live.adapter.gate.set()
    winner = await first
    assert winner.status_code == 201
    replay = await client.post("/v1/messages", json=SEND, headers=keyed("k"))
    assert replay.content == winner.content
    assert len(live.adapter.submitted) == 1


async def test_another_body_while_in_flight_is_a_conflict(
    live: LiveSetup, make_client: ClientFactory
) -> None:
    live.adapter.gate = asyncio.Event()
    client = await make_client(create_app(live.messenger), headers=bearer(live.api_key))
    first = asyncio.create_task(client.post("/v1/messages", json=SEND, headers=keyed("k")))
    await live.adapter.entered.wait()
    other = await client.post("/v1/messages", json={**SEND, "body": "2"}, headers=keyed("k"))
    assert code_of(other) == "IDEMPOTENCY_CONFLICT"
    live.adapter.gate.set()
    assert (await first).status_code == 201


async def test_many_concurrent_identical_requests_send_once(
    client: httpx.AsyncClient, bed: TestBed
) -> None:
    responses = await asyncio.gather(
        *(client.post("/v1/messages", json=SEND, headers=keyed("k")) for _ in range(20))
    )
    ran = [r for r in responses if r.status_code == 201 and "idempotent-replayed" not in r.headers]
    assert len(ran) == 1
    for response in responses:
        assert response.status_code in (201, 409)
        if response.status_code == 201:
            assert response.json() == ran[0].json()
    assert len(bed.outbox) == 1


async def test_a_key_abandoned_in_flight_is_taken_over_after_a_while(
    live: LiveSetup, make_client: ClientFactory
) -> None:
    # A process that died before storing anything leaves its key in flight with no job bound:
    # nothing was sent, so retries are not refused forever.
    await claim_key(live, "k")
    client = await make_client(create_app(live.messenger), headers=bearer(live.api_key))
    assert code_of(await client.post("/v1/messages", json=SEND, headers=keyed("k"))) == (
        "IDEMPOTENCY_IN_PROGRESS"
    )
    live.clock.advance(timedelta(minutes=5))
    assert (await client.post("/v1/messages", json=SEND, headers=keyed("k"))).status_code == 201


async def test_of_concurrent_retries_of_an_abandoned_key_exactly_one_sends(
    live: LiveSetup, make_client: ClientFactory
) -> None:
    await claim_key(live, "k")
    live.clock.advance(timedelta(minutes=5))
    client = await make_client(create_app(live.messenger), headers=bearer(live.api_key))
    answers = await asyncio.gather(
        *(client.post("/v1/messages", json=SEND, headers=keyed("k")) for _ in range(8))
    )
    fresh = [a for a in answers if a.status_code == 201 and "idempotent-replayed" not in a.headers]
    assert len(fresh) == 1
    assert len(live.adapter.submitted) == 1
    others = {a.json().get("job_id") or code_of(a) for a in answers if a is not fresh[0]}
    assert others <= {fresh[0].json()["job_id"], "IDEMPOTENCY_IN_PROGRESS"}


async def test_a_key_bound_to_a_job_answers_with_it_even_after_the_in_flight_timeout(
    live: LiveSetup, make_client: ClientFactory
) -> None:
    # A process that died after its write-ahead: the key names the job, whose state answers.
    claim = await claim_key(live, "k")
    principal = await live.messenger.authenticate(live.api_key)
    sent = await live.messenger.send(principal, SEND, idempotency=claim)  # never "answered"
    client = await make_client(create_app(live.messenger), headers=bearer(live.api_key))
    for wait in (timedelta(0), timedelta(minutes=10), timedelta(hours=23)):
        live.clock.advance(wait)
        again = await client.post("/v1/messages", json=SEND, headers=keyed("k"))
        assert (again.status_code, again.json()["job_id"]) == (201, sent.job_id)
        assert again.headers["idempotent-replayed"] == "true"
    assert len(live.adapter.submitted) == 1
    live.clock.advance(timedelta(hours=1))  # past the key's 24 hours: a new request
    fresh = await client.post("/v1/messages", json=SEND, headers=keyed("k"))
    assert fresh.json()["job_id"] != sent.job_id
    assert len(live.adapter.submitted) == 2
