"""What was sent, and by whom: a message's text and the API key that sent it, over REST.

``GET /v1/messages/{job_id}``, the list and the webhook events show the text as handed to the
providers (a template's rendered), and the key's id and name. A workspace that hides live
text (personal data) shows ``******`` instead everywhere, also for the messages sent before;
test mode always shows its text. Real SQLite and PostgreSQL, a live provider faked at the
edge, a webhook receiver on loopback.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from _asgi_support import FakeLiveAdapter, bearer
from _sql_apps import BACKENDS, sql_store
from fakes._server import serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from unified_messaging import Connection, ManualClock, Messenger, Vault
from unified_messaging.asgi import create_app
from unified_messaging.providers import ProviderAdapter
from unified_messaging.webhooks._sender import TargetPolicy

HOSTILE = "Sipariş <script>alert('x')</script> & \"ok\" 'yes'\nikinci satır"


@dataclass
class World:
    messenger: Messenger
    http: httpx.AsyncClient
    test_http: httpx.AsyncClient
    workspace_id: str
    key_id: str
    hooks: list[dict[str, Any]]

    async def send(self, payload: Mapping[str, object], *, test: bool = False) -> str:
        answer = await (self.test_http if test else self.http).post("/v1/messages", json=payload)
        assert answer.status_code == 201, answer.text
        return str(answer.json()["job_id"])

    async def record(self, job_id: str, *, test: bool = False) -> dict[str, Any]:
        answer = await (self.test_http if test else self.http).get(f"/v1/messages/{job_id}")
        assert answer.status_code == 200, answer.text
        found: dict[str, Any] = answer.json()
        return found

    async def listed(self, *, test: bool = False) -> dict[str, dict[str, Any]]:
        answer = await (self.test_http if test else self.http).get("/v1/messages")
        assert answer.status_code == 200, answer.text
        return {item["job_id"]: item for item in answer.json()["data"]}

    async def delivered_events(self) -> list[dict[str, Any]]:
        await self.messenger.worker().run_until_idle()
        return self.hooks


@pytest.fixture(params=BACKENDS)
async def world(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[World]:
    adapter = FakeLiveAdapter()

    def live(connection: Connection, credentials: Mapping[str, str]) -> ProviderAdapter:
        return adapter  # type: ignore[return-value]

    hooks: list[dict[str, Any]] = []

    async def receive(request: Request) -> Response:
        hooks.append(json.loads(await request.body()))
        return Response(b"", 200)

    async with AsyncExitStack() as stack:
        store = await stack.enter_async_context(sql_store(request.param, tmp_path))
        messenger = Messenger(
            store, clock=ManualClock(), vault=Vault.generate(), live_adapters={"sms_a": live},
            webhook_policy=TargetPolicy(allow_private=True),
        )  # fmt: skip
        await stack.enter_async_context(messenger)
        workspace = await messenger.workspaces.create("shop", recipient_limit=None)
        await messenger.connections.add(
            workspace.id, "sms_a", credentials={"usercode": "u", "password": "p"},
            default_sender="ACME",
        )  # fmt: skip
        live_key = await messenger.keys.create(workspace.id, livemode=True, name="checkout")
        test_key = await messenger.keys.create(workspace.id, livemode=False, name="ci")
        receiver = Starlette(routes=[Route("/hook", receive, methods=["POST"])])
        hook_url = await stack.enter_async_context(serve(receiver))
        await messenger.webhooks.create(workspace.id, hook_url + "/hook")
        app = create_app(messenger, worker=False, mcp=False)
        transport = httpx.ASGITransport(app=app)
        http, test_http = [
            await stack.enter_async_context(
                httpx.AsyncClient(transport=transport, base_url="http://t", headers=bearer(key))
            )
            for key in (live_key.secret, test_key.secret)
        ]
        yield World(messenger, http, test_http, workspace.id, live_key.record.id, hooks)


async def test_a_message_shows_its_text_and_the_key_that_sent_it(world: World) -> None:
    job_id = await world.send({"to": "+905551234567", "body": HOSTILE})

    record = await world.record(job_id)
    assert record["body"] == HOSTILE
    assert record["api_key"] == {"id": world.key_id, "name": "checkout"}
    listed = (await world.listed())[job_id]
    assert (listed["body"], listed["api_key"]) == (HOSTILE, record["api_key"])
    event = next(h for h in await world.delivered_events() if h["data"]["job_id"] == job_id)
    assert (event["data"]["body"], event["data"]["api_key"]["name"]) == (HOSTILE, "checkout")


async def test_a_template_send_shows_the_text_its_variables_made(world: World) -> None:
    await world.messenger.templates.set(
        world.workspace_id, "order", "Merhaba {{ name }}, #{{ no }}"
    )
    job_id = await world.send(
        {"to": "+905551234567", "template": "order", "variables": {"name": "Ayşe", "no": 42}}
    )

    record = await world.record(job_id)
    assert (record["template_key"], record["body"]) == ("order", "Merhaba Ayşe, #42")


async def test_a_message_sent_without_a_key_names_none(world: World) -> None:
    principal = await world.messenger.principal(world.workspace_id, livemode=True)
    sent = await world.messenger.send(principal, {"to": "+905551234567", "body": "from a job"})

    record = await world.record(sent.job_id)
    assert (record["body"], record["api_key"]) == ("from a job", None)


async def test_a_bulk_item_refused_before_any_provider_still_names_its_key(world: World) -> None:
    answer = await world.http.post(
        "/v1/messages/bulk", json={"items": [{"to": "not a number", "body": "x"}]}
    )
    job_id = answer.json()["results"][0]["job_id"]

    record = await world.record(job_id)
    assert (record["status"], record["api_key"]["name"]) == ("failed", "checkout")


async def test_a_workspace_that_hides_live_text_shows_none_of_it(world: World) -> None:
    before = await world.send({"to": "+905551234567", "body": "sent while shown"})
    await world.messenger.workspaces.set_text_masking(world.workspace_id, True)
    after = await world.send({"to": "+905551234568", "body": "sent while hidden"})
    in_test = await world.send({"to": "+905551234569", "body": "a test message"}, test=True)

    for job_id in (before, after):
        assert (await world.record(job_id))["body"] == "******"
        assert (await world.listed())[job_id]["body"] == "******"
    assert (await world.record(after))["api_key"]["name"] == "checkout"  # who sent it: kept
    assert (await world.record(in_test, test=True))["body"] == "a test message"
    live_events = [h for h in await world.delivered_events() if h["data"]["livemode"]]
    assert {h["data"]["body"] for h in live_events if h["data"]["job_id"] == after} == {"******"}
    assert "sent while hidden" not in json.dumps(live_events)


async def test_showing_live_text_again_shows_every_message(world: World) -> None:
    await world.messenger.workspaces.set_text_masking(world.workspace_id, True)
    job_id = await world.send({"to": "+905551234567", "body": "Kargonuz yolda"})

    await world.messenger.workspaces.set_text_masking(world.workspace_id, False)

    assert (await world.record(job_id))["body"] == "Kargonuz yolda"


async def test_hiding_live_text_is_recorded_in_the_audit_log(world: World) -> None:
    await world.messenger.workspaces.set_text_masking(world.workspace_id, True)

    page = await world.messenger.audit.list(workspace_id=world.workspace_id)
    found = [e for e in page.data if e.action == "workspace.text_masking"]
    assert [(e.target, e.actor) for e in found] == [(world.workspace_id, "library")]


async def test_a_live_one_time_code_stays_masked_in_the_list(world: World) -> None:
    started = await world.http.post("/v1/verifications", json={"to": "+905551234567"})
    assert started.status_code == 201, started.text

    (message,) = (await world.listed()).values()
    assert "******" in message["body"]
    assert not any(ch.isdigit() for ch in message["body"].replace("******", ""))
