"""``send_at``, ``ignore_quiet_hours`` and the cancel endpoint against bad input,
through the REST app on SQLite and PostgreSQL: a malformed value is 400 naming the field, a
well-formed time out of range 422 ``SEND_AT_OUT_OF_RANGE``, never a 500; and the OpenAPI
document names the new fields and the endpoint."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest
from _asgi_support import NORMAL, ClientFactory, bearer, code_of, error_of
from _sql_apps import BACKENDS, sql_testbed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from unified_messaging.asgi import create_app
from unified_messaging.testing import TestBed

# One bed per backend for the module's examples: each request is a new message (no flood
# guard in this workspace), so they do not disturb each other.
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(params=BACKENDS)
async def bed(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TestBed]:
    async with sql_testbed(request.param, tmp_path) as bed:
        await bed.messenger.workspaces.set_recipient_limit(bed.workspace.id, None)
        yield bed


@pytest.fixture
async def api(bed: TestBed, make_client: ClientFactory) -> httpx.AsyncClient:
    app = create_app(bed.messenger, mcp=False, worker=False)
    return await make_client(app, headers=bearer(bed.api_key))


def send(**fields: Any) -> dict[str, Any]:
    return {"to": NORMAL, "body": "Hatırlatma", **fields}


@pytest.mark.parametrize(
    ("value", "status", "code"),
    [
        ("2026-01-01T09:00:00", 400, "VALIDATION_ERROR"),  # no offset
        ("2026-01-02", 400, "VALIDATION_ERROR"),  # a date, no time, no offset
        ("tomorrow", 400, "VALIDATION_ERROR"),
        ("", 400, "VALIDATION_ERROR"),
        ("2026-01-02T09:00:00+03:00" + " " * 40, 400, "VALIDATION_ERROR"),  # too long
        ("9" * 100_000, 400, "VALIDATION_ERROR"),  # huge
        ("2026-02-30T09:00:00Z", 400, "VALIDATION_ERROR"),  # no such day
        ("2026-01-02T09:00:00+25:00", 400, "VALIDATION_ERROR"),  # no such offset
        ("2026-01-02T09:00:00\u0000Z", 400, "VALIDATION_ERROR"),
        (1767340800, 400, "VALIDATION_ERROR"),  # seconds since 1970: not our format
        (True, 400, "VALIDATION_ERROR"),
        ({"at": "2026-01-02T09:00:00Z"}, 400, "VALIDATION_ERROR"),
        (["2026-01-02T09:00:00Z"], 400, "VALIDATION_ERROR"),
        ("2025-12-31T23:59:59Z", 422, "SEND_AT_OUT_OF_RANGE"),  # the bed's clock: 2026-01-01
        ("2026-02-01T00:00:01Z", 422, "SEND_AT_OUT_OF_RANGE"),  # 30 days and a second
    ],
)
async def test_a_bad_send_at_is_refused_with_its_code(
    api: httpx.AsyncClient, value: object, status: int, code: str
) -> None:
    single = await api.post("/v1/messages", json=send(send_at=value))
    bulk = await api.post("/v1/messages/bulk", json={"items": [send()], "send_at": value})

    for response in (single, bulk):
        assert (response.status_code, code_of(response)) == (status, code), response.text
    if status == 400:
        details = error_of(single)["details"]
        assert isinstance(details, list) and details[0]["field"] == "send_at"


@pytest.mark.parametrize("value", ["yes", 1, None, "true"])
async def test_ignore_quiet_hours_takes_a_json_boolean_only(
    api: httpx.AsyncClient, value: object
) -> None:
    response = await api.post("/v1/messages", json=send(ignore_quiet_hours=value))
    assert (response.status_code, code_of(response)) == (400, "VALIDATION_ERROR")


async def test_the_edges_of_the_window_are_accepted(api: httpx.AsyncClient, bed: TestBed) -> None:
    now = bed.clock.now()
    for moment in (now, now + timedelta(days=30)):
        for shown in (
            moment.isoformat(),
            moment.astimezone(timezone(timedelta(hours=3))).isoformat(),
        ):
            answer = await api.post("/v1/messages", json=send(send_at=shown))
            assert answer.status_code == 201, answer.text
            assert datetime.fromisoformat(answer.json()["send_at"]) == moment


@SETTINGS
@given(
    moment=st.datetimes(
        min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.timezones()
    )
)
async def test_any_aware_time_is_queued_in_the_window_and_422_outside(
    api: httpx.AsyncClient, bed: TestBed, moment: datetime
) -> None:
    now = bed.clock.now()
    response = await api.post("/v1/messages", json=send(send_at=moment.isoformat()))
    if now <= moment <= now + timedelta(days=30):
        assert (response.status_code, response.json()["status"]) == (201, "queued")
    else:
        assert (response.status_code, code_of(response)) == (422, "SEND_AT_OUT_OF_RANGE")


@SETTINGS
@given(value=st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=60),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                 max_size=3),
    max_leaves=6,
))  # fmt: skip
async def test_any_json_as_send_at_is_answered_never_500(
    api: httpx.AsyncClient, value: object
) -> None:
    body = json.dumps(send(send_at=value, ignore_quiet_hours=value), allow_nan=True)
    response = await api.post(
        "/v1/messages", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code in (201, 400, 422), response.text


@pytest.mark.parametrize("job_id", ["msg_%00x", "%00", "msg_x%00", "x" * 5000, "msg_nope"])
async def test_a_cancel_of_a_job_id_that_cannot_exist_is_404(
    api: httpx.AsyncClient, job_id: str
) -> None:
    response = await api.post(f"/v1/messages/{job_id}/cancel")
    assert (response.status_code, code_of(response)) == (404, "MESSAGE_NOT_FOUND")


async def test_a_cancel_needs_a_key_and_sees_only_its_own_mode(
    api: httpx.AsyncClient, bed: TestBed, make_client: ClientFactory
) -> None:
    waiting = await api.post("/v1/messages", json=send(send_at=bed.clock.now().isoformat()))
    job = waiting.json()["job_id"]
    app = create_app(bed.messenger, mcp=False, worker=False)
    anonymous = await make_client(app)
    live = await bed.messenger.keys.create(bed.workspace.id, livemode=True)
    other_mode = await make_client(app, headers=bearer(live.secret))

    assert (await anonymous.post(f"/v1/messages/{job}/cancel")).status_code == 401
    assert (await other_mode.post(f"/v1/messages/{job}/cancel")).status_code == 404
    assert (await api.get(f"/v1/messages/{job}/cancel")).status_code == 405
    canceled = await api.post(f"/v1/messages/{job}/cancel")
    assert (canceled.status_code, canceled.json()["error"]["code"]) == (200, "CANCELED")


async def test_the_openapi_document_names_send_at_and_the_cancel_endpoint(
    api: httpx.AsyncClient,
) -> None:
    document = (await api.get("/v1/openapi.json")).json()
    schemas = document["components"]["schemas"]

    for model in ("SendRequest", "BulkRequest", "BulkItem"):
        assert "send_at" in schemas[model]["properties"], model
    for model in ("SendRequest", "BulkRequest"):
        assert "ignore_quiet_hours" in schemas[model]["properties"], model
    for model in ("SendResponse", "BulkResult", "StatusRecord"):
        assert "send_at" in schemas[model]["properties"], model
    cancel = document["paths"]["/v1/messages/{job_id}/cancel"]["post"]
    assert cancel["operationId"] == "cancelMessage"
    assert set(cancel["responses"]) >= {"200", "404", "409"}
    conflict = json.dumps(cancel["responses"]["409"])
    assert "MESSAGE_NOT_CANCELABLE" in conflict
    send_422 = json.dumps(document["paths"]["/v1/messages"]["post"]["responses"]["422"])
    assert "SEND_AT_OUT_OF_RANGE" in send_422
    assert UTC  # the module's times are aware
