"""The hand-over gate's consent check, policy ``local`` (D33, D35),
end to end on SQLite and PostgreSQL: the REST app on a real socket, the real NetGSM
and Verimor adapters against their loopback fakes, the worker run step by step on a
ManualClock. A commercial message reaches a provider only when its recipient has an ONAY on
record for MESAJ and its recipient type; any other ends ``failed`` ``IYS_CONSENT_MISSING``
(201) with no provider call, on every path: single, bulk, scheduled, fallback hop."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from _sql_apps import BACKENDS, sql_store
from _support import bearer, serving
from fakes._server import serve
from fakes.netgsm import NetgsmFake
from fakes.verimor import FakeVerimor

from unified_messaging import ManualClock, Messenger, Vault
from unified_messaging.asgi import create_app
from unified_messaging.providers.netgsm import NetgsmAdapter
from unified_messaging.providers.verimor import VerimorAdapter

ONAY = "+905321110001"
ONAY_THEN_RET = "+905321110002"
NOBODY = "+905321110003"
TACIR_ONLY = "+905321110004"
NETGSM_REJECTED = 11


@dataclass
class Rig:
    messenger: Messenger
    clock: ManualClock
    client: httpx.AsyncClient
    key: str
    workspace_id: str
    netgsm: NetgsmFake
    verimor: FakeVerimor

    async def consent(self, recipient: str, status: str, recipient_type: str = "BIREYSEL") -> None:
        body: dict[str, Any] = {"recipient": recipient, "status": status}
        if recipient_type == "TACIR":
            body["recipient_type"] = "TACIR"
        else:
            body["source"] = "HS_WEB"
        answer = await self.client.post("/v1/consents", json=body, headers=bearer(self.key))
        assert answer.status_code == 201, answer.text
        self.clock.advance(1)  # İYS's dates are to the second: a change comes after

    async def send(self, **request: Any) -> httpx.Response:
        body = {"body": "Kampanya: %20 indirim", "category": "commercial", **request}
        return await self.client.post("/v1/messages", json=body, headers=bearer(self.key))

    async def record(self, job_id: str) -> dict[str, Any]:
        response = await self.client.get(f"/v1/messages/{job_id}", headers=bearer(self.key))
        assert response.status_code == 200, response.text
        document: dict[str, Any] = response.json()
        return document

    async def work(self, *, until: datetime, step: float = 10) -> None:
        """Run the worker, moving the clock in ``step`` seconds to ``until``."""
        worker = self.messenger.worker(batch=5)
        while True:
            await worker.run_until_idle()
            left = (until - self.clock.now()).total_seconds()
            if left <= 0:
                return
            self.clock.advance(min(step, left))

    def netgsm_numbers(self) -> list[str]:
        return ["+90" + row.number[-10:] for row in self.netgsm.rows]

    async def quota_used(self) -> int:
        return (await self.messenger.workspaces.quota_usage(self.workspace_id)).used


@contextlib.asynccontextmanager
async def rig(backend: str, directory: Path, *, policy: str | None = "local") -> AsyncIterator[Rig]:
    clock = ManualClock(datetime.now(UTC).replace(microsecond=0))
    netgsm, verimor = NetgsmFake(), FakeVerimor()
    adapters = {"sms_a": NetgsmAdapter, "sms_c": VerimorAdapter}
    async with sql_store(backend, directory) as store:
        messenger = Messenger(store, clock=clock, vault=Vault.generate(), live_adapters=adapters)
        async with (
            serve(netgsm.app) as netgsm_url,
            serve(verimor.app) as verimor_url,
            messenger,
            serving(create_app(messenger, worker=False), lifespan=False) as url,
            httpx.AsyncClient(base_url=url, timeout=10) as client,
        ):
            workspace = await messenger.workspaces.create("gate", recipient_limit=None)
            await messenger.connections.add(
                workspace.id, "sms_a", base_url=netgsm_url, default_sender="ACME",
                credentials={"usercode": netgsm.usercode, "password": netgsm.password},
            )  # fmt: skip
            await messenger.connections.add(
                workspace.id, "sms_c", base_url=verimor_url, default_sender="UMTEST",
                credentials={"username": verimor.username, "password": verimor.password},
            )  # fmt: skip
            if policy is not None:
                await messenger.consents.set_policy(workspace.id, policy)  # type: ignore[arg-type]
            key = await messenger.keys.create(workspace.id, livemode=True)
            yield Rig(messenger, clock, client, key.secret, workspace.id, netgsm, verimor)


async def _list_of_four(r: Rig) -> None:
    await r.consent(ONAY, "ONAY")
    await r.consent(ONAY_THEN_RET, "ONAY")
    await r.consent(ONAY_THEN_RET, "RET")
    await r.consent(TACIR_ONLY, "ONAY", recipient_type="TACIR")


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_commercial_bulk_reaches_the_provider_only_for_recipients_with_onay(
    backend: str, tmp_path: Path
) -> None:
    async with rig(backend, tmp_path) as r:
        await _list_of_four(r)
        items = [{"to": to, "body": "Kampanya"} for to in (ONAY, ONAY_THEN_RET, NOBODY, TACIR_ONLY)]

        answer = await r.client.post(
            "/v1/messages/bulk",
            json={"items": items, "category": "commercial"},
            headers=bearer(r.key),
        )

        assert answer.status_code == 201, answer.text
        results = answer.json()["results"]
        assert [(x["status"], (x.get("error") or {}).get("code")) for x in results] == [
            ("sent", None),
            ("failed", "IYS_CONSENT_MISSING"),
            ("failed", "IYS_CONSENT_MISSING"),
            ("failed", "IYS_CONSENT_MISSING"),
        ]
        assert r.netgsm_numbers() == [ONAY]  # one provider row: credit spent on ONAY only
        assert r.verimor.sends() == []
        refused = await r.record(results[2]["job_id"])
        assert (refused["status"], refused["attempts"]) == ("failed", [])
        assert await r.quota_used() == 1


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_single_commercial_send_without_onay_is_201_failed_with_no_provider_call(
    backend: str, tmp_path: Path
) -> None:
    async with rig(backend, tmp_path) as r:
        await _list_of_four(r)

        refused = await r.send(to=NOBODY)
        merchant = await r.send(to=TACIR_ONLY, recipient_type="TACIR")

        assert refused.status_code == 201, refused.text
        assert (refused.json()["status"], refused.json()["error"]["code"]) == (
            "failed", "IYS_CONSENT_MISSING"
        )  # fmt: skip
        assert merchant.json()["status"] == "sent"  # the TACIR record answers a TACIR send
        assert r.netgsm_numbers() == [TACIR_ONLY]
        assert [s.json["iysfilter"] for s in r.netgsm.sends] == ["12"]  # type: ignore[index]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_informational_messages_are_never_checked(backend: str, tmp_path: Path) -> None:
    async with rig(backend, tmp_path) as r:
        await _list_of_four(r)

        answers = [await r.send(to=to, category="informational") for to in (ONAY_THEN_RET, NOBODY)]

        assert [a.json()["status"] for a in answers] == ["sent", "sent"]
        assert r.netgsm_numbers() == [ONAY_THEN_RET, NOBODY]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_with_the_policy_off_the_provider_decides_as_before(
    backend: str, tmp_path: Path
) -> None:
    async with rig(backend, tmp_path, policy=None) as r:
        await _list_of_four(r)

        answer = await r.send(to=NOBODY)

        assert answer.json()["status"] == "sent"
        assert r.netgsm_numbers() == [NOBODY]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_scheduled_send_is_checked_when_it_is_handed_over(
    backend: str, tmp_path: Path
) -> None:
    async with rig(backend, tmp_path) as r:
        await r.consent(ONAY, "ONAY")
        await r.consent(ONAY_THEN_RET, "ONAY")
        due = r.clock.now() + timedelta(seconds=30)
        goes = (await r.send(to=ONAY, send_at=due.isoformat())).json()["job_id"]
        waits = (await r.send(to=ONAY_THEN_RET, send_at=due.isoformat())).json()["job_id"]

        await r.consent(ONAY_THEN_RET, "RET")  # while the message waits
        await r.work(until=due + timedelta(seconds=1))

        record = await r.record(waits)
        assert (record["status"], record["error"]["code"]) == ("failed", "IYS_CONSENT_MISSING")
        assert record["attempts"] == []
        assert (await r.record(goes))["status"] == "sent"
        assert r.netgsm_numbers() == [ONAY]
        assert await r.quota_used() == 1  # the refused one gave its unit back


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_fallback_hop_asks_the_gate_again(backend: str, tmp_path: Path) -> None:
    async with rig(backend, tmp_path) as r:
        await r.consent(ONAY, "ONAY")
        await r.consent(ONAY_THEN_RET, "ONAY")
        jobs = {
            to: (await r.send(to=to, fallback=["sms_c"])).json()["job_id"]
            for to in (ONAY, ONAY_THEN_RET)
        }
        assert r.netgsm_numbers() == [ONAY, ONAY_THEN_RET]
        await r.consent(ONAY_THEN_RET, "RET")  # after NetGSM took it, before the fallback
        for to, job_id in jobs.items():
            jobid = (await r.record(job_id))["attempts"][0]["provider_message_id"].split(":")[0]
            r.netgsm.set_status(jobid, to, NETGSM_REJECTED)

        await r.work(until=r.clock.now() + timedelta(minutes=3))

        refused = await r.record(jobs[ONAY_THEN_RET])
        assert (refused["status"], refused["error"]["code"]) == ("failed", "IYS_CONSENT_MISSING")
        assert [a["provider"] for a in refused["attempts"]] == ["sms_a"]  # no Verimor attempt
        moved = await r.record(jobs[ONAY])
        assert [a["provider"] for a in moved["attempts"]] == ["sms_a", "sms_c"]
        (campaign,) = r.verimor.sends()
        assert [m["dest"] for m in campaign.json["messages"]] == [ONAY[1:]]
