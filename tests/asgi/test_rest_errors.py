"""The core's errors over HTTP (D13, D14): each status and code the REST edge can answer, the
isolation of workspaces and modes, and what is never said (no internals, no secrets)."""

from __future__ import annotations

import logging

import httpx
import pytest
from _asgi_support import NORMAL, ClientFactory, LiveSetup, bearer, code_of, error_of

from unified_messaging import Messenger, StorageUnavailable
from unified_messaging.asgi import create_app
from unified_messaging.store.memory import MemoryStore
from unified_messaging.testing import TestBed

# --------------------------------------------------------------------------- 404


async def test_provider_not_connected_is_404(bed: TestBed, make_client: ClientFactory) -> None:
    workspace = await bed.messenger.workspaces.create("sms only")
    await bed.messenger.connections.add(workspace.id, "sms_a", default_sender="ACME")
    key = await bed.messenger.keys.create(workspace.id)
    client = await make_client(create_app(bed.messenger), headers=bearer(key.secret))
    response = await client.post(
        "/v1/messages", json={"to": NORMAL, "body": "x", "provider": "sms_b"}
    )
    assert response.status_code == 404
    assert code_of(response) == "PROVIDER_NOT_CONNECTED"
    response = await client.post(
        "/v1/messages/bulk",
        json={"items": [{"to": NORMAL, "body": "x"}], "fallback": ["sms_c"]},
    )
    assert code_of(response) == "PROVIDER_NOT_CONNECTED"


async def test_template_not_found_is_404(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/messages", json={"to": NORMAL, "template": "nope"})
    assert response.status_code == 404
    assert code_of(response) == "TEMPLATE_NOT_FOUND"


async def test_message_not_found_is_404(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/messages/msg_00000000000000000000000000")
    assert response.status_code == 404
    assert code_of(response) == "MESSAGE_NOT_FOUND"


async def test_another_workspaces_message_is_404(
    client: httpx.AsyncClient, bed: TestBed, make_client: ClientFactory
) -> None:
    job_id = (await client.post("/v1/messages", json={"to": NORMAL, "body": "x"})).json()["job_id"]
    other = await bed.messenger.workspaces.create("other")
    key = await bed.messenger.keys.create(other.id)
    stranger = await make_client(create_app(bed.messenger), headers=bearer(key.secret))
    response = await stranger.get(f"/v1/messages/{job_id}")
    assert response.status_code == 404
    assert code_of(response) == "MESSAGE_NOT_FOUND"


async def test_live_and_test_jobs_are_invisible_to_each_other(
    live: LiveSetup, make_client: ClientFactory
) -> None:
    test_key = await live.messenger.keys.create(live.workspace.id, livemode=False)
    app = create_app(live.messenger)
    live_client = await make_client(app, headers=bearer(live.api_key))
    test_client = await make_client(app, headers=bearer(test_key.secret))
    live_job = (await live_client.post("/v1/messages", json={"to": NORMAL, "body": "x"})).json()
    test_job = (await test_client.post("/v1/messages", json={"to": NORMAL, "body": "x"})).json()
    assert len(live.adapter.submitted) == 1  # the test send went to the simulator
    for client, own, other in [
        (live_client, live_job, test_job),
        (test_client, test_job, live_job),
    ]:
        assert (await client.get(f"/v1/messages/{own['job_id']}")).status_code == 200
        response = await client.get(f"/v1/messages/{other['job_id']}")
        assert response.status_code == 404
        assert code_of(response) == "MESSAGE_NOT_FOUND"


async def test_live_send_over_a_connection_without_credentials_is_422(
    bed: TestBed, make_client: ClientFactory
) -> None:
    # The testbed's connections have no credentials: they serve test keys only.
    live_key = await bed.messenger.keys.create(bed.workspace.id, livemode=True)
    client = await make_client(create_app(bed.messenger), headers=bearer(live_key.secret))
    for path, body in [
        ("/v1/messages", {"to": NORMAL, "body": "x"}),
        ("/v1/messages/bulk", {"items": [{"to": NORMAL, "body": "x"}]}),
    ]:
        response = await client.post(path, json=body)
        assert response.status_code == 422
        assert code_of(response) == "INVALID_CREDENTIALS"


# --------------------------------------------------------------------------- 422


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"to": "+1 202 555 0100", "body": "x"}, "INVALID_RECIPIENT"),
        ({"to": "0212 555 12 12", "body": "x"}, "INVALID_RECIPIENT"),  # a landline
        ({"to": "0", "body": "x", "provider": "chatbot"}, "CHAT_UNREACHABLE"),
        ({"to": NORMAL, "body": "x", "sender": "NOPE"}, "SENDER_NOT_APPROVED"),
        ({"to": NORMAL, "body": "x", "provider": "chatbot", "fallback": ["sms_b"]},
         "FALLBACK_NOT_ALLOWED"),
        ({"to": NORMAL, "template": "greet"}, "TEMPLATE_VARIABLE_MISSING"),
        ({"to": NORMAL, "template": "greet", "variables": {"name": "x" * 1600}}, "BODY_TOO_LONG"),
    ],
)  # fmt: skip
async def test_unprocessable_requests_are_422(
    client: httpx.AsyncClient, bed: TestBed, body: dict[str, object], code: str
) -> None:
    await bed.messenger.templates.set(bed.workspace.id, "greet", "Merhaba {{ name }}")
    response = await client.post("/v1/messages", json=body)
    assert response.status_code == 422
    assert code_of(response) == code
    assert response.headers["ratelimit-limit"]


