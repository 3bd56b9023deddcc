"""Text no database can keep, from clients and providers: a coded 4xx, or nothing for us.

PostgreSQL cannot store NUL, and no backend can encode a lone surrogate. Whatever a client
or a provider sends, the answer is the contract's: 404 for a job id or a report URL that
cannot exist, 400 naming the field for a request body, and ``200`` with ``matched: 0`` for
a report about a message id no message can have (docs/decisions.md). Each test runs on
SQLite and, when it is there, PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from _asgi_support import NORMAL, ClientFactory, bearer, code_of, error_of
from _sql_apps import BACKENDS, sql_testbed

from unified_messaging import Connection, MessageNotFound, ResourceNotFound
from unified_messaging.asgi import create_app
from unified_messaging.providers import InboundCallback
from unified_messaging.testing import TestBed

JSON = {"Content-Type": "application/json"}


@pytest.fixture(params=BACKENDS)
async def sql_bed(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TestBed]:
    async with sql_testbed(request.param, tmp_path) as bed:
        yield bed


@pytest.fixture
async def api(sql_bed: TestBed, make_client: ClientFactory) -> httpx.AsyncClient:
    app = create_app(sql_bed.messenger, mcp=False, worker=False)
    return await make_client(app, headers=bearer(sql_bed.api_key))


async def _connection(bed: TestBed, provider: str = "sms_a") -> Connection:
    connections = await bed.messenger.connections.list(bed.workspace.id)
    return next(c for c in connections if c.provider == provider)


async def _report_path(bed: TestBed) -> str:
    connection = await _connection(bed)
    return f"/v1/dlr/{connection.id}/{connection.dlr_token}"


async def _sent_message(api: httpx.AsyncClient) -> tuple[str, str]:
    """A job sent in test mode: its id and the simulator's provider message id."""
    job_id = (await api.post("/v1/messages", json={"to": NORMAL, "body": "x"})).json()["job_id"]
    record = (await api.get(f"/v1/messages/{job_id}")).json()
    return job_id, record["attempts"][0]["provider_message_id"]


# --------------------------------------------------------------------------- job ids


@pytest.mark.parametrize("job_id", ["msg_%00x", "%00", "msg_x%00"])
async def test_a_job_id_with_nul_is_message_not_found(api: httpx.AsyncClient, job_id: str) -> None:
    response = await api.get(f"/v1/messages/{job_id}")
    assert response.status_code == 404
    assert code_of(response) == "MESSAGE_NOT_FOUND"


async def test_a_job_id_no_store_could_hold_is_not_found_by_the_facade(sql_bed: TestBed) -> None:
    for job_id in ("msg_\x00", "msg_\ud800"):
        with pytest.raises(MessageNotFound):
            await sql_bed.messenger.get_message(sql_bed.principal, job_id)


# --------------------------------------------------------------------------- reports


@pytest.mark.parametrize("escaped_id", [r"\ud800", r"sim-\udfff-0", r"a\u0000b", r"\u0000"])
async def test_a_report_for_an_id_no_message_can_have_is_nothing_for_us(
    api: httpx.AsyncClient, sql_bed: TestBed, escaped_id: str
) -> None:
    body = '{"provider_message_id": "' + escaped_id + '", "status": "delivered"}'
    response = await api.post(await _report_path(sql_bed), content=body, headers=JSON)
    assert response.status_code == 200
    assert response.json() == {"received": 1, "matched": 0, "changed": 0}


async def test_a_report_with_unstorable_text_still_lands_with_that_text_replaced(
    api: httpx.AsyncClient, sql_bed: TestBed
) -> None:
    job_id, provider_message_id = await _sent_message(api)
    report = {"provider_message_id": provider_message_id, "status": "delivered"}
    body = json.dumps({**report, "provider_status": "DELIVRD\x00\ud800"})
    response = await api.post(await _report_path(sql_bed), content=body, headers=JSON)
    assert response.json() == {"received": 1, "matched": 1, "changed": 1}
    record = (await api.get(f"/v1/messages/{job_id}")).json()
    assert record["status"] == "delivered"
    assert record["dlr"]["provider_status"] == "DELIVRD\ufffd\ufffd"


