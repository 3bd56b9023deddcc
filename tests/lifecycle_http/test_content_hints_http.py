"""Commercial content hints over REST (D33) on SQLite and PostgreSQL: the REST app on a real
socket, the real NetGSM adapter against its loopback fake. ``POST /v1/messages?dry_run=true``
answers what the send would do and stores, sends and counts nothing; a workspace whose
content rules refuse answers a commercial SMS that misses something with 422
``COMMERCIAL_CONTENT_REFUSED`` (a bulk item fails alone) and never calls the provider; a
misspelt query parameter is a 400, never a real send."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from _sql_apps import BACKENDS, sql_store
from _support import bearer, serving
from fakes._server import serve
from fakes.netgsm import NetgsmFake

from unified_messaging import AsyncClient, CommercialContentRefused, Messenger, Vault
from unified_messaging.asgi import create_app
from unified_messaging.providers.netgsm import NetgsmAdapter

TO = "+905321110001"
BARE = "Kışa özel tüm ürünlerde %20 indirim!"
FULL = " ".join([BARE] * 4)
COMPLETE = (
    "KAMPANYA: Örnek Gıda A.Ş. kışa özel %20 indirim. Mersis 0123 4567 8901 2345. "
    "Listeden çıkmak için RET ORNEK yazıp 3338'e gönderin."
)


@dataclass
class Rig:
    messenger: Messenger
    client: httpx.AsyncClient
    key: str
    workspace_id: str
    netgsm: NetgsmFake
    url: str

    async def post(
        self, path: str, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> httpx.Response:
        return await self.client.post(
            path, json=body, headers={**bearer(self.key), **(headers or {})}
        )

    async def stored(self) -> list[Any]:
        listing = await self.client.get("/v1/messages", headers=bearer(self.key))
        data: list[Any] = listing.json()["data"]
        return data

    async def quota_used(self) -> int:
        return (await self.messenger.workspaces.quota_usage(self.workspace_id)).used


@contextlib.asynccontextmanager
async def rig(backend: str, directory: Path) -> AsyncIterator[Rig]:
    netgsm = NetgsmFake()
    async with sql_store(backend, directory) as store:
        messenger = Messenger(store, vault=Vault.generate(), live_adapters={"sms_a": NetgsmAdapter})
        async with (
            serve(netgsm.app) as netgsm_url,
            messenger,
            serving(create_app(messenger, worker=False), lifespan=False) as url,
            httpx.AsyncClient(base_url=url, timeout=10) as client,
        ):
            workspace = await messenger.workspaces.create("hints", recipient_limit=None)
            await messenger.connections.add(
                workspace.id, "sms_a", base_url=netgsm_url, default_sender="ACME",
                credentials={"usercode": netgsm.usercode, "password": netgsm.password},
            )  # fmt: skip
            await messenger.templates.set(
                workspace.id, "winter", "KAMPANYA {{ name }}, %20 indirim"
            )
            key = await messenger.keys.create(workspace.id, livemode=True)
            yield Rig(messenger, client, key.secret, workspace.id, netgsm, url)


async def refuse(r: Rig) -> None:
    await r.messenger.content.update_rules(
        r.workspace_id, trade_name="Örnek Gıda A.Ş.", mersis="0123-4567-8901-2345", refuse=True
    )


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_dry_run_answers_the_message_and_its_hints_and_sends_nothing(
    backend: str, tmp_path: Path
) -> None:
    async with rig(backend, tmp_path) as r:
        answer = await r.post(
            "/v1/messages?dry_run=true",
            {"to": "0532 111 00 01", "body": FULL, "category": "commercial"},
        )

        assert answer.status_code == 200, answer.text
        preview = answer.json()
        assert preview["dry_run"] is True
        assert (preview["to"], preview["provider"], preview["channel"]) == (TO, "sms_a", "sms")
        assert (preview["category"], preview["recipient_type"]) == ("commercial", "BIREYSEL")
        assert preview["text"] == FULL
        # 147 characters, 8 of them (ı, ş) 2 units in the Turkish shift table: 155 units,
        # one part as written; the operator's 5 characters make it two.
        assert preview["sms"]["encoding"] == "gsm7_turkish"
        assert (preview["sms"]["parts"], preview["sms"]["parts_with_operator_code"]) == (1, 2)
        assert [h["code"] for h in preview["hints"]] == [
            "OPT_OUT_MISSING", "BRAND_NOT_SET", "COMMERCIAL_TAG_MISSING"
        ]  # fmt: skip
        assert r.netgsm.received == []
        assert await r.stored() == []
        assert await r.quota_used() == 0


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_dry_run_renders_a_template_and_an_informational_one_has_no_hints(
    backend: str, tmp_path: Path
) -> None:
    async with rig(backend, tmp_path) as r:
        templated = await r.post("/v1/messages?dry_run=true", {
            "to": TO, "template": "winter", "variables": {"name": "Ayşe"},
            "category": "commercial"})  # fmt: skip
        informational = await r.post("/v1/messages?dry_run=true", {"to": TO, "body": BARE})

        assert templated.json()["text"] == "KAMPANYA Ayşe, %20 indirim"
        assert templated.json()["template"] == "winter"
        assert [h["code"] for h in templated.json()["hints"]] == [
            "OPT_OUT_MISSING",
            "BRAND_NOT_SET",
        ]
        assert informational.json()["category"] == "informational"
        assert informational.json()["hints"] == []
        assert r.netgsm.received == []


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_dry_run_refuses_what_the_send_would_refuse(backend: str, tmp_path: Path) -> None:
    async with rig(backend, tmp_path) as r:
        live = await r.messenger.principal(r.workspace_id, livemode=True)
        await r.messenger.suppressions.add(live, {"channel": "sms", "recipient": TO})

        suppressed = await r.post("/v1/messages?dry_run=true", {"to": TO, "body": "x"})
        no_template = await r.post("/v1/messages?dry_run=true", {"to": TO, "template": "nope"})
        bad_number = await r.post("/v1/messages?dry_run=true", {"to": "12ab", "body": "x"})
        missing = await r.post("/v1/messages?dry_run=true", {"to": "+905321110009",
                                                             "template": "winter"})  # fmt: skip

        assert (suppressed.status_code, suppressed.json()["error"]["code"]) == (
            422, "RECIPIENT_SUPPRESSED"
        )  # fmt: skip
        assert no_template.json()["error"]["code"] == "TEMPLATE_NOT_FOUND"
        assert bad_number.json()["error"]["code"] == "INVALID_RECIPIENT"
        assert missing.json()["error"]["code"] == "TEMPLATE_VARIABLE_MISSING"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_refusing_rules_refuse_an_incomplete_commercial_sms_before_the_provider(
    backend: str, tmp_path: Path
) -> None:
    async with rig(backend, tmp_path) as r:
        await refuse(r)

        refused = await r.post("/v1/messages", {"to": TO, "body": BARE, "category": "commercial"})
        preview = await r.post("/v1/messages?dry_run=true", {"to": TO, "body": BARE,
                                                             "category": "commercial"})  # fmt: skip
        complete = await r.post("/v1/messages", {"to": TO, "body": COMPLETE,
                                                 "category": "commercial"})  # fmt: skip
        informational = await r.post("/v1/messages", {"to": TO, "body": BARE})

        assert refused.status_code == 422, refused.text
        error = refused.json()["error"]
        assert error["code"] == "COMMERCIAL_CONTENT_REFUSED"
        assert [h["code"] for h in error["hints"]] == [
            "OPT_OUT_MISSING", "TRADE_NAME_MISSING", "MERSIS_MISSING", "COMMERCIAL_TAG_MISSING"
        ]  # fmt: skip
        assert all(h["message"] for h in error["hints"])
        assert preview.json() == refused.json()  # the dry run answers as the send
        assert (complete.status_code, complete.json()["status"]) == (201, "sent")
        assert informational.json()["status"] == "sent"  # informational: never checked
        assert [row.number[-10:] for row in r.netgsm.rows] == [TO[3:], TO[3:]]
        assert [s.json["iysfilter"] for s in r.netgsm.received] == ["11", "0"]  # type: ignore[index]
        assert len(await r.stored()) == 2
        assert await r.quota_used() == 2


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_refused_bulk_item_fails_alone(backend: str, tmp_path: Path) -> None:
    async with rig(backend, tmp_path) as r:
        await refuse(r)
        items = [{"to": TO, "body": COMPLETE}, {"to": "+905321110002", "body": BARE}]

        answer = await r.post("/v1/messages/bulk", {"items": items, "category": "commercial"})

        assert answer.status_code == 201, answer.text
        results = answer.json()["results"]
        assert [(x["status"], (x.get("error") or {}).get("code")) for x in results] == [
            ("sent", None), ("failed", "COMMERCIAL_CONTENT_REFUSED")
        ]  # fmt: skip
        assert [row.number[-10:] for row in r.netgsm.rows] == [TO[3:]]
        assert await r.quota_used() == 1


@pytest.mark.parametrize(
    "query",
    ["dryrun=true", "dry_run=yes", "dry_run=TRUE", "dry_run", "dry_run=true&dry_run=true",
     "dry_run=true&x=1"],
)  # fmt: skip
async def test_a_misspelt_query_is_a_400_and_never_a_send(query: str, tmp_path: Path) -> None:
    async with rig("sqlite", tmp_path) as r:
        answer = await r.post(f"/v1/messages?{query}", {"to": TO, "body": "x"})
        bulk = await r.post(f"/v1/messages/bulk?{query}", {"items": [{"to": TO, "body": "x"}]})

        assert (answer.status_code, answer.json()["error"]["code"]) == (400, "VALIDATION_ERROR")
        assert answer.json()["error"]["details"][0]["field"] in ("dryrun", "dry_run", "x")
        assert bulk.status_code == 400
        assert r.netgsm.received == []
        assert await r.stored() == []


async def test_dry_run_false_sends_and_a_bulk_takes_no_dry_run(tmp_path: Path) -> None:
    async with rig("sqlite", tmp_path) as r:
        sent = await r.post("/v1/messages?dry_run=false", {"to": TO, "body": "x"})
        bulk = await r.post("/v1/messages/bulk?dry_run=true", {"items": [{"to": TO, "body": "x"}]})

        assert (sent.status_code, sent.json()["status"]) == (201, "sent")
        assert bulk.status_code == 400
        assert "POST /v1/messages only" in bulk.json()["error"]["details"][0]["message"]
        assert len(r.netgsm.received) == 1


async def test_a_dry_run_claims_no_idempotency_key(tmp_path: Path) -> None:
    async with rig("sqlite", tmp_path) as r:
        key = {"Idempotency-Key": "order-1042"}
        body = {"to": TO, "body": "x"}

        previewed = await r.post("/v1/messages?dry_run=true", body, key)
        sent = await r.post("/v1/messages", body, key)
        replayed = await r.post("/v1/messages", body, key)
        malformed = await r.post("/v1/messages?dry_run=true", body, {"Idempotency-Key": "x" * 300})

        assert previewed.status_code == 200
        assert (sent.status_code, replayed.headers.get("Idempotent-Replayed")) == (201, "true")
        assert replayed.json()["job_id"] == sent.json()["job_id"]
        assert malformed.status_code == 400
        assert len(r.netgsm.received) == 1


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_async_client_previews_and_gets_the_refusal_with_its_hints(
    backend: str, tmp_path: Path
) -> None:
    async with rig(backend, tmp_path) as r, AsyncClient(r.url, r.key) as client:
        preview = await client.preview_send({"to": TO, "body": BARE, "category": "commercial"})
        await refuse(r)
        with pytest.raises(CommercialContentRefused) as refused:
            await client.send({"to": TO, "body": BARE, "category": "commercial"})
        with pytest.raises(CommercialContentRefused):
            await client.preview_send({"to": TO, "body": BARE, "category": "commercial"})

    assert preview.hints[0].code == "OPT_OUT_MISSING"
    assert preview.sms is not None and preview.sms.parts_with_operator_code == 1
    assert [hint.code for hint in refused.value.hints] == [
        "OPT_OUT_MISSING", "TRADE_NAME_MISSING", "MERSIS_MISSING", "COMMERCIAL_TAG_MISSING"
    ]  # fmt: skip
    assert refused.value.http_status == 422
    assert r.netgsm.received == []
