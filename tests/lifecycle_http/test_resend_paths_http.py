"""What the worker hands over again (a D27 send slot, a D7 retry, a D6 fallback) is what the
submit handed over: the REST app on a real socket, the real WhatsApp and NetGSM adapters
against their loopback fakes, and a ManualClock the sends' waits move forward.

A ``bizchat`` template message re-sent as its rendered text would be refused by WhatsApp
outside the 24-hour window (131047): every re-send must carry the template (``job_for``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx
from _support import bearer, serving
from fakes import whatsapp
from fakes._server import serve
from fakes.whatsapp import WhatsAppFake

from unified_messaging import ManualClock, Messenger, Vault
from unified_messaging.asgi import create_app

#: Never wrote to the business: free text to it is refused (131047), a template is not.
OUT_OF_WINDOW = "+90555999{:04d}"


@dataclass
class Rig:
    messenger: Messenger
    clock: ManualClock
    client: httpx.AsyncClient
    url: str
    key: str
    fake: WhatsAppFake

    async def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        return await self.client.post(f"{self.url}{path}", json=body, headers=bearer(self.key))

    async def record(self, job_id: str) -> dict[str, Any]:
        response = await self.client.get(f"{self.url}/v1/messages/{job_id}",
                                         headers=bearer(self.key))  # fmt: skip
        document: dict[str, Any] = response.json()
        return document

    async def work(self, *, until: datetime) -> None:
        """Run the worker, moving the clock in 0.1 s steps to ``until``."""
        worker = self.messenger.worker(batch=1)
        while True:
            await worker.run_until_idle()
            if self.clock.now() >= until:
                return
            self.clock.advance(0.1)

    def sent_types(self) -> list[str]:
        return [
            str(r.json["type"])  # type: ignore[index]
            for r in self.fake.received
            if r.path.endswith("/messages") and isinstance(r.json, dict)
        ]


@contextlib.asynccontextmanager
async def bizchat_rig(**rates: object) -> AsyncIterator[Rig]:
    clock = ManualClock()

    async def sleep(seconds: float) -> None:
        clock.advance(seconds)

    fake = WhatsAppFake()
    messenger = Messenger(clock=clock, vault=Vault.generate(), pace_sleep=sleep)
    async with (
        serve(fake.app) as graph,
        messenger,
        serving(create_app(messenger, worker=False), lifespan=False) as url,
        httpx.AsyncClient(timeout=10) as client,
    ):
        workspace = await messenger.workspaces.create("templated", recipient_limit=None)
        await messenger.connections.add(
            workspace.id, "bizchat", base_url=graph, **rates,  # type: ignore[arg-type]
            credentials={"access_token": whatsapp.ACCESS_TOKEN,
                         "phone_number_id": whatsapp.PHONE_NUMBER_ID,
                         "app_secret": whatsapp.APP_SECRET, "verify_token": "vt-1"},
        )  # fmt: skip
        await messenger.templates.set(
            workspace.id, "order", "Siparişiniz {{ code }} {{ when }} hazır.",
            provider_template="order_ready", provider_language="tr",
        )  # fmt: skip
        key = await messenger.keys.create(workspace.id, livemode=True)
        yield Rig(messenger, clock, client, url, key.secret, fake)


async def test_a_template_send_the_rate_kept_back_goes_out_as_the_template() -> None:
    async with bizchat_rig(max_rate=2) as r:
        start = r.clock.now()
        items = [{"to": OUT_OF_WINDOW.format(i), "variables": {"code": f"A{i}", "when": "bugün"}}
                 for i in range(10)]  # fmt: skip
        answer = await r.post("/v1/messages/bulk", {"template": "order", "items": items})

        assert answer.status_code == 201, answer.text
        results = answer.json()["results"]
        assert [item["status"] for item in results] == ["sent"] * 5 + ["queued"] * 5

        await r.work(until=start + timedelta(seconds=6))

        for item in results:
            record = await r.record(item["job_id"])
            assert record["status"] == "sent", record
        assert r.sent_types() == ["template"] * 10
        last = r.fake.received[-1].json
        assert last["template"] == {  # type: ignore[index]
            "name": "order_ready",
            "language": {"code": "tr"},
            "components": [
                {"type": "body", "parameters": [{"type": "text", "text": "A9"},
                                                {"type": "text", "text": "bugün"}]},
            ],
        }  # fmt: skip


async def test_a_template_send_retried_after_the_provider_was_down_is_the_template() -> None:
    async with bizchat_rig() as r:
        workspace_id = (await r.messenger.workspaces.list())[0].id
        await r.messenger.workspaces.set_retry_unavailable(workspace_id, True)
        r.fake.script(whatsapp.graph_error(503, 2, "Service temporarily unavailable"))
        start = r.clock.now()
        body = {"to": OUT_OF_WINDOW.format(1), "template": "order",
                "variables": {"code": "B7", "when": "yarın"}}  # fmt: skip
        answer = await r.post("/v1/messages", body)
        assert (answer.status_code, answer.json()["status"]) == (201, "queued"), answer.text

        await r.work(until=start + timedelta(seconds=30))

        record = await r.record(answer.json()["job_id"])
        assert record["status"] == "sent", record
        assert r.sent_types() == ["template", "template"]
