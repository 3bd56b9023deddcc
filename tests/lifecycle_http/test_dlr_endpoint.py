"""``/v1/dlr/{connection_id}/{token}`` over a real uvicorn socket, on a memory and a SQLite store.

The app runs without its worker: the only thing that moves a message here is a report POSTed
to the endpoint (the simulator's own report is planned an hour out, and the clock stands still).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from _support import (
    attempts_of,
    bearer,
    dlr_path,
    error_code,
    serving,
    sim_report,
)
from fakes import whatsapp
from fakes._server import serve
from fakes.whatsapp import WhatsAppFake

from unified_messaging import Connection, ManualClock, MessageRecord, Messenger, Vault
from unified_messaging.asgi import create_app
from unified_messaging.providers.simulator import SimulatorSettings
from unified_messaging.providers.whatsapp import signature_header
from unified_messaging.store.base import Store
from unified_messaging.store.memory import MemoryStore
from unified_messaging.store.sql import SqlStore
from unified_messaging.testing import TestBed, create_testbed

NORMAL = "+905551234567"


@dataclass
class World:
    bed: TestBed
    http: httpx.AsyncClient
    #: The default (``sms_a``) connection of the test workspace.
    connection: Connection

    @property
    def messenger(self) -> Messenger:
        return self.bed.messenger

    async def send(self, to: str = NORMAL) -> dict[str, Any]:
        response = await self.http.post(
            "/v1/messages", json={"to": to, "body": "Selam"}, headers=bearer(self.bed.api_key)
        )
        assert response.status_code == 201, response.text
        document: dict[str, Any] = response.json()
        return document

    async def get(self, job_id: str) -> dict[str, Any]:
        response = await self.http.get(f"/v1/messages/{job_id}", headers=bearer(self.bed.api_key))
        assert response.status_code == 200, response.text
        document: dict[str, Any] = response.json()
        return document

    async def stored(self, job_id: str) -> MessageRecord:
        record = await self.messenger.store.get_message(self.bed.workspace.id, False, job_id)
        assert record is not None
        return record

    async def post_report(self, body: bytes, path: str | None = None) -> httpx.Response:
        return await self.http.post(
            path or dlr_path(self.connection),
            content=body,
            headers={"content-type": "application/json"},
        )


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "memory":
        return MemoryStore()
    return SqlStore("sqlite+aiosqlite:///" + str(tmp_path / "dlr.db"))


@pytest.fixture
async def world(store: Store) -> AsyncIterator[World]:
    messenger = Messenger(
        store,
        clock=ManualClock(),
        vault=Vault.generate(),
        simulator_settings=SimulatorSettings(report_delay=timedelta(hours=1)),
    )
    try:
        bed = await create_testbed(messenger=messenger)
        connections = await messenger.connections.list(bed.workspace.id)
        sms_a = next(c for c in connections if c.provider == "sms_a")
        app = create_app(messenger, worker=False, mcp=False)
        async with (
            serving(app, lifespan=False) as base_url,
            httpx.AsyncClient(base_url=base_url) as http,
        ):
            yield World(bed, http, sms_a)
    finally:
        await messenger.aclose()


#: For behaviour the store plays no part in: one run, on the memory store.
memory_only = pytest.mark.parametrize("store", ["memory"], indirect=True)


def message_id(record: dict[str, Any]) -> str:
    value = record["attempts"][-1]["provider_message_id"]
    assert isinstance(value, str)
    return value


# --------------------------------------------------------------------------- the happy path


async def test_a_posted_report_makes_the_message_final(world: World) -> None:
    sent = await world.send()
    record = await world.get(sent["job_id"])
    assert record["status"] == "sent"
    assert record["dlr"] is None

    response = await world.post_report(sim_report(message_id(record), "delivered"))

    assert response.status_code == 200
    assert response.json() == {"received": 1, "matched": 1, "changed": 1}
    record = await world.get(sent["job_id"])
    assert record["status"] == "delivered"
    assert record["final_at"] is not None
    assert record["error"] is None
    assert record["dlr"]["status"] == "delivered"
    assert record["dlr"]["provider_status"] == "DELIVERED"
    assert record["dlr"]["received_at"] is not None
    assert attempts_of(record) == [("sms_a", "delivered", message_id(record), None)]


@memory_only
async def test_a_failed_report_keeps_its_provider_status_and_error(world: World) -> None:
    sent = await world.send()
    pmid = message_id(await world.get(sent["job_id"]))

    response = await world.post_report(sim_report(pmid, "failed", provider_status="UNDELIV-7"))

    assert response.json()["changed"] == 1
    record = await world.get(sent["job_id"])
    assert record["status"] == "failed"
    assert record["error"]["code"] == "RECIPIENT_UNREACHABLE"
    assert record["dlr"]["provider_status"] == "UNDELIV-7"
    assert attempts_of(record) == [("sms_a", "failed", pmid, "RECIPIENT_UNREACHABLE")]


@memory_only
async def test_a_list_of_reports_is_applied_in_one_request(world: World) -> None:
    first, second = await world.send(), await world.send("+905551234568")
    ids = [message_id(await world.get(s["job_id"])) for s in (first, second)]
    body = json.dumps(
        [
            {"provider_message_id": ids[0], "status": "delivered"},
            {"provider_message_id": ids[1], "status": "expired"},
            {"provider_message_id": "sim-sms_a-nobody-0", "status": "delivered"},
        ]
    ).encode()

    response = await world.post_report(body)

    assert response.json() == {"received": 3, "matched": 2, "changed": 2}
    assert (await world.get(first["job_id"]))["status"] == "delivered"
    assert (await world.get(second["job_id"]))["status"] == "expired"


# --------------------------------------------------------------------------- idempotency


async def test_twenty_concurrent_duplicates_change_the_message_once(world: World) -> None:
    sent = await world.send()
    pmid = message_id(await world.get(sent["job_id"]))
    before = await world.stored(sent["job_id"])
    body = sim_report(pmid, "delivered")

    responses = await asyncio.gather(*(world.post_report(body) for _ in range(20)))

    assert [r.status_code for r in responses] == [200] * 20
    assert sum(r.json()["changed"] for r in responses) == 1
    assert all(r.json()["matched"] == 1 for r in responses)
    after = await world.stored(sent["job_id"])
    assert after.version == before.version + 1
    assert after.status == "delivered"
    again = await world.post_report(body)
    assert again.json() == {"received": 1, "matched": 1, "changed": 0}
    assert (await world.stored(sent["job_id"])) == after


async def test_a_failed_report_after_delivered_changes_nothing(world: World) -> None:
    sent = await world.send()
    pmid = message_id(await world.get(sent["job_id"]))
    await world.post_report(sim_report(pmid, "delivered"))
    settled = await world.stored(sent["job_id"])

    late = await world.post_report(sim_report(pmid, "failed"))

    assert late.json() == {"received": 1, "matched": 1, "changed": 0}
    assert await world.stored(sent["job_id"]) == settled
    record = await world.get(sent["job_id"])
    assert record["status"] == "delivered"
    assert record["error"] is None
    assert attempts_of(record) == [("sms_a", "delivered", pmid, None)]


@memory_only
async def test_a_pending_report_changes_nothing(world: World) -> None:
    sent = await world.send()
    pmid = message_id(await world.get(sent["job_id"]))
    before = await world.stored(sent["job_id"])

    response = await world.post_report(sim_report(pmid, "pending"))

    assert response.json() == {"received": 1, "matched": 1, "changed": 0}
    assert await world.stored(sent["job_id"]) == before


async def test_a_report_for_an_unknown_message_id_is_200_and_matches_nothing(
    world: World,
) -> None:
    sent = await world.send()
    before = await world.stored(sent["job_id"])

    response = await world.post_report(sim_report("sim-sms_a-msg_doesnotexist-0", "failed"))

    assert response.status_code == 200
    assert response.json() == {"received": 1, "matched": 0, "changed": 0}
    assert await world.stored(sent["job_id"]) == before


@memory_only
async def test_a_report_on_another_connections_url_matches_nothing(world: World) -> None:
    sent = await world.send()
    pmid = message_id(await world.get(sent["job_id"]))
    connections = await world.messenger.connections.list(world.bed.workspace.id)
    sms_b = next(c for c in connections if c.provider == "sms_b")

    response = await world.post_report(sim_report(pmid, "failed"), dlr_path(sms_b))

    assert response.json() == {"received": 1, "matched": 0, "changed": 0}
    assert (await world.get(sent["job_id"]))["status"] == "sent"


# --------------------------------------------------------------------------- who may post


def _wrong_tokens(right: str) -> list[str]:
    last = "A" if right[-1] != "A" else "B"
    return [
        right[:-1] + last,  # differs only in the last character
        right[:-1],  # one character short
        right + "x",  # one character long
        right.upper() if right.upper() != right else right.lower(),
        "-",
        "%20",
        "%00",
        "%FF%FE",
        "şğüİı-Ω-😀",
        "' OR '1'='1",
        "x'; DROP TABLE messages; --",
        "%2e%2e",
        "A" * 10_000,
    ]


async def test_wrong_tokens_are_404_with_the_error_body_and_change_nothing(
    world: World,
) -> None:
    sent = await world.send()
    pmid = message_id(await world.get(sent["job_id"]))
    before = await world.stored(sent["job_id"])
    body = sim_report(pmid, "failed")

    for token in _wrong_tokens(world.connection.dlr_token):
        response = await world.post_report(body, dlr_path(world.connection, token))
        assert response.status_code == 404, (token[:40], response.text)
        error = response.json()["error"]
        assert error["code"] == "NOT_FOUND"
        assert "details" not in error
        assert world.connection.dlr_token not in response.text
        assert response.headers["x-request-id"]

    assert await world.stored(sent["job_id"]) == before


async def test_an_unknown_connection_is_the_same_404(world: World) -> None:
    sent = await world.send()
    pmid = message_id(await world.get(sent["job_id"]))
    before = await world.stored(sent["job_id"])
    body = sim_report(pmid, "failed")
    token = world.connection.dlr_token

    other_last = "y" if token.endswith("x") else "x"  # never the right token by chance
    wrong_token = token[:-1] + other_last
    wrong = await world.post_report(body, f"/v1/dlr/{world.connection.id}/{wrong_token}")
    for connection_id in ("conn_doesnotexist", "' OR 1=1 --", "ş" * 40, "c" * 10_000):
        response = await world.post_report(body, f"/v1/dlr/{connection_id}/{token}")
        assert response.status_code == 404
        assert response.json()["error"] == wrong.json()["error"]

    assert await world.stored(sent["job_id"]) == before


@memory_only
async def test_a_missing_token_is_404(world: World) -> None:
    response = await world.post_report(b"{}", f"/v1/dlr/{world.connection.id}/")
    assert response.status_code == 404
    assert response.json()["error"]["code"]


@memory_only
async def test_a_get_with_a_wrong_token_is_404(world: World) -> None:
    response = await world.http.get(dlr_path(world.connection, "nope"))
    assert response.status_code == 404
    assert error_code(response) == "NOT_FOUND"


# --------------------------------------------------------------------------- what may be posted


UNREADABLE_BODIES = [
    b"this is not json",
    b"\xff\xfe\x00garbage",
    b'{"provider_message_id": ',
    b'[1, "x", null, {}]',
    b"42",
    b'"delivered"',
    b"null",
    b"[" * 100_000 + b"]" * 100_000,
]

WRONG_FIELDS: list[dict[str, object]] = [
    {"status": "DELIVERED"},
    {"status": "read"},
    {"status": ""},
    {"status": None},
    {"status": ["delivered"]},
    {"provider_message_id": ""},
    {"provider_message_id": 12345},
    {"provider_message_id": None},
    {"provider_status": 7},
]


async def test_unreadable_bodies_are_400_and_change_nothing(world: World) -> None:
    sent = await world.send()
    before = await world.stored(sent["job_id"])

    for body in UNREADABLE_BODIES:
        response = await world.post_report(body)
        assert response.status_code == 400, (body[:30], response.text)
        assert error_code(response) == "VALIDATION_ERROR"

    assert await world.stored(sent["job_id"]) == before


@memory_only
async def test_reports_with_a_wrong_field_are_400_naming_it_and_change_nothing(
    world: World,
) -> None:
    sent = await world.send()
    pmid = message_id(await world.get(sent["job_id"]))
    before = await world.stored(sent["job_id"])

    for fields in WRONG_FIELDS:
        report: dict[str, object] = {"provider_message_id": pmid, "status": "failed", **fields}
        response = await world.post_report(json.dumps(report).encode())
        assert response.status_code == 400, (fields, response.text)
        error = response.json()["error"]
        assert error["code"] == "VALIDATION_ERROR"
        assert [d["field"] for d in error["details"]] == list(fields)

    assert await world.stored(sent["job_id"]) == before


@memory_only
async def test_one_bad_report_in_a_list_refuses_the_whole_list(world: World) -> None:
    sent = await world.send()
    pmid = message_id(await world.get(sent["job_id"]))
    before = await world.stored(sent["job_id"])
    body = json.dumps(
        [{"provider_message_id": pmid, "status": "delivered"}, {"status": "bogus"}]
    ).encode()

    response = await world.post_report(body)

    assert response.status_code == 400
    assert response.json()["error"]["details"][0]["field"].startswith("[1]")
    assert await world.stored(sent["job_id"]) == before


async def test_a_body_over_256_kib_is_413_and_changes_nothing(world: World) -> None:
    sent = await world.send()
    pmid = message_id(await world.get(sent["job_id"]))
    before = await world.stored(sent["job_id"])
    padding = "x" * (256 * 1024)
    body = sim_report(pmid, "failed", padding=padding)

    response = await world.post_report(body)

    assert response.status_code == 413
    assert error_code(response) == "PAYLOAD_TOO_LARGE"
    assert await world.stored(sent["job_id"]) == before


@memory_only
async def test_an_empty_body_is_200_with_no_reports(world: World) -> None:
    response = await world.post_report(b"")
    assert response.status_code == 200
    assert response.json() == {"received": 0, "matched": 0, "changed": 0}


# --------------------------------------------------------------------------- test vs live


@pytest.fixture
async def live_bizchat(world: World) -> AsyncIterator[tuple[Connection, str, str]]:
    """A live workspace with a ``bizchat`` connection on the WhatsApp fake: the connection, a
    live API key, and the job id of one live message the fake accepted."""
    fake = WhatsAppFake()
    messenger = world.messenger
    async with serve(fake.app) as fake_url:
        workspace = await messenger.workspaces.create("live workspace")
        connection = await messenger.connections.add(
            workspace.id,
            "bizchat",
            credentials={
                "access_token": whatsapp.ACCESS_TOKEN,
                "phone_number_id": whatsapp.PHONE_NUMBER_ID,
                "app_secret": whatsapp.APP_SECRET,
                "verify_token": "verify-me",
            },
            base_url=fake_url,
        )
        key = (await messenger.keys.create(workspace.id, livemode=True)).secret
        sent = await world.http.post(
            "/v1/messages", json={"to": "+905551112233", "body": "Selam"}, headers=bearer(key)
        )
        assert sent.status_code == 201, sent.text
        yield connection, key, sent.json()["job_id"]


async def test_a_simulator_report_never_touches_a_live_message(
    world: World, live_bizchat: tuple[Connection, str, str]
) -> None:
    connection, key, job_id = live_bizchat
    record = (await world.http.get(f"/v1/messages/{job_id}", headers=bearer(key))).json()
    assert record["livemode"] is True
    assert record["status"] == "sent"
    wamid = message_id(record)
    # Signed with the app secret, so the live adapter reads it, finds no WhatsApp payload,
    # and the simulator's format is tried: it applies to test-mode messages only.
    body = sim_report(wamid, "failed")
    headers = {
        "content-type": "application/json",
        "x-hub-signature-256": signature_header(body, whatsapp.APP_SECRET),
    }

    response = await world.http.post(dlr_path(connection), content=body, headers=headers)

    assert response.status_code == 200
    assert response.json() == {"received": 1, "matched": 0, "changed": 0}
    after = (await world.http.get(f"/v1/messages/{job_id}", headers=bearer(key))).json()
    assert after == record


@memory_only
async def test_a_test_key_cannot_read_the_live_message(
    world: World, live_bizchat: tuple[Connection, str, str]
) -> None:
    _, _, job_id = live_bizchat
    response = await world.http.get(f"/v1/messages/{job_id}", headers=bearer(world.bed.api_key))
    assert response.status_code == 404
    assert error_code(response) == "MESSAGE_NOT_FOUND"