async def test_sender_required_is_422(bed: TestBed, make_client: ClientFactory) -> None:
    workspace = await bed.messenger.workspaces.create("no default sender")
    await bed.messenger.connections.add(workspace.id, "sms_a")
    key = await bed.messenger.keys.create(workspace.id)
    client = await make_client(create_app(bed.messenger), headers=bearer(key.secret))
    response = await client.post("/v1/messages", json={"to": NORMAL, "body": "x"})
    assert response.status_code == 422
    assert code_of(response) == "SENDER_REQUIRED"
    response = await client.post("/v1/messages/bulk", json={"items": [{"to": NORMAL, "body": "x"}]})
    assert code_of(response) == "SENDER_REQUIRED"


async def test_a_201_may_carry_a_failed_status(client: httpx.AsyncClient) -> None:
    # SPEC §7: commercial SMS without consent comes back as a 201 with status failed.
    response = await client.post("/v1/messages", json={"to": "+905550000002", "body": "x"})
    assert response.status_code == 201
    assert response.json()["status"] == "failed"
    assert response.json()["error"]["code"] == "IYS_CONSENT_MISSING"


# --------------------------------------------------------------------------- 429 quota


async def test_quota_exceeded_is_429_with_the_rate_limit_fields(
    live: LiveSetup, make_client: ClientFactory
) -> None:
    await live.messenger.workspaces.set_monthly_quota(live.workspace.id, 1)
    client = await make_client(create_app(live.messenger), headers=bearer(live.api_key))
    assert (await client.post("/v1/messages", json={"to": NORMAL, "body": "x"})).status_code == 201
    response = await client.post("/v1/messages", json={"to": NORMAL, "body": "x"})
    assert response.status_code == 429
    assert code_of(response) == "QUOTA_EXCEEDED"
    assert response.headers["ratelimit-remaining"] == "98"
    assert "retry-after" not in response.headers
    assert len(live.adapter.submitted) == 1


async def test_quota_is_checked_after_validation(
    live: LiveSetup, make_client: ClientFactory
) -> None:
    await live.messenger.workspaces.set_monthly_quota(live.workspace.id, 0)
    client = await make_client(create_app(live.messenger), headers=bearer(live.api_key))
    assert (await client.post("/v1/messages", json={"to": NORMAL})).status_code == 400
    assert (await client.post("/v1/messages", json={"to": "x", "body": "x"})).status_code == 422
    assert (await client.post("/v1/messages", json={"to": NORMAL, "body": "x"})).status_code == 429


# --------------------------------------------------------------------------- 5xx


async def test_no_provider_reachable_is_502_naming_the_kept_job(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/messages", json={"to": "+905550000003", "body": "x"})
    assert response.status_code == 502
    error = error_of(response)
    assert error["code"] == "PROVIDER_UNAVAILABLE"
    record = (await client.get(f"/v1/messages/{error['job_id']}")).json()
    assert record["status"] == "failed"
    assert record["error"]["code"] == "PROVIDER_UNAVAILABLE"


class UnreachableStore(MemoryStore):
    """A store whose database went away after the keys were made."""

    down = False

    async def find_api_key(self, key_hash: str):  # type: ignore[no-untyped-def]
        if self.down:
            raise StorageUnavailable("could not connect to /var/lib/um/secret.db")
        return await super().find_api_key(key_hash)

    async def get_message(self, workspace_id: str, livemode: bool, job_id: str):  # type: ignore[no-untyped-def]
        raise StorageUnavailable("could not connect to /var/lib/um/secret.db")


async def test_storage_unavailable_is_503_without_internals(make_client: ClientFactory) -> None:
    store = UnreachableStore()
    messenger = Messenger(store)
    workspace = await messenger.workspaces.create("w")
    key = await messenger.keys.create(workspace.id)
    client = await make_client(create_app(messenger), headers=bearer(key.secret))
    response = await client.get("/v1/messages/msg_1")
    assert response.status_code == 503
    assert error_of(response) == {
        "code": "STORAGE_UNAVAILABLE",
        "message": "The message store is unavailable.",
    }
    assert response.headers["ratelimit-limit"] == "100"  # after the rate-limit check
    store.down = True
    response = await client.post("/v1/messages", json={"to": NORMAL, "body": "x"})
    assert response.status_code == 503  # before it: authentication needs the store
    assert "ratelimit-limit" not in response.headers
    assert "secret.db" not in response.text


# --------------------------------------------------------------------------- secrets


async def test_no_api_key_in_any_response_or_log_line(
    client: httpx.AsyncClient,
    bed: TestBed,
    make_client: ClientFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    revoked = await bed.messenger.keys.create(bed.workspace.id)
    await bed.messenger.keys.revoke(revoked.record.id)
    revoked_client = await make_client(create_app(bed.messenger), headers=bearer(revoked.secret))
    with caplog.at_level(logging.DEBUG):
        responses = [
            await client.post("/v1/messages", json={"to": NORMAL, "body": bed.api_key[:20]}),
            await client.post("/v1/messages", json={"to": NORMAL, "body": "x", "k": 1}),
            await client.post("/v1/messages", json={"to": "+905550000003", "body": "x"}),
            await client.get("/v1/messages/none"),
            await client.post("/v1/messages", content=b"{", headers={"Content-Type": "text/x"}),
            await revoked_client.post("/v1/messages", json={"to": NORMAL, "body": "x"}),
            await revoked_client.get("/v1/health"),
        ]
    for secret in (bed.api_key, revoked.secret):
        for response in responses:
            assert secret not in response.text
            assert all(secret not in value for value in response.headers.values())
        assert secret not in caplog.text