async def test_one_unstorable_report_does_not_hold_up_the_rest_of_its_batch(
    api: httpx.AsyncClient, sql_bed: TestBed
) -> None:
    job_id, provider_message_id = await _sent_message(api)
    body = json.dumps(
        [
            {"provider_message_id": "x\x00", "status": "failed"},
            {"provider_message_id": provider_message_id, "status": "delivered"},
        ]
    )
    response = await api.post(await _report_path(sql_bed), content=body, headers=JSON)
    assert response.json() == {"received": 2, "matched": 1, "changed": 1}
    assert (await api.get(f"/v1/messages/{job_id}")).json()["status"] == "delivered"


@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize("part", ["connection_id", "token"])
async def test_a_report_url_with_nul_is_404(
    api: httpx.AsyncClient, sql_bed: TestBed, method: str, part: str
) -> None:
    connection = await _connection(sql_bed)
    connection_id, token = connection.id, connection.dlr_token
    if part == "connection_id":
        connection_id += "%00"
    else:
        token += "%00"
    response = await api.request(method, f"/v1/dlr/{connection_id}/{token}")
    assert response.status_code == 404
    assert code_of(response) == "NOT_FOUND"


async def test_a_host_routing_reports_itself_gets_not_found_for_unstorable_ids(
    sql_bed: TestBed,
) -> None:
    connection = await _connection(sql_bed)
    callback = InboundCallback(method="POST", headers={}, query={}, body=b"")
    for connection_id, token in [
        (connection.id + "\x00", connection.dlr_token),
        ("\ud800", connection.dlr_token),
        (connection.id, connection.dlr_token + "\ud800"),
    ]:
        with pytest.raises(ResourceNotFound):
            await sql_bed.messenger.reports.ingest(connection_id, token, callback)


async def test_a_handshake_on_a_connection_without_one_is_a_coded_403(
    api: httpx.AsyncClient, sql_bed: TestBed
) -> None:
    query = {"hub.mode": "subscribe", "hub.verify_token": "x", "hub.challenge": "42"}
    response = await api.get(await _report_path(sql_bed), params=query)
    assert response.status_code == 403
    assert response.headers["content-type"] == "application/json"
    assert code_of(response) == "FORBIDDEN"


# --------------------------------------------------------------------------- request bodies


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"to": NORMAL, "body": "a\x00b"}, "body"),
        ({"to": NORMAL + "\x00", "body": "x"}, "to"),
        ({"to": NORMAL, "body": "x", "sender": "AC\x00ME"}, "sender"),
        ({"to": NORMAL, "template": "order\x00"}, "template"),
        ({"to": NORMAL, "template": "order", "variables": {"name": "\x00"}}, "variables.name"),
    ],
)
async def test_nul_in_a_send_is_400_naming_the_field(
    api: httpx.AsyncClient, body: dict[str, object], field: str
) -> None:
    response = await api.post("/v1/messages", json=body)
    assert response.status_code == 400
    assert [d["field"] for d in error_of(response)["details"]] == [field]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "raw",
    [
        rb'{"to": "+905551234567", "body": "\ud800"}',
        rb'{"to": "+905551234567\udc00", "body": "x"}',
        rb'{"to": "+905551234567", "template": "t", "variables": {"\ud800": "x"}}',
    ],
)
async def test_a_lone_surrogate_in_a_send_is_400(api: httpx.AsyncClient, raw: bytes) -> None:
    response = await api.post("/v1/messages", content=raw, headers=JSON)
    assert response.status_code == 400
    assert code_of(response) == "VALIDATION_ERROR"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"items": [{"to": NORMAL, "body": "\x00"}]}, "items.0.body"),
        ({"items": [{"to": "\x00", "body": "x"}]}, "items.0.to"),
        ({"items": [{"to": NORMAL, "body": "x"}], "sender": "\x00"}, "sender"),
    ],
)
async def test_nul_in_a_bulk_is_400_naming_the_field(
    api: httpx.AsyncClient, body: dict[str, object], field: str
) -> None:
    response = await api.post("/v1/messages/bulk", json=body)
    assert response.status_code == 400
    assert [d["field"] for d in error_of(response)["details"]] == [field]  # type: ignore[union-attr]


@pytest.mark.parametrize("key", ["a\x00b", "\x00", "k\x7f"])
async def test_an_idempotency_key_with_a_control_character_is_400(
    api: httpx.AsyncClient, key: str
) -> None:
    headers = {"Idempotency-Key": key}
    response = await api.post("/v1/messages", json={"to": NORMAL, "body": "x"}, headers=headers)
    assert response.status_code == 400
    assert [d["field"] for d in error_of(response)["details"]] == ["Idempotency-Key"]  # type: ignore[union-attr]
